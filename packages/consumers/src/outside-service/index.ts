/**
 * What every lease-mode consumer's outside call shares: the HTTP call with its `Idempotency-Key`, its
 * deadline and credentials, the classification of its answer, and its endpoint as deployed.
 * Other folders import this package through this file only (packages/tools/test/unit/house-rules/wing-boundaries.test.ts).
 */
export {
  ANSWER_EXCERPT_CHARS,
  type CallSubject,
  MAX_ANSWER_BYTES,
  OutsideServiceCall,
  type ServiceCallErrors,
  type ServiceCallOptions,
} from './service-call.ts';
export { OutsideServiceCallError } from './service-call-error.ts';
export { type OutsideServiceConfig, serviceEndpointOf } from './service-endpoint.ts';
