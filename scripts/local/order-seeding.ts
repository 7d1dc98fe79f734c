import { BatchWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/**
 * The order service's part: it creates each order (WAIT_PAY) before it is paid. It is not
 * part of the local run, so its rows are written here, or the status consumer would wait
 * for them forever. A group acting on orders further on (a refund needs a FINISHED one)
 * seeds them in that status.
 */
export async function seedOrders(
  dynamoDb: DynamoDBDocumentClient,
  table: string,
  orderNos: readonly string[],
  status = 'WAIT_PAY',
): Promise<number> {
  const createdAt = new Date().toISOString();
  for (let i = 0; i < orderNos.length; i += 25) {
    let items: Record<string, unknown[]> | undefined = {
      [table]: orderNos.slice(i, i + 25).map((orderNo) => ({ PutRequest: { Item: { orderNo, status, createdAt } } })),
    };
    while (items && Object.keys(items).length > 0) {
      const { UnprocessedItems } = await dynamoDb.send(new BatchWriteCommand({ RequestItems: items as never }));
      items = UnprocessedItems as typeof items;
    }
  }
  return orderNos.length;
}
