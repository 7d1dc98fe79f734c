import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { asLedgerFindings, auditAcrossSystems, type CrossSystemReport, openLegacySource } from '../migration/index.ts';
import type { AuditReport, PointTableNames } from '../operations/index.ts';
import { type MigrateImportValues, sourceSpecOf } from './migrate-import.ts';

/**
 * `ops audit --legacy-source <store>` and `ops reverse --legacy-source <store>`: the ledger audit,
 * plus every order awarded in both systems (packages/ops/src/migration/cross-system-audit.ts), merged into the
 * findings `reverse` plans from. An order that is both a cross-user award here and one of the
 * legacy store's is reported once, with the legacy award among its awards.
 */
export async function withLegacyAudit(
  report: AuditReport,
  v: MigrateImportValues & { 'legacy-source'?: string },
  ctx: { dynamoDb: DynamoDBDocumentClient; tables: PointTableNames; segments: number },
): Promise<{ report: AuditReport; crossSystem?: CrossSystemReport }> {
  if (!v['legacy-source']) return { report };
  const source = await openLegacySource(sourceSpecOf({ ...v, source: v['legacy-source'], since: undefined }));
  try {
    const crossSystem = await auditAcrossSystems({
      dynamoDb: ctx.dynamoDb,
      ledgerTable: ctx.tables.ledger,
      source,
      segments: ctx.segments,
    });
    const found = asLedgerFindings(crossSystem);
    const acrossOrders = new Set(crossSystem.inBothSystems.map((c) => c.orderNo));
    return {
      crossSystem,
      report: {
        ...report,
        doubleAwards: [...report.doubleAwards, ...found.doubleAwards],
        crossUserAwards: [
          ...report.crossUserAwards.filter((o) => !acrossOrders.has(o.orderNo)),
          ...found.crossUserAwards,
        ],
      },
    };
  } finally {
    await source.close();
  }
}
