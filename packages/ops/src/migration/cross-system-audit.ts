import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { type LedgerEntry, LedgerEntryKind } from '@rocketmq-lambda/consumers/points/index.ts';
import { type ScanProgress, scanTable } from '@rocketmq-lambda/runtime/aws/index.ts';
import { RecordOrigin } from '@rocketmq-lambda/runtime/consumer/internal.ts';
import type { CrossUserAward, DoubleAward } from '../operations/index.ts';
import { checkLegacyRow } from './legacy-award.ts';
import type { LegacySource } from './legacy-source.ts';

/**
 * The incident's recovery script ("scan the whole table, group by (user_id, order_no)") made a
 * check that covers a move: every award the legacy store holds against every award in force in
 * this project's ledger, per order. An order with more than one award in force across the two
 * systems is a finding.
 *
 * What counts as one award: a legacy row; a ledger entry `AWARD#<orderNo>` not reversed. A ledger
 * entry the import moved there (`--ledger moved`: origin `legacy-import`) is the same award as
 * its legacy row, not a second one: the finding names that entry as the legacy award, so a
 * reversal of it reverses the entry itself, and the ledger's own audit and this one then agree
 * that it is no longer in force (a `REVERSAL#LEGACY#<row>` beside a moved entry left in force
 * would leave two awards in the ledger, and a second reversal would debit the user again). A
 * legacy award that was not moved and that this project compensated (a `REVERSAL#LEGACY#<row>`
 * entry: the project never writes the legacy store) is no longer in force either. The project
 * only reads the legacy store.
 */
export const legacyAwardRef = (ref: string) => `LEGACY#${ref}`;

export interface NativeAward {
  readonly userId: string;
  readonly entryId: string;
  readonly points: number;
  readonly createdAt: string | undefined;
}

/** One order awarded in both systems, or to another user here than there. */
export interface CrossSystemAward {
  readonly orderNo: string;
  /**
   * The legacy award: `entryId` is its moved ledger entry (`AWARD#<orderNo>`) when the import moved
   * it, else `LEGACY#<row>`; no user or points for a store without content (Redis).
   */
  readonly legacy: {
    readonly ref: string;
    readonly entryId: string;
    readonly userId?: string;
    readonly points?: number;
    readonly awardedAt?: string;
  };
  /** Awards in force in this project's ledger, not moved from that legacy row. */
  readonly native: readonly NativeAward[];
  readonly users: readonly string[];
  /** Every award is the legacy user's (or the legacy store does not say whose): the legacy one stays, the others go. */
  readonly sameUser: boolean;
  readonly excessPoints: number;
}

export interface CrossSystemReport {
  readonly source: string;
  readonly legacyRows: number;
  readonly legacyInvalid: number;
  /** Legacy awards moved into the ledger by the import (one award, two places). */
  readonly moved: number;
  /** Legacy awards this project compensated with a reversal entry. */
  readonly compensated: number;
  readonly inBothSystems: readonly CrossSystemAward[];
}

export interface CrossSystemAuditOptions {
  readonly dynamoDb: DynamoDBDocumentClient;
  readonly ledgerTable: string;
  readonly source: LegacySource;
  readonly segments?: number;
  readonly onProgress?: (progress: ScanProgress) => void;
}

export type StoredEntry = Partial<LedgerEntry> & { userId: string; entryId: string };

/** The ledger's awards not reversed, per order. */
export function awardsInForceByOrder(entries: readonly StoredEntry[]): Map<string, StoredEntry[]> {
  const reversed = new Set(
    entries
      .filter((e) => e.kind === LedgerEntryKind.REVERSAL && e.reverses)
      .map((e) => `${e.userId}\u0000${e.reverses}`),
  );
  const awardsByOrder = new Map<string, StoredEntry[]>();
  for (const e of entries) {
    if (e.kind !== LedgerEntryKind.AWARD || !e.orderNo || reversed.has(`${e.userId}\u0000${e.entryId}`)) continue;
    awardsByOrder.set(e.orderNo, [...(awardsByOrder.get(e.orderNo) ?? []), e]);
  }
  return awardsByOrder;
}

