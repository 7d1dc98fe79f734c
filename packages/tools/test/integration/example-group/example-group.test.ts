import { randomUUID } from 'node:crypto';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { runOps } from '@rocketmq-lambda/ops/command/ops.ts';
import { createDynamoDb, createSqs, emulatorConfig } from '@rocketmq-lambda/runtime/aws/index.ts';
import { CONSUMER_GROUPS, deadLetterQueueName, queueName } from '@rocketmq-lambda/runtime/config/index.ts';
import { MsgIdGenerator, writeEnvelope } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { describe, expect, inject, it } from 'vitest';
import { runChaos } from '../../../src/chaos/chaos-run.ts';
import type { ConsumerFactory } from '../../../src/chaos/fault-plan.ts';
import { interceptCommands } from '../../../src/instrumentation/command-interceptor.ts';
import { runLocalPipeline } from '../../../src/local/local-pipeline.ts';
import { trafficMessage } from '../../../src/local/traffic.ts';
import { chaosPlugin } from '../../../src/testing/example-group/chaos-plugin.ts';
import { REFUNDS, consumer as refundConsumer } from '../../../src/testing/example-group/handler.ts';
import { queueDepth } from '../../../src/testing/queue-reading.ts';

/**
 * docs/adding-a-consumer-group.md, proven beyond CDK (packages/infra/test/example-group.test.ts): the
 * example group's entry and handler module, handed to the local run, the operations tools and
 * the chaos run next to the catalogue's entries, are picked up with no edit to product code.
 */
const CATALOGUE = [...CONSUMER_GROUPS, REFUNDS];
const ids = new MsgIdGenerator('0A0E0A01', 0x0e0a);
const envelope = (topic: string, tags: string, body: Record<string, unknown>) =>
  trafficMessage(
    writeEnvelope({ topic, msgId: ids.next(), tags, keys: [String(body.orderNo)], body: JSON.stringify(body) }),
  );

/**
 * Runs the operations command line in-process against the run's deployment, as a script would (no terminal, writes
 * confirmed with --yes).
 */
async function ops(endpoint: string, prefix: string, argv: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await runOps([...argv, '--endpoint', endpoint, '--prefix', prefix, '--json'], {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { isTTY: false, write: (s: string) => (stderr += s) },
  });
  return { code, stderr, json: () => JSON.parse(stdout) };
}

