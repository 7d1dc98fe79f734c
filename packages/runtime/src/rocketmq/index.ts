/**
 * RocketMQ's side of every consumer and of the bridge: the envelope (its parser, writer and signature,
 * what a group admits), tag expressions, message groups and the retry schedule. Knows nothing of AWS.
 * Other folders import this package through this file only (packages/tools/test/unit/house-rules/wing-boundaries.test.ts).
 */

export {
  BRIDGE_NOTICE_KIND,
  DEAD_LETTER_KIND_ATTRIBUTE,
  type DeadLetterNotice,
  NOTICE_REASON_ATTRIBUTE,
  type NoticeBodyLocation,
  NoticeReason,
  noticeBody,
  readNotice,
  refetchCommands,
} from './dead-letter-notice.ts';
export {
  envelopeJsonSchema,
  excerpt,
  InvalidEnvelopeError,
  parseEnvelope,
  ROCKETMQ_EVENT_TYPE,
  ROCKETMQ5_TRACE_CONTEXT_PROPERTY,
  type RocketMQMessage,
} from './envelope.ts';
export { storeTimeRefusal, topicRefusal } from './envelope-admission.ts';
export {
  assertSigningKey,
  generateSigningKey,
  InvalidSigningKeyError,
  type ReloadCause,
  resignBody,
  SIGNING_KEY_FIELD,
  type SigningKeyRing,
  StaticSigningKeys,
  signatureRefusal,
  signatureRefusals,
  signEnvelope,
  signingKeyId,
  signingKeyIndex,
} from './envelope-signature.ts';
export {
  buildEnvelope,
  type Envelope,
  type EnvelopeFields,
  MsgIdGenerator,
  serializeEnvelope,
  writeEnvelope,
} from './envelope-writer.ts';
export {
  DEFAULT_MESSAGE_GROUP_SOURCE,
  type MessageGroupFacts,
  type MessageGroupSource,
  messageGroupFactsOf,
  messageGroupOf,
} from './message-group.ts';
export { InvalidRetryScheduleError, RetrySchedule, ROCKETMQ_RETRY_DELAYS_SECONDS } from './retry-schedule.ts';
export { TagExpression } from './tag-expression.ts';
