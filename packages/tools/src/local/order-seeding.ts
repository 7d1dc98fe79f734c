import { BatchGetCommand, BatchWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/**
 * The order service's part: it creates each order (WAIT_PAY) before it is paid. It is not
 * part of the local run, so its rows are written here, or the status consumer would wait
 * for them forever. A group acting on orders further on (a refund needs a FINISHED one)
 * seeds them in that status.
 *
 * Only orders the table does not hold yet are written, as the order service creates an order
 * once: in a stage kept from an earlier run, an order that run moved on (PAID, FINISHED) stays
 * where it is, and a copy replayed now meets it there. Returns how many orders were written.
 */
export async function seedOrders(
  dynamoDb: DynamoDBDocumentClient,
  table: string,
  orderNos: readonly string[],
  status = 'WAIT_PAY',
): Promise<number> {
  const createdAt = new Date().toISOString();
  let written = 0;
  // BatchGetItem reads at most 100 keys, BatchWriteItem writes at most 25 items.
  for (let i = 0; i < orderNos.length; i += 100) {
    const chunk = orderNos.slice(i, i + 100);
    const existing = await existingOrders(dynamoDb, table, chunk);
    const missing = chunk.filter((orderNo) => !existing.has(orderNo));
    for (let j = 0; j < missing.length; j += 25) {
      let items: Record<string, unknown[]> | undefined = {
        [table]: missing.slice(j, j + 25).map((orderNo) => ({ PutRequest: { Item: { orderNo, status, createdAt } } })),
      };
      while (items && Object.keys(items).length > 0) {
        const { UnprocessedItems } = await dynamoDb.send(new BatchWriteCommand({ RequestItems: items as never }));
        items = UnprocessedItems as typeof items;
      }
    }
    written += missing.length;
  }
  return written;
}

async function existingOrders(
  dynamoDb: DynamoDBDocumentClient,
  table: string,
  orderNos: readonly string[],
): Promise<Set<string>> {
  const found = new Set<string>();
  let keys: Array<Record<string, unknown>> = [...new Set(orderNos)].map((orderNo) => ({ orderNo }));
  while (keys.length > 0) {
    const { Responses = {}, UnprocessedKeys = {} } = await dynamoDb.send(
      new BatchGetCommand({ RequestItems: { [table]: { Keys: keys, ProjectionExpression: 'orderNo' } } }),
    );
    for (const item of Responses[table] ?? []) found.add(String(item.orderNo));
    keys = UnprocessedKeys[table]?.Keys ?? [];
  }
  return found;
}
