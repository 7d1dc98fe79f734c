import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { TABLES } from '@rocketmq-lambda/runtime/config/index.ts';

/** Tables ListTables returns at most per page; a stage holds four, so ten pages cover any test account. */
const MAX_PAGES = 10;

/**
 * The deployment prefixes whose records table the account (or emulator) holds, sorted: every
 * stage has one, named `<prefix>-idempotency`. Said when a command's prefix names nothing, so the
 * operator sees which prefixes there are instead of a bare ResourceNotFoundException.
 */
export async function deploymentPrefixesAt(dynamoDb: Pick<DynamoDBDocumentClient, 'send'>): Promise<string[]> {
  const suffix = `-${TABLES.idempotency.suffix}`;
  const prefixes: string[] = [];
  let start: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const { TableNames = [], LastEvaluatedTableName } = await dynamoDb.send(
      new ListTablesCommand({ ExclusiveStartTableName: start }),
    );
    for (const name of TableNames) if (name.endsWith(suffix)) prefixes.push(name.slice(0, -suffix.length));
    start = LastEvaluatedTableName;
    if (!start) break;
  }
  return prefixes.sort();
}
