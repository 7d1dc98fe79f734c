import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { OUTBOX_TABLE } from '@rocketmq-lambda/runtime/config/index.ts';

/**
 * A publishing group's outbox table on the emulator, as the CDK app makes it (`OUTBOX_TABLE`: key
 * `eventId`, stream NEW_IMAGE), and the plain clients the stream poller reads it with.
 */
export async function createOutboxTable(endpoint: string, tableName: string) {
  const config = { endpoint, region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } };
  const dynamoDb = new DynamoDBClient(config);
  await dynamoDb.send(
    new CreateTableCommand({
      TableName: tableName,
      KeySchema: [{ AttributeName: OUTBOX_TABLE.partitionKey, KeyType: 'HASH' }],
      AttributeDefinitions: [{ AttributeName: OUTBOX_TABLE.partitionKey, AttributeType: 'S' }],
      BillingMode: 'PAY_PER_REQUEST',
      StreamSpecification: { StreamEnabled: true, StreamViewType: OUTBOX_TABLE.streamView },
    }),
  );
  return { dynamoDb, streams: new DynamoDBStreamsClient(config) };
}
