import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { type LedgerEntry, LedgerEntryKind, type PointAccount } from '@rocketmq-lambda/consumers/points/index.ts';
import { type ScanProgress, scanTable } from '@rocketmq-lambda/runtime/aws/index.ts';
import type { PointTableNames } from './operations-target.ts';

/** A user whose account balance is not the sum of their ledger (awards plus negative reversals). */
export interface BalanceMismatch {
  userId: string;
  /** `null`: the user has ledger entries but no account item. */
  balance: number | null;
  ledgerSum: number;
  /** balance − ledger sum: positive means the account holds points the ledger does not explain. */
  difference: number;
  ledgerEntries: number;
}

/** One award of a (user, order), and the reversal that compensates it, if any. */
export interface AwardOfOrder {
  entryId: string;
  points: number;
  createdAt: string | undefined;
  reversedBy: string | undefined;
}

/**
 * A (user, order) awarded more than once and not yet fully compensated. `kept` is the
 * award that stays; `excess` are the ones a reversal run compensates.
 */
export interface DoubleAward {
  userId: string;
  orderNo: string;
  awards: AwardOfOrder[];
  kept: AwardOfOrder;
  excess: AwardOfOrder[];
  excessPoints: number;
  /** The awards do not all carry the same points: worth a look before reversing. */
  pointsDiffer: boolean;
}

/** One award of an order, with the user who holds it. */
export interface UserAward extends AwardOfOrder {
  userId: string;
}

/**
 * An order whose awards in force are held by more than one user: the incident's failure
 * class (a conflicting copy applied after its dedup record was gone). Which user is right
 * is a business decision, so the audit only reports it; `ops reverse --rightful` settles it.
 */
export interface CrossUserAward {
  orderNo: string;
  /** In-force awards, earliest first. */
  awards: UserAward[];
  users: string[];
  points: number;
}

export interface AuditReport {
  ledgerEntries: number;
  accounts: number;
  users: number;
  balanceMismatches: BalanceMismatch[];
  doubleAwards: DoubleAward[];
  crossUserAwards: CrossUserAward[];
}

export const isClean = (report: AuditReport) =>
  report.balanceMismatches.length === 0 && report.doubleAwards.length === 0 && report.crossUserAwards.length === 0;

type StoredEntry = Partial<LedgerEntry> & { userId: string; entryId: string };
type StoredAccount = Partial<PointAccount> & { userId: string };

/**
 * The audit itself, on rows already read: pure, so every rule below is tested on
 * exactly the rows a scan returns.
 */
export function auditLedger(entries: readonly StoredEntry[], accounts: readonly StoredAccount[]): AuditReport {
  return {
    ledgerEntries: entries.length,
    accounts: accounts.length,
    users: new Set([...entries.map((e) => e.userId), ...accounts.map((a) => a.userId)]).size,
    balanceMismatches: balanceMismatches(entries, accounts),
    doubleAwards: doubleAwards(entries),
    crossUserAwards: crossUserAwards(entries),
  };
}

function pointsOf(entry: Partial<LedgerEntry>): number {
  const points = Number(entry.points ?? 0);
  return Number.isFinite(points) ? points : 0;
}

function balanceMismatches(entries: readonly StoredEntry[], accounts: readonly StoredAccount[]): BalanceMismatch[] {
  const sums = new Map<string, { sum: number; count: number }>();
  for (const entry of entries) {
    const s = sums.get(entry.userId) ?? { sum: 0, count: 0 };
    s.sum += pointsOf(entry);
    s.count++;
    sums.set(entry.userId, s);
  }
  const balances = new Map(accounts.map((a) => [a.userId, Number(a.balance ?? 0)]));
  const users = [...new Set([...sums.keys(), ...balances.keys()])].sort();
  const out: BalanceMismatch[] = [];
  for (const userId of users) {
    const ledger = sums.get(userId) ?? { sum: 0, count: 0 };
    const balance = balances.has(userId) ? balances.get(userId)! : null;
    if ((balance ?? 0) === ledger.sum) continue;
    out.push({
      userId,
      balance,
      ledgerSum: ledger.sum,
      difference: (balance ?? 0) - ledger.sum,
      ledgerEntries: ledger.count,
    });
  }
  return out;
}

/**
 * The order an award belongs to: its `orderNo` attribute, or for rows written without one
 * the order in a consumer-style `AWARD#<orderNo>` key.
 */
function orderOf(entry: StoredEntry): string | undefined {
  if (typeof entry.orderNo === 'string' && entry.orderNo !== '') return entry.orderNo;
  return entry.entryId.startsWith('AWARD#') ? entry.entryId.slice('AWARD#'.length) : undefined;
}

