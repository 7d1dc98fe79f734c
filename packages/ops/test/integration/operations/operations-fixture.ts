import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { CreateSecretCommand } from '@aws-sdk/client-secrets-manager';
import { type DynamoDBDocumentClient, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { createSecretsManager, emulatorConfig, SecretSigningKeys } from '@rocketmq-lambda/runtime/aws/index.ts';
import { orderEnvelope, pointsFixture } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { inject } from 'vitest';
import { type OpsIo, runOps } from '../../../src/command/ops.ts';

export type PointsFixture = Awaited<ReturnType<typeof pointsFixture>>;

/**
 * Runs the real command line in-process against the fixture's deployment, capturing its output.
 * Standard input is not a terminal unless `io.stdin` says so, as in a script.
 */
export async function ops(
  f: PointsFixture,
  argv: string[],
  io: Pick<OpsIo, 'dynamoDb' | 'sqs' | 'logs' | 'stdin' | 'now' | 'sleep'> = {},
) {
  let stdout = '';
  let stderr = '';
  const code = await runOps([...argv, '--endpoint', f.resources.endpoint, '--prefix', f.resources.prefix], {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { isTTY: false, write: (s: string) => (stderr += s) },
    ...io,
  });
  return { code, stdout, stderr, json: () => JSON.parse(stdout) };
}

/** Awards through the real points consumer: the ledger a clean production run leaves. */
export async function awardThroughConsumer(
  f: PointsFixture,
  orders: Array<{ orderNo: string; userId: string; points: number }>,
) {
  const response = await f.invoke(orders.map((o) => orderEnvelope(o)));
  if (response.batchItemFailures.length > 0) throw new Error('the consumer failed a record');
}

/**
 * What the legacy importer did: a second AWARD row for an order under its own entry id,
 * and the balance raised with it, so the balance still matches the ledger sum.
 */
export async function importLegacyAward(
  f: PointsFixture,
  row: { userId: string; orderNo: string; points: number; entryId: string; createdAt: string },
) {
  await f.dynamoDb.send(
    new PutCommand({ TableName: f.resources.tables.ledger, Item: { ...row, kind: 'AWARD', msgId: 'legacy-import' } }),
  );
  await f.dynamoDb.send(
    new UpdateCommand({
      TableName: f.resources.tables.accounts,
      Key: { userId: row.userId },
      UpdateExpression: 'ADD balance :p',
      ExpressionAttributeValues: { ':p': row.points },
    }),
  );
}

export async function setBalance(f: PointsFixture, userId: string, balance: number) {
  await f.dynamoDb.send(
    new UpdateCommand({
      TableName: f.resources.tables.accounts,
      Key: { userId },
      UpdateExpression: 'SET balance = :b',
      ExpressionAttributeValues: { ':b': balance },
    }),
  );
}

/** Fails the nth TransactWriteItems sent through `client` before it reaches DynamoDB (a crash mid-run). */
export function failNthTransaction(client: DynamoDBDocumentClient, n: number) {
  let seen = 0;
  client.middlewareStack.add(
    (next) => async (args) => {
      if ((args.input as { TransactItems?: unknown }).TransactItems && ++seen === n) {
        throw Object.assign(new Error('connection reset by peer'), { name: 'NetworkingError' });
      }
      return next(args);
    },
    { step: 'initialize', name: 'failNthTransaction' },
  );
}

/** Lets the nth TransactWriteItems commit, then loses its answer (a timeout after commit). */
export function loseNthTransactionAnswer(client: DynamoDBDocumentClient, n: number) {
  let seen = 0;
  client.middlewareStack.add(
    (next) => async (args) => {
      const result = await next(args);
      if ((args.input as { TransactItems?: unknown }).TransactItems && ++seen === n) {
        throw Object.assign(new Error('socket timeout after the request was sent'), { name: 'TimeoutError' });
      }
      return result;
    },
    { step: 'initialize', name: 'loseNthTransactionAnswer' },
  );
}

/** A reversal someone wrote by hand before the tool existed, with its balance decrement. */
export async function reverseByHand(
  f: PointsFixture,
  entry: { userId: string; orderNo: string; reverses: string; points: number },
) {
  await f.dynamoDb.send(
    new PutCommand({
      TableName: f.resources.tables.ledger,
      Item: {
        userId: entry.userId,
        entryId: `REVERSAL#${entry.reverses}`,
        kind: 'REVERSAL',
        orderNo: entry.orderNo,
        points: -entry.points,
        reverses: entry.reverses,
        createdAt: '2099-02-01T00:00:00.000Z',
      },
    }),
  );
  await f.dynamoDb.send(
    new UpdateCommand({
      TableName: f.resources.tables.accounts,
      Key: { userId: entry.userId },
      UpdateExpression: 'ADD balance :p',
      ExpressionAttributeValues: { ':p': -entry.points },
    }),
  );
}

/** A terminal on which the operator types `answer` at the confirmation prompt. */
export function terminalAnswering(answer: string): PassThrough & { isTTY: true } {
  const input = Object.assign(new PassThrough(), { isTTY: true as const });
  input.end(`${answer}\n`);
  return input;
}

/** The review step: a dry run that saves its plan; returns the plan's path. */
export async function reviewedPlan(f: PointsFixture, argv: string[] = []): Promise<string> {
  const plan = join(await mkdtemp(join(tmpdir(), 'reversal-plan-')), 'plan.json');
  const dryRun = await ops(f, ['reverse', ...argv, '--plan', plan]);
  if (dryRun.code === 2) throw new Error(`the dry run failed: ${dryRun.stderr}`);
  return plan;
}

/**
 * A deployment for the runbook's compromise procedure: a points consumer whose key ring reads a
 * signing key secret on the emulator, the key that will leak, a clock the consumer and ops share
 * (ops' waits move it), and the command line against it.
 */
export async function compromisedDeployment() {
  const secrets = createSecretsManager(emulatorConfig(inject('emulatorEndpoint')));
  const clock = { at: Date.now(), now: () => clock.at };
  const secretId = `k${randomUUID().slice(0, 8)}/envelope-signing-key`;
  const leaked = Buffer.from(randomBytes(48).toString('base64url').slice(0, 64));
  await secrets.send(new CreateSecretCommand({ Name: secretId, SecretString: leaked.toString() }));
  const envelopeKeys = new SecretSigningKeys(secrets, secretId, { now: clock.now });
  const f = await pointsFixture({ now: clock.now, envelopeKeys });
  /** The command line against this deployment and its signing key secret. */
  const run = (argv: string[]) =>
    ops(f, [...argv, '--signing-secret', secretId], {
      sleep: async (ms) => {
        clock.at += ms;
      },
    });
  return { f, run, leaked, clock };
}
