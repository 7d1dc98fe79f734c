import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { LegacyLifetimes } from '@rocketmq-lambda/runtime/config/index.ts';
import {
  compareWithLegacy,
  legacyReadSince,
  legacySourceKind,
  openLegacySource,
  renderShadowComparison,
} from '../migration/index.ts';
import { type OutputFormat, UsageError } from '../operations/index.ts';
import { legacySettingsOf, type MigrateImportValues, sourceSpecOf } from './migrate-import.ts';

/** How long before now an order must have been first awarded to be judged, unless `--settle` says otherwise. */
const DEFAULT_SETTLE_MS = 5 * 60_000;

/**
 * `ops compare --legacy-source <store> --since <shadow start>` on the shadow stage: every order the
 * legacy consumer or the shadow awarded since the shadow started, judged per order
 * (packages/ops/src/migration/shadow-comparison.ts). Exit 0 when every order agrees, 1 with disagreements.
 */
export async function shadowCompare(
  v: MigrateImportValues & { 'legacy-source'?: string },
  ctx: {
    format: OutputFormat;
    dynamoDb: DynamoDBDocumentClient;
    ledgerTable: string;
    segments: number;
    settleMs: number | undefined;
    now: () => Date;
    print: (text: string) => void;
  },
): Promise<number> {
  if (!v['legacy-source'])
    throw new UsageError('compare: name the legacy store: --legacy-source mysql://… or an export');
  if (!v.since) throw new UsageError('compare: --since <time> the shadow stage started consuming');
  if (legacySourceKind(v['legacy-source']) === 'redis')
    throw new UsageError(
      'compare: a Redis key carries no user, points or time; compare against the table the awards are in, or its export',
    );
  const spec = sourceSpecOf({ ...v, source: v['legacy-source'] });
  const until = new Date(ctx.now().getTime() - (ctx.settleMs ?? DEFAULT_SETTLE_MS));
  const since = spec.since!;
  const legacy = new LegacyLifetimes(legacySettingsOf(v));
  const source = await openLegacySource({ ...spec, since: legacyReadSince(since, legacy) });
  try {
    const report = await compareWithLegacy({
      dynamoDb: ctx.dynamoDb,
      ledgerTable: ctx.ledgerTable,
      source,
      since,
      until,
      segments: ctx.segments,
    });
    ctx.print(renderShadowComparison(report, ctx.format));
    return report.disagreements.length === 0 ? 0 : 1;
  } finally {
    await source.close();
  }
}
