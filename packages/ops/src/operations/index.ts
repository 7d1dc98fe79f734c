/**
 * What the `ops` command does: the ledger audit, the reversal of double awards, dead-letter inspection
 * and redrive, and how their results are shown.
 * Other folders import this package through this file only (packages/tools/test/unit/house-rules/wing-boundaries.test.ts).
 */
export {
  type AuditAppendix,
  redriveWriteSummary,
  renderAudit,
  renderDeadLetter,
  renderDeadLetterList,
  renderRedrive,
  renderReversal,
  reversalWriteSummary,
  type SavedPlan,
} from './command-output.ts';
export { type DeadLetter, findDeadLetter, readDeadLetters, releaseDeadLetters } from './dead-letter-inspection.ts';
export {
  deadLetterSourcesOf,
  matchesFilter,
  type RedriveFilter,
  RedriveInterruptedError,
  redriveDeadLetters,
} from './dead-letter-redrive.ts';
export { deploymentPrefixesAt } from './deployment-prefixes.ts';
export { ReversalInterruptedError, reverseDoubleAwards } from './double-award-reversal.ts';
export { messageOf, NothingToTraceError, OperationsError, UsageError } from './errors.ts';
export { checkTraceSubject, logFilterPattern } from './function-logs.ts';
export {
  type AuditReport,
  auditLedger,
  type CrossUserAward,
  type DoubleAward,
  isClean,
  runLedgerAudit,
} from './ledger-audit.ts';
export {
  awsConfigOf,
  groupQueuesOf,
  idempotencyTableOf,
  type PointTableNames,
  pointTablesOf,
  signingSecretOf,
  type TargetOptions,
} from './operations-target.ts';
export { readOrderEvidence } from './order-evidence.ts';
export { isEmptyTrace, type OrderTrace, orderTraceOf } from './order-trace.ts';
export { renderOrderTraceMermaid, renderOrderTraceText } from './order-trace-output.ts';
export { type OutboxHop, readOutboxHops, renderOutboxHopsText } from './outbox-hop.ts';
export {
  lastStreamRecordAt,
  type OutboxRedriveReport,
  OutboxRefusal,
  type OutboxTarget,
  outboxTargetOf,
  readOutboxItems,
  redriveOutboxItems,
  retouchStaleItems,
} from './outbox-items.ts';
export {
  OUTBOUND_REFUSAL_DETAIL_ATTRIBUTE,
  OUTBOUND_REFUSAL_KIND,
  type OutboundRefusal,
  OutboundRefusalReason,
  type OutboxLetter,
  readStreamBatchFailure,
  type StreamBatchFailure,
} from './outbox-letters.ts';
export { renderOutboxList, renderOutboxRedrive } from './outbox-output.ts';
export { ProgressBar, type ProgressStream } from './progress-bar.ts';
export { type Column, type OutputFormat, renderCsv, renderTable, terminalSafe } from './report-format.ts';
export {
  checkResignPlanTarget,
  letterSha256,
  type PlannedResign,
  proofOf,
  type ResignPlan,
  readResignPlan,
  resignPlanOf,
  writeResignPlan,
} from './resign-plan.ts';
export { checkPlanTarget, readReversalPlan, reversalPlanOf, writeReversalPlan } from './reversal-plan.ts';
export { MessageLookupError, RocketMQMessageLookup } from './rocketmq-message-lookup.ts';
export {
  readSigningKeyVersions,
  resignCandidate,
  resignRewrite,
  revokeSigningKey,
  signingKeyVersions,
} from './signing-key-revocation.ts';
export {
  type ConfirmationChannel,
  confirmWrite,
  queueLocation,
  secretLocation,
  tableLocation,
} from './write-confirmation.ts';