/** Earliest first: by `createdAt`, rows without one after those with one, then by entry id. */
function earliestFirst(a: AwardOfOrder, b: AwardOfOrder): number {
  if (a.createdAt !== b.createdAt) {
    if (a.createdAt === undefined) return 1;
    if (b.createdAt === undefined) return -1;
    return a.createdAt < b.createdAt ? -1 : 1;
  }
  return a.entryId < b.entryId ? -1 : a.entryId > b.entryId ? 1 : 0;
}

/** Every award with its order and the reversal that compensates it, if any. */
function awardsOf(entries: readonly StoredEntry[]): Array<UserAward & { orderNo: string }> {
  // A reversal compensates exactly the entry it names, in the same user's partition.
  const reversalOf = new Map<string, string>();
  for (const e of entries) {
    if (e.kind === LedgerEntryKind.REVERSAL && typeof e.reverses === 'string')
      reversalOf.set(`${e.userId}\u0000${e.reverses}`, e.entryId);
  }
  return entries.flatMap((e) => {
    const orderNo = e.kind === LedgerEntryKind.AWARD ? orderOf(e) : undefined;
    if (orderNo === undefined) return [];
    return [
      {
        userId: e.userId,
        orderNo,
        entryId: e.entryId,
        points: pointsOf(e),
        createdAt: e.createdAt,
        reversedBy: reversalOf.get(`${e.userId}\u0000${e.entryId}`),
      },
    ];
  });
}

function crossUserAwards(entries: readonly StoredEntry[]): CrossUserAward[] {
  const byOrder = new Map<string, UserAward[]>();
  for (const { orderNo, ...award } of awardsOf(entries)) {
    if (award.reversedBy === undefined) byOrder.set(orderNo, [...(byOrder.get(orderNo) ?? []), award]);
  }
  const out: CrossUserAward[] = [];
  for (const [orderNo, awards] of byOrder) {
    const users = [...new Set(awards.map((a) => a.userId))].sort();
    if (users.length < 2) continue;
    out.push({ orderNo, awards: awards.sort(earliestFirst), users, points: awards.reduce((n, a) => n + a.points, 0) });
  }
  return out.sort((a, b) => (a.orderNo < b.orderNo ? -1 : a.orderNo > b.orderNo ? 1 : 0));
}

function doubleAwards(entries: readonly StoredEntry[]): DoubleAward[] {
  const groups = new Map<string, { userId: string; orderNo: string; awards: AwardOfOrder[] }>();
  for (const { userId, orderNo, ...award } of awardsOf(entries)) {
    const key = `${userId}\u0000${orderNo}`;
    const group = groups.get(key) ?? { userId, orderNo, awards: [] };
    group.awards.push(award);
    groups.set(key, group);
  }
  const out: DoubleAward[] = [];
  for (const { userId, orderNo, awards } of groups.values()) {
    // Only awards still in force count: a group of 2 awards and 1 reversal is an order
    // awarded once. Keeping the earliest award in force never compensates below one award.
    const inForce = awards.filter((a) => a.reversedBy === undefined).sort(earliestFirst);
    if (inForce.length < 2) continue;
    const [kept, ...excess] = inForce as [AwardOfOrder, ...AwardOfOrder[]];
    out.push({
      userId,
      orderNo,
      awards: [...awards].sort(earliestFirst),
      kept,
      excess,
      excessPoints: excess.reduce((sum, a) => sum + a.points, 0),
      pointsDiffer: new Set(awards.map((a) => a.points)).size > 1,
    });
  }
  return out.sort((a, b) => (a.userId === b.userId ? (a.orderNo < b.orderNo ? -1 : 1) : a.userId < b.userId ? -1 : 1));
}

export interface LedgerAuditOptions {
  dynamoDb: DynamoDBDocumentClient;
  tables: PointTableNames;
  segments?: number;
  onProgress?: (progress: ScanProgress) => void;
  onTableDone?: (progress: ScanProgress) => void;
}

/** Scans the ledger and the accounts (one after the other, each in parallel segments) and audits them. */
export async function runLedgerAudit(options: LedgerAuditOptions): Promise<AuditReport> {
  const read = async <T>(table: string) => {
    let last: ScanProgress | undefined;
    const items = await scanTable<T>(options.dynamoDb, table, {
      segments: options.segments,
      onProgress: (p) => {
        last = p;
        options.onProgress?.(p);
      },
    });
    if (last) options.onTableDone?.({ ...last, scanned: items.length });
    return items;
  };
  // Ledger first, accounts second: a consumer committing in between raises both the sum
  // and the balance, so it can show as a transient mismatch but never hide one. Re-run to confirm.
  const entries = await read<StoredEntry>(options.tables.ledger);
  const accounts = await read<StoredAccount>(options.tables.accounts);
  return auditLedger(entries, accounts);
}
