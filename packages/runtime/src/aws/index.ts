/**
 * AWS as production uses it: client construction, outside-service credentials, the envelope signing key
 * in Secrets Manager, SQS-safe text, table scans.
 * Other folders import this package through this file only (packages/tools/test/unit/house-rules/wing-boundaries.test.ts).
 */
export {
  type AwsConfig,
  configFromEnv,
  createCloudWatchLogs,
  createDynamoDb,
  createEventBridge,
  createSecretsManager,
  createSqs,
  createSts,
  emulatorConfig,
} from './clients.ts';
export { EVENTBRIDGE_MAX_ENTRY_BYTES, eventBridgeEntryBytes } from './eventbridge-entry.ts';
export {
  type ServiceCredentials,
  ServiceCredentialsError,
  SigV4Signer,
  serviceCredentials,
} from './service-credentials.ts';
export {
  REVOKED_STAGE_PREFIX,
  revokedStageOf,
  revokedVersionIds,
  SecretSigningKeys,
  SIGNING_KEYS_TTL_MS,
} from './signing-key-secret.ts';
export { sqsText } from './sqs-text.ts';
export { type ScanProgress, scanTable } from './table-scan.ts';
