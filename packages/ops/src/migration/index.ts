/**
 * The move of a consumer group from its legacy consumer: the import of the legacy dedup state (and,
 * with the ledger moved, its awards) from MySQL/MariaDB, Redis or exports, and the audit across both
 * systems. Other folders import this package through this file only (packages/tools/test/unit/house-rules/wing-boundaries.test.ts).
 */
export {
  asLedgerFindings,
  auditAcrossSystems,
  type CrossSystemAuditOptions,
  type CrossSystemAward,
  type CrossSystemReport,
  legacyAwardRef,
  type NativeAward,
} from './cross-system-audit.ts';
export {
  CheckpointError,
  CheckpointFile,
  emptyCounts,
  type ImportCheckpoint,
  type ImportCounts,
  importKeyOf,
  PRIVATE_FILE_MODE,
} from './import-checkpoint.ts';
export {
  checkAgainstPlan,
  checkPlanImport,
  type ImportPlan,
  ImportPlanError,
  type ImportPlanUser,
  PlanTally,
  readImportPlan,
  tallySource,
  writeImportPlan,
} from './import-plan.ts';
export {
  type ImportTarget,
  importedRecord,
  importedRecordExpiry,
  LedgerMode,
  legacyMsgId,
  RowOutcome,
  type RowResult,
  writeLegacyAward,
} from './import-writes.ts';
export { checkLegacyRow, type LegacyAward, type LegacyRow, type RowCheck } from './legacy-award.ts';
export {
  DELTA_MARGIN_MS,
  ImportInterruptedError,
  type ImportProgress,
  type ImportReport,
  type LegacyImportOptions,
  type RejectedRow,
  runLegacyImport,
} from './legacy-import.ts';
export {
  ARTICLE_MAPPING,
  type ColumnMapping,
  columnMappingOf,
  type LegacySource,
  LegacySourceError,
  redactedUrl,
  type SourcePage,
} from './legacy-source.ts';
export {
  type LegacyZone,
  legacyInstant,
  legacyWallClock,
  legacyZone,
  MissingTimeZoneError,
} from './legacy-time.ts';
export { LEGACY_PASSWORD_VARIABLE } from './legacy-transport.ts';
export { renderCrossSystem, renderImport, renderShadowComparison } from './migration-output.ts';
export {
  ARTICLE_KEY_TTL_SECONDS,
  type LegacySourceSpec,
  legacySourceKind,
  openLegacySource,
} from './open-legacy-source.ts';
export {
  compareWithLegacy,
  Disagreement,
  legacyReadSince,
  type OrderDisagreement,
  type ShadowComparison,
  type ShadowComparisonOptions,
} from './shadow-comparison.ts';
