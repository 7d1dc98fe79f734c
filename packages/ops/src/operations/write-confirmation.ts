import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { DescribeSecretCommand, type SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { messageOf, OperationsError } from './errors.ts';

/** The account and region a resource lives in, read from its own ARN. */
export interface ResourceLocation {
  arn: string;
  account: string;
  region: string;
}

/** What a write command is about to do, shown before it does it. */
export interface WriteSummary {
  /** Where the writes land: the resource that receives them. */
  location: ResourceLocation;
  /** Role and physical name of every resource written to, e.g. `['ledger table', 'prod-point-ledger']`. */
  resources: ReadonlyArray<readonly [string, string]>;
  /** What will be written, one line each. */
  details: readonly string[];
}

/** The operator did not confirm a write (answered no, or could not be asked): nothing was written. */
export class WriteNotConfirmedError extends OperationsError {
  override readonly name = 'WriteNotConfirmedError';
}

/** A resource's ARN could not be read, so the write cannot be shown before it happens. */
export class WriteTargetError extends OperationsError {
  override readonly name = 'WriteTargetError';
}

function locationOf(arn: string): ResourceLocation {
  const [, , , region = '', account = ''] = arn.split(':');
  return { arn, account, region };
}

/**
 * Where a table is. The ARN comes from DynamoDB itself, so the account shown is the one that owns
 * the table, whatever profile, role or endpoint the credentials came from.
 */
export async function tableLocation(dynamoDb: DynamoDBDocumentClient, table: string): Promise<ResourceLocation> {
  try {
    const { Table } = await dynamoDb.send(new DescribeTableCommand({ TableName: table }));
    return locationOf(Table!.TableArn!);
  } catch (error) {
    throw new WriteTargetError(`cannot show where the write goes: DescribeTable ${table} failed (${messageOf(error)})`);
  }
}

/** Where a queue is, from its `QueueArn` attribute. */
export async function queueLocation(sqs: SQSClient, queueUrl: string): Promise<ResourceLocation> {
  try {
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }),
    );
    return locationOf(Attributes!.QueueArn!);
  } catch (error) {
    throw new WriteTargetError(
      `cannot show where the write goes: GetQueueAttributes ${queueUrl} failed (${messageOf(error)})`,
    );
  }
}

/** Where a secret is, from its ARN as Secrets Manager states it. */
export async function secretLocation(secrets: SecretsManagerClient, secretId: string): Promise<ResourceLocation> {
  try {
    const { ARN } = await secrets.send(new DescribeSecretCommand({ SecretId: secretId }));
    return locationOf(ARN!);
  } catch (error) {
    throw new WriteTargetError(
      `cannot show where the write goes: DescribeSecret ${secretId} failed (${messageOf(error)})`,
    );
  }
}

function describeWrite(summary: WriteSummary): string {
  const width = Math.max(...summary.resources.map(([role]) => role.length)) + 2;
  return [
    `About to write in AWS account ${summary.location.account}, region ${summary.location.region}:`,
    ...summary.resources.map(([role, name]) => `  ${`${role}:`.padEnd(width)}${name}`),
    ...summary.details.map((line) => `  ${line}`),
  ].join('\n');
}

export interface ConfirmationChannel {
  /** `--yes`: confirmed in advance (scripts). */
  yes: boolean;
  /** Where the answer is read: only a terminal can answer. */
  input: (Readable & { isTTY?: boolean }) | undefined;
  /** Where the summary and the question go (stderr: stdout stays the command's output). */
  output: { write(chunk: string): unknown };
}

/**
 * Shows what is about to be written and where, then asks `Proceed? [y/N]` on a terminal. A run
 * without a terminal (cron, CI, a pipe) must say `--yes`: a default answer would be a write no one
 * saw coming. Throws `WriteNotConfirmedError` unless confirmed.
 */
export async function confirmWrite(summary: WriteSummary, channel: ConfirmationChannel): Promise<void> {
  channel.output.write(`${describeWrite(summary)}\n`);
  if (channel.yes) return;
  if (!channel.input?.isTTY) {
    throw new WriteNotConfirmedError(
      'not confirmed, nothing written: standard input is not a terminal; add --yes to confirm in a script',
    );
  }
  channel.output.write('Proceed? [y/N] ');
  const prompt = createInterface({ input: channel.input, terminal: false });
  try {
    const answer = await new Promise<string>((resolve) => {
      prompt.once('line', resolve);
      prompt.once('close', () => resolve(''));
    });
    if (!/^y(es)?$/i.test(answer.trim())) throw new WriteNotConfirmedError('not confirmed, nothing written');
  } finally {
    prompt.close();
  }
}