describe.concurrent('adding a consumer group: the local run, ops and the chaos run pick up a new catalogue entry with no other edit', () => {
  it('the local run provisions its queues and drives its handler; ops reads and redrives its dead letters', async () => {
    // Prepare: two orders paid, one of them finished; once settled, a refund of each (the
    // unfinished one is illegal) and the first refund again.
    const endpoint = inject('emulatorEndpoint');
    const prefix = `eg${randomUUID().slice(0, 8)}`;
    const paid = (orderNo: string) => envelope('ORDER_TOPIC', 'PAID', { orderNo, userId: 'u1', points: 10 });
    const refund = envelope('REFUND_TOPIC', 'REFUNDED', { orderNo: 'SOEG1' });

    // Act
    const run = await runLocalPipeline({
      catalogue: CATALOGUE,
      phases: [
        { name: 'orders', messages: [paid('SOEG1'), paid('SOEG2')] },
        {
          name: 'one finishes',
          messages: [envelope('ORDER_TOPIC', 'FINISHED', { orderNo: 'SOEG1' })],
          afterQuiet: true,
        },
        {
          name: 'refunds',
          messages: [
            refund,
            envelope('REFUND_TOPIC', 'REFUNDED', { orderNo: 'SOEG2' }),
            { ...refund, label: 'redelivery' },
          ],
          afterQuiet: true,
        },
      ],
      endpoint,
      prefix,
      // Long enough that a slow shared machine cannot keep a batch past its visibility timeout: the batch would come
      // back and its illegal refund be dead-lettered a second time, as on Lambda after a timeout.
      visibilityTimeoutSeconds: 30,
    });
    const { result } = run;
    await run.close();
    const dynamoDb = createDynamoDb(emulatorConfig(endpoint));
    const statusOf = async (orderNo: string) =>
      (await dynamoDb.send(new GetCommand({ TableName: result.resources.tables.orders, Key: { orderNo } }))).Item
        ?.status;
    const list = await ops(endpoint, prefix, ['dlq', 'list', '--group', REFUNDS.group]);
    const redrive = await ops(endpoint, prefix, [
      'dlq',
      'redrive',
      '--group',
      REFUNDS.group,
      '--reason',
      'ILLEGAL_TRANSITION',
      '--yes',
    ]);
    const audit = await ops(endpoint, prefix, ['audit']);

    // Assess: its queues, named as the CDK app names them, fed by the bridge from its topic.
    const queues = result.resources.queues[REFUNDS.group]!;
    expect(queues.source.url).toMatch(new RegExp(`/${queueName(prefix, REFUNDS.group)}$`));
    expect(queues.deadLetter.url).toMatch(new RegExp(`/${deadLetterQueueName(prefix, REFUNDS.group)}$`));
    expect(result.groups).toEqual(CATALOGUE.map((g) => g.group));
    expect(result.bridge.enqueued[REFUNDS.group]).toBe(3);
    expect(
      result.deadLetters.map((d) => d.group),
      `refund deliveries ${JSON.stringify(result.account.countsOf(REFUNDS.group))}, invocations ${JSON.stringify(result.account.invocations.get(REFUNDS.group))}`,
    ).toEqual([REFUNDS.group]);
    // Its handler: one refund applied, its redelivery a duplicate, the unfinished order's refund dead-lettered.
    expect(result.account.countsOf(REFUNDS.group)).toMatchObject({
      delivered: 3,
      processed: 1,
      duplicatesSuppressed: 1,
      deadLettered: 1,
    });
    expect(await statusOf('SOEG1')).toBe('REFUNDED');
    expect(await statusOf('SOEG2')).toBe('PAID');
    // ops: its dead letter with code, reason and decoded envelope; redriven to its source queue.
    expect(list.code).toBe(0);
    expect(list.json().messages).toMatchObject([
      {
        failure: { code: 'ILLEGAL_TRANSITION', key: 'SOEG2#REFUNDED', group: REFUNDS.group },
        envelope: { topic: 'REFUND_TOPIC', tags: 'REFUNDED' },
      },
    ]);
    expect(redrive.stderr).not.toContain('ops:');
    expect(redrive.code).toBe(0);
    expect(redrive.json()).toMatchObject({ moved: 1, to: queueName(prefix, REFUNDS.group) });
    const sqs = createSqs(emulatorConfig(endpoint));
    expect(await queueDepth(sqs, queues.deadLetter.url)).toEqual({ visible: 0, inFlight: 0 });
    expect(await queueDepth(sqs, queues.source.url)).toEqual({ visible: 1, inFlight: 0 });
    // audit reads the points tables the same run wrote: the new group left them as they should be.
    expect(audit.code).toBe(0);
  }, 120_000);

  it('the chaos run drives it with its plug-in and judges its invariants, which a refund without its precondition breaks', async () => {
    // Prepare: the fixture's plug-in next to the product's; the weakened refund update drops
    // its condition, so a refund of an order that never finished creates a REFUNDED row.
    const chaos = (replace?: Record<string, ConsumerFactory>) =>
      runChaos({
        catalogue: CATALOGUE,
        plugins: [chaosPlugin],
        seed: 7,
        messages: 200,
        consumers: 2,
        endpoint: inject('emulatorEndpoint'),
        prefix: `egc${randomUUID().slice(0, 8)}`,
        replace,
      });
    const unconditionalRefund: ConsumerFactory = (deps) => {
      interceptCommands(
        deps.dynamoDb,
        'unconditionalRefund',
        async ({ name, input }, send) => {
          if (name === 'UpdateItemCommand') {
            delete input.ConditionExpression;
            delete (input.ExpressionAttributeValues as Record<string, unknown>)[':finished'];
          }
          return send();
        },
        { per: 'command' },
      );
      return refundConsumer.create(deps);
    };

    // Act
    const [real, weak] = await Promise.all([chaos(), chaos({ [REFUNDS.group]: unconditionalRefund })]);

    // Assess: its share of the workload, its crash point, its verdict among the others'.
    expect(real.invariants.violations).toEqual([]);
    expect(real.summary.invariantHolds).toBe(true);
    expect(Object.keys(real.summary.groups)).toEqual(CATALOGUE.map((g) => g.group));
    const refunds = real.summary.groups[REFUNDS.group]!;
    expect(refunds).toMatchObject({ invariantHolds: true, doubleEffects: 0, lostEffects: 0 });
    expect(refunds.deliveries).toBeGreaterThan(real.workload.compositions[REFUNDS.group]!.refunds!);
    expect(refunds.detail.refunded).toBeGreaterThan(0);
    expect(refunds.deadLettered).toBe(refunds.expectedDeadLettered);
    expect(real.plan.crashes[REFUNDS.group]!.atCrashPoint.length).toBeGreaterThan(0);
    expect(weak.summary.groups[REFUNDS.group]).toMatchObject({
      invariantHolds: false,
      doubleEffects: weak.workload.compositions[REFUNDS.group]!.unfinished,
    });
    expect(weak.invariants.missingDeadLetters).toBe(weak.workload.compositions[REFUNDS.group]!.unfinished);
    expect(
      Object.entries(weak.summary.groups)
        .filter(([, g]) => !g.invariantHolds)
        .map(([group]) => group),
    ).toEqual([REFUNDS.group]);
  }, 300_000);
});
