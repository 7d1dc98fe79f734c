import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { type ScanProgress, scanTable } from '@rocketmq-lambda/runtime/aws/index.ts';
import type { LegacyLifetimes } from '@rocketmq-lambda/runtime/config/index.ts';
import { awardsInForceByOrder, type NativeAward, type StoredEntry } from './cross-system-audit.ts';
import { checkLegacyRow, type LegacyAward } from './legacy-award.ts';
import { type LegacySource, LegacySourceError } from './legacy-source.ts';

/**
 * Before a move, a shadow stage consumes a copy of live traffic in a consumer group of its own
 * (RocketMQ clustering gives every group every message), with its own tables, while the legacy
 * consumers keep awarding. This compares the two per order: the shadow must award each order the
 * legacy consumer awarded, once, to the same user with the same points, and nothing else.
 *
 * Only orders first awarded (on either side) inside the window are judged: from the shadow's start
 * (`since`) to `until`, a settling time before now, so that an order the legacy consumer awarded a
 * second ago and the shadow is still consuming is not a disagreement. Awards after `until` are
 * still read, so that an order awarded just inside the window on one side and just after it on the
 * other agrees; and legacy awards from before `since` are read too, as far back as the legacy
 * consumer retries a message (`legacyReadSince`), so that an order it awarded just before the
 * shadow started, whose copy the shadow awarded just after, is first awarded before the window and
 * not judged.
 */
export const Disagreement = {
  /** The legacy consumer awarded the order; the shadow did not (yet: failed, retried, dead-lettered). */
  NOT_AWARDED_HERE: 'not-awarded-here',
  /** The shadow awarded an order the legacy consumer did not: a copy the legacy suppressed, or refused. */
  NOT_AWARDED_BY_LEGACY: 'not-awarded-by-legacy',
  /** More than one award in force here for the order: a duplicate the legacy suppressed and the shadow did not. */
  AWARDED_TWICE_HERE: 'awarded-twice-here',
  OTHER_USER: 'other-user',
  OTHER_POINTS: 'other-points',
} as const;
export type Disagreement = (typeof Disagreement)[keyof typeof Disagreement];

export interface OrderDisagreement {
  readonly orderNo: string;
  readonly kind: Disagreement;
  readonly legacy?: {
    readonly ref: string;
    readonly userId?: string;
    readonly points?: number;
    readonly awardedAt?: string;
  };
  readonly here: readonly NativeAward[];
}

export interface ShadowComparison {
  readonly source: string;
  readonly since: string;
  readonly until: string;
  /** Legacy awards of orders judged (first awarded inside the window). */
  readonly legacyAwards: number;
  readonly legacyInvalid: number;
  /** Orders awarded here, judged. */
  readonly ordersHere: number;
  readonly agreeing: number;
  readonly disagreements: readonly OrderDisagreement[];
}

/** Where the legacy store is read from: the shadow's start, less the time the legacy consumer retries a message. */
export function legacyReadSince(since: Date, legacy: LegacyLifetimes): Date {
  return new Date(since.getTime() - legacy.retryWindowSeconds * 1000);
}

export interface ShadowComparisonOptions {
  readonly dynamoDb: DynamoDBDocumentClient;
  /** The shadow stage's ledger. */
  readonly ledgerTable: string;
  /** Opened with `legacyReadSince(since, …)`: the window's rows, after, and the legacy retry window before. */
  readonly source: LegacySource;
  readonly since: Date;
  readonly until: Date;
  readonly segments?: number;
  readonly onProgress?: (progress: ScanProgress) => void;
}

/**
 * Reads the shadow's ledger, then streams the legacy awards since the shadow's start against it.
 * Memory holds the shadow's awards and the order numbers the legacy store awarded in the window.
 */
export async function compareWithLegacy(options: ShadowComparisonOptions): Promise<ShadowComparison> {
  const { source, since, until } = options;
  if (!source.carriesContent)
    // A Redis key carries no user, points or time: nothing to compare, nor a window to compare in.
    throw new LegacySourceError(
      `${source.description} keeps keys only (no user, points or time): compare against the table or an export that has them`,
    );
  const entries = await scanTable<StoredEntry>(options.dynamoDb, options.ledgerTable, {
    segments: options.segments,
    onProgress: options.onProgress,
  });
  const here = awardsInForceByOrder(entries.filter((e) => !e.createdAt || new Date(e.createdAt) >= since));
  const inWindow = (times: ReadonlyArray<Date | undefined>) => {
    const first = Math.min(...times.map((t) => t?.getTime() ?? since.getTime()));
    return first >= since.getTime() && first < until.getTime();
  };
  const disagreements: OrderDisagreement[] = [];
  const seen = new Set<string>();
  let legacyAwards = 0;
  let legacyInvalid = 0;
  let agreeing = 0;
  for await (const page of source.pages(undefined)) {
    for (const row of page.rows) {
      const check = checkLegacyRow(row);
      if (!check.ok) {
        legacyInvalid++;
        continue;
      }
      const award = check.award;
      const mine = here.get(award.orderNo) ?? [];
      const firstSeen = !seen.has(award.orderNo);
      seen.add(award.orderNo);
      if (!firstSeen || !inWindow([award.awardedAt, ...mine.map(createdAtOf)])) continue;
      legacyAwards++;
      const kind = judge(award, mine);
      if (kind) disagreements.push({ orderNo: award.orderNo, kind, legacy: legacyOf(award), here: mine.map(nativeOf) });
      else agreeing++;
    }
  }
  let ordersHere = legacyAwards - disagreements.filter((d) => d.kind === Disagreement.NOT_AWARDED_HERE).length;
  for (const [orderNo, mine] of here) {
    if (seen.has(orderNo) || !inWindow(mine.map(createdAtOf))) continue;
    ordersHere++;
    disagreements.push({ orderNo, kind: Disagreement.NOT_AWARDED_BY_LEGACY, here: mine.map(nativeOf) });
  }
  disagreements.sort((a, b) => (a.orderNo < b.orderNo ? -1 : a.orderNo > b.orderNo ? 1 : 0));
  return {
    source: source.description,
    since: since.toISOString(),
    until: until.toISOString(),
    legacyAwards,
    legacyInvalid,
    ordersHere,
    agreeing,
    disagreements,
  };
}

function judge(legacy: LegacyAward, here: readonly StoredEntry[]): Disagreement | undefined {
  if (here.length === 0) return Disagreement.NOT_AWARDED_HERE;
  if (here.length > 1) return Disagreement.AWARDED_TWICE_HERE;
  if (here[0]!.userId !== legacy.userId) return Disagreement.OTHER_USER;
  if (Number(here[0]!.points ?? 0) !== legacy.points) return Disagreement.OTHER_POINTS;
  return undefined;
}

const createdAtOf = (e: StoredEntry) => (e.createdAt ? new Date(e.createdAt) : undefined);

const nativeOf = (e: StoredEntry): NativeAward => ({
  userId: e.userId,
  entryId: e.entryId,
  points: Number(e.points ?? 0),
  createdAt: e.createdAt,
});

const legacyOf = (a: LegacyAward) => ({
  ref: a.ref,
  ...(a.userId === undefined ? {} : { userId: a.userId, points: a.points }),
  ...(a.awardedAt ? { awardedAt: a.awardedAt.toISOString() } : {}),
});
