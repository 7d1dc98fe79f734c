import { type AwsConfig, type ServiceCredentials, serviceCredentials } from '@rocketmq-lambda/runtime/aws/index.ts';
import {
  endpointRefusal,
  OUTSIDE_SERVICES,
  type OutsideServiceName,
  type ServiceEndpoint,
} from '@rocketmq-lambda/runtime/config/index.ts';
import { InvalidConsumerConfigError } from '@rocketmq-lambda/runtime/consumer/index.ts';
import type { AwsCredentialIdentityProvider } from '@smithy/types';

/** What an outside service's client is built from: a consumer's deployment (`ConsumerWiring` has all of it). */
export interface OutsideServiceConfig {
  readonly aws: AwsConfig;
  /** The outside services by name; a bare URL is one called without credentials (a local stand-in). */
  readonly services?: Partial<Record<OutsideServiceName, string | ServiceEndpoint>>;
  readonly awsCredentials?: AwsCredentialIdentityProvider;
  /** Time a call leaves the invocation for completing its record (default 2 s). */
  readonly outsideCallReserveMs?: number;
}

/**
 * A service's endpoint as configured, refused at cold start where the synth refuses it too (plain
 * http, no credentials off loopback).
 */
export function serviceEndpointOf(
  name: OutsideServiceName,
  config: OutsideServiceConfig,
): { baseUrl: string; credentials: ServiceCredentials | undefined; reserveMs: number | undefined } {
  const value = config.services?.[name];
  const endpoint: ServiceEndpoint = typeof value === 'object' ? value : { url: value ?? '', auth: { kind: 'none' } };
  const refusal = endpointRefusal(endpoint);
  if (refusal) throw new InvalidConsumerConfigError(`${OUTSIDE_SERVICES[name].env} ${refusal}`);
  return {
    baseUrl: endpoint.url,
    credentials: serviceCredentials(endpoint.auth, config),
    reserveMs: config.outsideCallReserveMs,
  };
}
