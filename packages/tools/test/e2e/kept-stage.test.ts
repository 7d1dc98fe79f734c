import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateTableCommand, DescribeTableCommand, UpdateTimeToLiveCommand } from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { createDynamoDb, createSqs, emulatorConfig } from '@rocketmq-lambda/runtime/aws/index.ts';
import {
  consumerGroup,
  deadLetterQueueName,
  outboxTableName,
  queueName,
  tableName,
} from '@rocketmq-lambda/runtime/config/index.ts';
import { MsgIdGenerator, writeEnvelope } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { seedOrders } from '../../src/local/order-seeding.ts';
import { provisionLocal, StageShapeError } from '../../src/local/provision.ts';
import { KeptRun, runCommand, unreachable } from './spawned-commands.ts';

const POINTS = consumerGroup('point-consumer-group');
const ORDER_STATUS = consumerGroup('order-status-consumer-group');

/** A few paid orders, as the bridge captured them: what a re-run into a kept stage replays. */
function paidOrders(count: number): { path: string; awarded: Record<string, number> } {
  const ids = new MsgIdGenerator('0A000002', 0x0202);
  const awarded: Record<string, number> = {};
  const lines = Array.from({ length: count }, (_, i) => {
    const order = { orderNo: `SO2026120400${String(i).padStart(6, '0')}`, userId: `u${i % 3}`, points: 10 + i };
    awarded[order.userId] = (awarded[order.userId] ?? 0) + order.points;
    return writeEnvelope({ topic: 'ORDER_TOPIC', msgId: ids.next(), tags: 'PAID', body: JSON.stringify(order) });
  });
  const path = join(mkdtempSync(join(tmpdir(), 'kept-stage-')), 'orders.jsonl');
  writeFileSync(path, `${lines.join('\n')}\n`);
  return { path, awarded };
}