/** Reads the ledger, then streams the legacy store against it; memory holds the ledger's awards, not the legacy rows. */
export async function auditAcrossSystems(options: CrossSystemAuditOptions): Promise<CrossSystemReport> {
  const entries = await scanTable<StoredEntry>(options.dynamoDb, options.ledgerTable, {
    segments: options.segments,
    onProgress: options.onProgress,
  });
  const compensatedLegacy = new Set(
    entries
      .filter((e) => e.kind === LedgerEntryKind.REVERSAL && e.reverses?.startsWith('LEGACY#'))
      .map((e) => e.reverses!),
  );
  const awardsByOrder = awardsInForceByOrder(entries);
  const inForce = new Set([...awardsByOrder.values()].flat());
  const movedByOrder = new Map<string, StoredEntry[]>();
  for (const e of entries)
    if (e.kind === LedgerEntryKind.AWARD && e.origin === RecordOrigin.LEGACY_IMPORT && e.orderNo)
      movedByOrder.set(e.orderNo, [...(movedByOrder.get(e.orderNo) ?? []), e]);
  const found: CrossSystemAward[] = [];
  let legacyRows = 0;
  let legacyInvalid = 0;
  let moved = 0;
  let compensated = 0;
  for await (const page of options.source.pages(undefined)) {
    for (const row of page.rows) {
      legacyRows++;
      const check = checkLegacyRow(row);
      if (!check.ok) {
        legacyInvalid++;
        continue;
      }
      const award = check.award;
      // Moved by the import (whichever export it was read from): the legacy award itself, in this ledger.
      const mirror = movedByOrder
        .get(award.orderNo)
        ?.find((e) => award.userId === undefined || e.userId === award.userId);
      const entryId = mirror?.entryId ?? legacyAwardRef(award.ref);
      if (mirror ? !inForce.has(mirror) : compensatedLegacy.has(entryId)) {
        compensated++;
        continue;
      }
      if (mirror) moved++;
      const native = (awardsByOrder.get(award.orderNo) ?? []).filter((e) => e !== mirror);
      if (native.length === 0) continue;
      const users = [...new Set([award.userId, ...native.map((e) => e.userId)].filter((u): u is string => !!u))].sort();
      found.push({
        orderNo: award.orderNo,
        legacy: {
          ref: award.ref,
          entryId,
          ...(award.userId === undefined ? {} : { userId: award.userId, points: award.points }),
          ...(award.awardedAt ? { awardedAt: award.awardedAt.toISOString() } : {}),
        },
        native: native.map((e) => ({
          userId: e.userId,
          entryId: e.entryId,
          points: Number(e.points ?? 0),
          createdAt: e.createdAt,
        })),
        users,
        sameUser: award.userId === undefined ? new Set(native.map((e) => e.userId)).size === 1 : users.length === 1,
        excessPoints: native.reduce((n, e) => n + Number(e.points ?? 0), 0),
      });
    }
  }
  found.sort((a, b) => (a.orderNo < b.orderNo ? -1 : a.orderNo > b.orderNo ? 1 : 0));
  return { source: options.source.description, legacyRows, legacyInvalid, moved, compensated, inBothSystems: found };
}

/**
 * The findings in the shapes `ops reverse` plans from: an order awarded in both systems to one
 * user is a double award whose kept award is the legacy one (`LEGACY#<row>`, earliest: the legacy
 * consumer awarded it first) and whose excess are the awards here; an order awarded to different
 * users is a cross-user award, for the operator to name the rightful user.
 */
export function asLedgerFindings(report: CrossSystemReport): {
  doubleAwards: DoubleAward[];
  crossUserAwards: CrossUserAward[];
} {
  const doubleAwards: DoubleAward[] = [];
  const crossUserAwards: CrossUserAward[] = [];
  for (const c of report.inBothSystems) {
    const legacy = {
      userId: c.legacy.userId ?? c.native[0]!.userId,
      entryId: c.legacy.entryId,
      points: c.legacy.points ?? 0,
      createdAt: c.legacy.awardedAt,
      reversedBy: undefined,
    };
    const native = c.native.map((n) => ({ ...n, reversedBy: undefined }));
    if (c.sameUser) {
      const { userId: _user, ...kept } = legacy;
      doubleAwards.push({
        userId: legacy.userId,
        orderNo: c.orderNo,
        awards: [kept, ...native],
        kept,
        excess: native,
        excessPoints: c.excessPoints,
        pointsDiffer: c.legacy.points !== undefined && native.some((n) => n.points !== c.legacy.points),
      });
    } else {
      crossUserAwards.push({
        orderNo: c.orderNo,
        awards: [legacy, ...native],
        users: [...c.users],
        points: (c.legacy.points ?? 0) + c.excessPoints,
      });
    }
  }
  return { doubleAwards, crossUserAwards };
}
