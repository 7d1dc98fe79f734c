/**
 * The points business: the ledger entries and balances an award writes, and the order-paid event.
 * Other folders import this package through this file only (packages/tools/test/unit/house-rules/wing-boundaries.test.ts).
 */
export {
  awardEntry,
  awardEntryId,
  awardEntryPut,
  awardWrites,
  balanceIncrement,
  type LedgerEntry,
  LedgerEntryKind,
  type PointAccount,
  type PointTables,
  reversalEntryId,
} from './ledger.ts';
export { MAX_POINTS_PER_ORDER, type OrderPaid, orderPaidFingerprintFields, parseOrderPaid } from './order-paid.ts';
export {
  awardAnnouncements,
  POINTS_AWARDED_TAG,
  POINTS_TOPIC,
  type PointsAwarded,
  parsePointsAwarded,
  pointsAwardedMessage,
} from './points-awarded.ts';