describe('a stage kept from an earlier run', () => {
  const endpoint = inject('emulatorEndpoint');
  const aws = emulatorConfig(endpoint);

  it('is reused by provisioning when every table and queue has the shape the run needs', async () => {
    // Prepare
    const prefix = `k${randomUUID().slice(0, 8)}`;
    const options = { groups: [POINTS.group, ORDER_STATUS.group], visibilityTimeoutSeconds: 5 };
    const first = await provisionLocal(aws, prefix, options);

    // Act: before, this second creation failed with ResourceInUseException
    const second = await provisionLocal(aws, prefix, options);

    // Assess
    expect(first.reused).toEqual([]);
    expect(second.tables).toEqual(first.tables);
    expect(second.queues).toEqual(first.queues);
    expect(second.outboxTables).toEqual(first.outboxTables);
    expect([...second.reused].sort()).toEqual(
      [
        ...Object.values(first.tables),
        ...Object.values(first.outboxTables),
        ...[POINTS, ORDER_STATUS].flatMap((g) => [queueName(prefix, g.group), deadLetterQueueName(prefix, g.group)]),
      ].sort(),
    );
  });

  it('is refused, each difference named and nothing created, when its keys, TTL, queue type, visibility or redrive count differ', async () => {
    // Prepare: a stage made by other settings than the catalogue's
    const prefix = `k${randomUUID().slice(0, 8)}`;
    const dynamoDb = createDynamoDb(aws);
    const sqs = createSqs(aws);
    const idempotency = tableName(prefix, 'idempotency');
    await dynamoDb.send(
      new CreateTableCommand({
        TableName: idempotency,
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );
    await dynamoDb.send(
      new UpdateTimeToLiveCommand({
        TableName: idempotency,
        TimeToLiveSpecification: { AttributeName: 'ttl', Enabled: true },
      }),
    );
    const { QueueUrl: dlqUrl } = await sqs.send(
      new CreateQueueCommand({ QueueName: deadLetterQueueName(prefix, POINTS.group) }),
    );
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: dlqUrl, AttributeNames: ['QueueArn', 'MessageRetentionPeriod'] }),
    );
    await sqs.send(
      new CreateQueueCommand({
        QueueName: queueName(prefix, POINTS.group),
        Attributes: {
          VisibilityTimeout: '30',
          RedrivePolicy: JSON.stringify({ deadLetterTargetArn: Attributes!.QueueArn, maxReceiveCount: 5 }),
        },
      }),
    );
    // The emulator takes a `.fifo` name for a standard queue; SQS would not, an older tool might have.
    await sqs.send(new CreateQueueCommand({ QueueName: queueName(prefix, ORDER_STATUS.group) }));

    // Act
    const refusal = await provisionLocal(aws, prefix, {
      groups: [POINTS.group, ORDER_STATUS.group],
      visibilityTimeoutSeconds: 5,
    }).catch((error: unknown) => error);

    // Assess
    expect(refusal).toBeInstanceOf(StageShapeError);
    const message = (refusal as Error).message;
    expect(message).toContain(`stage "${prefix}" exists, but not as this run needs it`);
    expect(message).toContain(`table ${idempotency}: keys is pk HASH S, this run needs id HASH S`);
    expect(message).toContain(`table ${idempotency}: TTL attribute is ttl, this run needs expiresAt`);
    const points = queueName(prefix, POINTS.group);
    expect(message).toContain(`queue ${points}: VisibilityTimeout is 30, this run needs 5 (--visibility-timeout)`);
    expect(message).toContain(`queue ${points}: redrive maxReceiveCount is 5, this run needs 17`);
    expect(message).toContain(
      `queue ${queueName(prefix, ORDER_STATUS.group)}: FifoQueue is false, this run needs true`,
    );
    expect(message).toContain(`queue ${deadLetterQueueName(prefix, POINTS.group)}: MessageRetentionPeriod is `);
    // Nothing was made or changed: the missing tables are still missing.
    const ledger = await dynamoDb
      .send(new DescribeTableCommand({ TableName: tableName(prefix, 'ledger') }))
      .catch((error: Error) => error.name);
    expect(ledger).toBe('ResourceNotFoundException');
  });

  it("is refused when a publishing group's outbox table has no stream for its relay to read", async () => {
    // Prepare: the points group's outbox table, made without its stream
    const prefix = `k${randomUUID().slice(0, 8)}`;
    const outbox = outboxTableName(prefix, POINTS.group);
    const dynamoDb = createDynamoDb(aws);
    await dynamoDb.send(
      new CreateTableCommand({
        TableName: outbox,
        KeySchema: [{ AttributeName: 'eventId', KeyType: 'HASH' }],
        AttributeDefinitions: [{ AttributeName: 'eventId', AttributeType: 'S' }],
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );
    await dynamoDb.send(
      new UpdateTimeToLiveCommand({
        TableName: outbox,
        TimeToLiveSpecification: { AttributeName: 'expiresAt', Enabled: true },
      }),
    );
    // Act
    const refusal = await provisionLocal(aws, prefix, { groups: [POINTS.group] }).catch((error: unknown) => error);
    // Assess
    expect(refusal).toBeInstanceOf(StageShapeError);
    expect((refusal as Error).message).toContain(`table ${outbox}: stream is none, this run needs NEW_IMAGE`);
  });

  it('keeps the orders an earlier run moved on: seeding writes only orders the table does not hold', async () => {
    // Prepare: an order the status consumer of an earlier run moved to PAID
    const { tables } = await provisionLocal(aws, `k${randomUUID().slice(0, 8)}`, { groups: [] });
    const dynamoDb = createDynamoDb(aws);
    await dynamoDb.send(new PutCommand({ TableName: tables.orders, Item: { orderNo: 'SO-PAID', status: 'PAID' } }));

    // Act
    const seeded = await seedOrders(dynamoDb, tables.orders, ['SO-PAID', 'SO-NEW']);

    // Assess: before, every order was written again as WAIT_PAY, and a replayed PAID moved it a second time
    expect(seeded).toBe(1);
    const status = async (orderNo: string) =>
      (await dynamoDb.send(new GetCommand({ TableName: tables.orders, Key: { orderNo } }))).Item?.status;
    expect(await status('SO-PAID')).toBe('PAID');
    expect(await status('SO-NEW')).toBe('WAIT_PAY');
  });
});

describe('npm start -- --keep, then runs into the kept stage, then Ctrl-C', () => {
  let kept: KeptRun | undefined;
  afterEach(() => kept?.kill());

  it('runs again into the stage by the hint it printed, with its prefix: what the first run awarded stays awarded once', {
    timeout: 300_000,
  }, async () => {
    // Prepare: a stage kept on an emulator of its own
    const prefix = `kept${randomUUID().slice(0, 6)}`;
    kept = new KeptRun(['--keep', '--no-traffic', '--prefix', prefix, '--groups', POINTS.group]);
    const [hint, rerun] = await kept.waitFor(/re-run into this stage: npm start -- (.*) \[--events file\.jsonl\]/);
    const { AWS_ENDPOINT_URL: endpoint } = await kept.exported();
    expect(hint).toContain(`--prefix ${prefix}`);
    const orders = paidOrders(12);
    const again = (...extra: string[]) =>
      runCommand('npm', ['start', '-s', '--', ...rerun!.split(' '), '--groups', POINTS.group, ...extra]);

    // Act
    const first = await again('--events', orders.path, '--json');
    const second = await again('--events', orders.path, '--json');
    const elsewhere = await runCommand('npm', ['start', '-s', '--', '--endpoint', endpoint!, '--no-traffic']);

    // Assess: before, the re-run failed with ResourceInUseException (and the hint had no prefix)
    expect(first.code, first.stderr).toBe(0);
    expect(second.code, second.stderr).toBe(0);
    const [a, b] = [first, second].map((r) => JSON.parse(r.stdout.trim().split('\n').pop()!));
    expect(a).toMatchObject({ processed: 12, awarded: orders.awarded, stage: { prefix, reused: 7 } }); // 4 tables, the outbox table, 2 queues
    expect(b).toMatchObject({ processed: 0, duplicatesSuppressed: 12, awarded: orders.awarded });
    expect(b.balances).toEqual(orders.awarded);
    // Without --prefix the run makes a stage of its own, and says which one it did not run into.
    expect(elsewhere.code, elsewhere.stderr).toBe(0);
    expect(elsewhere.stderr).toContain(
      `No --prefix: this run makes a new stage beside the 1 on ${endpoint} (${prefix})`,
    );
  });

  it.each([
    ['npm alone (kill -INT <npm>, as a process manager stops it)', 'npm'],
    ["the whole process group (a terminal's Ctrl-C)", 'group'],
  ] as const)(
    'SIGINT to %s stops the kept run and its emulator, and leaves no process behind',
    {
      timeout: 180_000,
    },
    async (_name, whom) => {
      // Prepare
      kept = new KeptRun(['--keep', '--no-traffic', '--groups', POINTS.group]);
      const { AWS_ENDPOINT_URL: endpoint } = await kept.exported();
      expect(await unreachable(endpoint!)).toBe(false);

      // Act
      kept.interrupt(whom);

      // Assess: before, npm alone ignored it (its shell never passed it on) and everything kept running
      expect(await kept.exit()).toBe(0);
      expect(await kept.groupGone()).toBe(true);
      expect(await unreachable(endpoint!)).toBe(true);
      expect(kept.stderr).toContain(`Stopping the emulator at ${endpoint}.`);
    },
  );
});
