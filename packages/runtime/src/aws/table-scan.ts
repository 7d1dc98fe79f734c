import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';

export interface ScanProgress {
  table: string;
  scanned: number;
  /** DescribeTable's ItemCount: refreshed by DynamoDB about every six hours, so an estimate. */
  estimatedTotal: number | undefined;
}

export interface TableScanOptions {
  /** Parallel scan segments (DynamoDB: 1 to 1,000,000). */
  segments?: number;
  /** Called after every page, from any segment. */
  onProgress?: (progress: ScanProgress) => void;
}

/**
 * Reads a whole table with a parallel scan: each segment pages with its own
 * `ExclusiveStartKey`, and all pages are strongly consistent so an audit right after a
 * write sees it. The items are collected in memory: a ledger of a few million rows fits,
 * and the audit needs every entry of a user at once anyway.
 */
export async function scanTable<T>(
  client: DynamoDBDocumentClient,
  table: string,
  options: TableScanOptions = {},
): Promise<T[]> {
  const segments = Math.max(1, Math.trunc(options.segments ?? 4));
  const estimatedTotal = options.onProgress ? await itemCountEstimate(client, table) : undefined;
  const items: T[] = [];
  const report = () => options.onProgress?.({ table, scanned: items.length, estimatedTotal });
  report();
  const scanSegment = async (segment: number) => {
    let ExclusiveStartKey: Record<string, unknown> | undefined;
    do {
      const page = await client.send(
        new ScanCommand({
          TableName: table,
          Segment: segment,
          TotalSegments: segments,
          ExclusiveStartKey,
          ConsistentRead: true,
        }),
      );
      items.push(...((page.Items ?? []) as T[]));
      ExclusiveStartKey = page.LastEvaluatedKey;
      report();
    } while (ExclusiveStartKey);
  };
  await Promise.all(Array.from({ length: segments }, (_, segment) => scanSegment(segment)));
  return items;
}

async function itemCountEstimate(client: DynamoDBDocumentClient, table: string): Promise<number | undefined> {
  try {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: table }));
    return Table?.ItemCount;
  } catch {
    return undefined; // a missing dynamodb:DescribeTable permission must not stop an audit
  }
}
