import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { TABLES, type TableKey, tableName } from '@rocketmq-lambda/runtime/config/index.ts';
import { deploymentPrefixesAt, type TargetOptions } from '../operations/index.ts';

/**
 * What to tell an operator whose command met `ResourceNotFoundException` (which names no table):
 * the tables its options name that do not exist, with the prefix that named them, and the
 * prefixes the account or emulator does hold, so a mistyped or forgotten prefix reads as one.
 * `undefined` when every table named exists (the missing resource was something else).
 */
export async function missingTablesText(
  dynamoDb: DynamoDBDocumentClient,
  target: TargetOptions & { idempotencyTable?: string },
  where: string,
): Promise<string | undefined> {
  const fromPrefix = target.prefix
    ? (Object.keys(TABLES) as TableKey[]).map((key) => tableName(target.prefix!, key))
    : [];
  const named = [
    ...new Set([target.ledgerTable, target.accountsTable, target.idempotencyTable, ...fromPrefix].filter(Boolean)),
  ] as string[];
  const missing: string[] = [];
  for (const name of named) if (!(await tableExists(dynamoDb, name))) missing.push(name);
  if (missing.length === 0) return undefined;
  const prefixes = await deploymentPrefixesAt(dynamoDb).catch(() => undefined);
  const held =
    prefixes === undefined
      ? ''
      : prefixes.length > 0
        ? ` Prefixes with tables there: ${prefixes.join(', ')}.`
        : ' No table of this project is there: check --endpoint and --region.';
  const noStage = fromPrefix.length > 0 && fromPrefix.every((name) => missing.includes(name));
  return noStage
    ? `no stage "${target.prefix}" at ${where} (--prefix ${target.prefix}): none of its tables exists (${fromPrefix.join(', ')}).${held}`
    : `table${missing.length > 1 ? 's' : ''} ${missing.join(', ')} not found at ${where}${target.prefix ? ` (--prefix ${target.prefix})` : ''}.${held}`;
}

async function tableExists(dynamoDb: DynamoDBDocumentClient, name: string): Promise<boolean> {
  try {
    await dynamoDb.send(new DescribeTableCommand({ TableName: name }));
    return true;
  } catch (error) {
    if ((error as Error).name === 'ResourceNotFoundException') return false;
    throw error;
  }
}
