/**
 * The bridge's door: what the other wings write and read about it. The bridge itself runs as its own
 * process (`main.ts`, the image's entry, configured by `BRIDGE_CONFIG`); what another wing needs of it is
 * its configuration (the CDK app synthesizes it, refusing at synth what the bridge refuses at start; the
 * ops command reads it), the policy it requires of its RocketMQ groups, and its words.
 *
 * Nothing here loads what runs: the configuration is zod schemas and pure checks, the rest types, so the
 * CDK app imports this file at synth without the SDKs and RocketMQ clients of the process. The bridge's
 * parts, for benches and tests that drive them in one process, are behind `internal.ts`.
 */
export type { BridgeStatus } from './bridge.ts';
export {
  type BridgeConfig,
  type BridgeConfigInput,
  type BridgeRoute,
  fifoTargetRefusal,
  InvalidBridgeConfigError,
  loadBridgeConfig,
  type OutboundRouteConfig,
  parseBridgeConfig,
  RocketMQProtocol,
  rocketmqGroupRefusal,
  StartWithoutOffset,
  takeOverSchema,
} from './bridge-config.ts';
export { NEVER_DEAD_LETTER_RETRY_MAX_TIMES } from './group-retry-policy.ts';
export type { AckResult, MessageSource, ReceivedMessage } from './types.ts';
