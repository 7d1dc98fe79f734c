import { createCloudWatchLogs, emulatorConfig } from '@rocketmq-lambda/runtime/aws/index.ts';
import { functionLogGroupName } from '@rocketmq-lambda/runtime/config/index.ts';
import {
  FunctionLogShipper,
  lambdaLogStreamName,
  ShippingLogger,
} from '@rocketmq-lambda/tools/local/function-log-shipping.ts';
import { newMsgId, orderEnvelope, pointsFixture, sqsRecord } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { describe, expect, it } from 'vitest';
import { ops } from './operations-fixture.ts';

const GROUP = ['--group', 'point-consumer-group'];
const INCIDENT = { orderNo: 'SO202007051422310088', userId: '88372', points: 300 };

/**
 * A points consumer whose log lines go, as in Lambda, to its function's log group on the
 * emulator's CloudWatch Logs; `flush()` stands for the log agent having delivered them.
 */
async function loggedPointsFixture() {
  let shipper: FunctionLogShipper | undefined;
  const logger = ShippingLogger.create((line) => shipper!.push(line), {
    serviceName: 'point-consumer-group',
    logLevel: 'INFO',
    echo: false,
  });
  const f = await pointsFixture({ logger });
  shipper = new FunctionLogShipper(
    createCloudWatchLogs(emulatorConfig(f.resources.endpoint)),
    functionLogGroupName(f.resources.prefix, 'points-consumer'),
    lambdaLogStreamName(new Date(), 'a1b2c3d4e5f60718293a4b5c6d7e8f90'),
  );
  await shipper.open();
  return { ...f, flush: () => shipper!.flush(), close: () => shipper!.close() };
}

type Traced = {
  orderNo: string;
  groups: Array<{
    group: string;
    deliveries: Array<{
      msgId: string;
      outcome: string;
      why: string;
      attempt: number;
      redriven: boolean;
      redriveCount?: number;
    }>;
    appliedBy?: { msgId: string };
    suppressed: number;
    records: Array<{ key: string; status: string; firstMsgId: string }>;
    letters: Array<{ msgId: string; reason: string }>;
  }>;
  ledger: { entries: Array<{ kind: string; points: number; msgId: string }>; effect: Array<Record<string, unknown>> };
  timeline: Array<{ at: string; where: string; what: string }>;
  findings: string[];
};

describe('ops trace (emulator)', () => {
  it('tells the incident: one msgId twice and an application re-send, one award, two copies suppressed', async () => {
    // Prepare: the incident's three deliveries, and another order in the same log group
    const f = await loggedPointsFixture();
    const original = newMsgId();
    const resend = newMsgId();
    const queue = f.resources.queues['point-consumer-group']!.source.arn;
    await f.invoke([orderEnvelope(INCIDENT, { msgId: original })]);
    await f.invoke([orderEnvelope({ orderNo: 'SO-OTHER-1', userId: '88372', points: 5 })]);
    await f.invoke([sqsRecord(orderEnvelope(INCIDENT, { msgId: original }), queue)]);
    await f.invoke([orderEnvelope(INCIDENT, { msgId: resend })]);
    await f.close();
    // Act
    const json = await ops(f, ['trace', INCIDENT.orderNo, ...GROUP, '--user', INCIDENT.userId, '--json']);
    const byMsgId = await ops(f, ['trace', resend, ...GROUP, '--json']);
    const text = await ops(f, ['trace', INCIDENT.orderNo, ...GROUP]);
    const mermaid = await ops(f, ['trace', INCIDENT.orderNo, ...GROUP, '--mermaid']);
    // Assess
    expect(json.code).toBe(0);
    const trace: Traced = json.json();
    const story = trace.groups[0]!;
    expect(story.deliveries.map((d) => [d.msgId, d.outcome])).toEqual([
      [original, 'applied'],
      [original, 'duplicate'],
      [resend, 'duplicate'],
    ]);
    expect(story.deliveries[1]!.why).toBe('the same msgId again (a redelivery): its dedup record exists');
    expect(story.deliveries[2]!.why).toBe(
      `a new msgId for the same key (an application re-send; applied by ${original}): its dedup record exists`,
    );
    expect(story.appliedBy?.msgId).toBe(original);
    expect(story.suppressed).toBe(2);
    expect(story.records).toEqual([
      expect.objectContaining({ key: INCIDENT.orderNo, status: 'COMPLETED', firstMsgId: original }),
    ]);
    expect(story.letters).toEqual([]);
    expect(trace.ledger.entries).toEqual([expect.objectContaining({ kind: 'AWARD', points: 300, msgId: original })]);
    expect(trace.ledger.effect).toEqual([{ userId: '88372', points: 300, awardsInForce: 1, balance: 305 }]);
    expect(trace.timeline.map((e) => e.at)).toEqual(trace.timeline.map((e) => e.at).sort());
    expect(JSON.stringify(trace)).not.toContain('SO-OTHER-1');
    expect(trace.findings).toEqual([]);
    expect(byMsgId.code).toBe(0);
    expect((byMsgId.json() as Traced).orderNo).toBe(INCIDENT.orderNo);
    expect((byMsgId.json() as Traced).groups[0]!.deliveries).toHaveLength(3);
    expect(text.stdout).toContain(`Applied by ${original} (SQS `);
    expect(text.stdout).toContain('2 copy(ies) suppressed as duplicates.');
    expect(text.stdout).toContain('Balance effect for user 88372: +300 points, 1 award(s) in force; balance now 305.');
    expect(text.stdout).toContain('Traces: no trace id in these log lines');
    expect(mermaid.stdout.split('\n')[0]).toBe('sequenceDiagram');
    expect(mermaid.stdout).toContain('D-->>F_point_consumer_group: applied');
    expect(mermaid.stdout.match(/D-->>F_point_consumer_group: duplicate/g)).toHaveLength(2);
  });

  it('tells a dead-lettered order, then its redrive and the one award it made', async () => {
    // Prepare: retries spent during a DynamoDB outage, so the router dead-letters the 17th delivery
    const f = await loggedPointsFixture();
    const order = { orderNo: 'SO-DLQ-1', userId: 'u-31', points: 40 };
    const msgId = newMsgId();
    let outage = true;
    f.dynamoDb.middlewareStack.add(
      (next) => async (args) => {
        if (outage && (args.input as { TransactItems?: unknown }).TransactItems)
          throw Object.assign(new Error('service unavailable'), { name: 'ServiceUnavailable', $fault: 'server' });
        return next(args);
      },
      { step: 'initialize', name: 'dynamoDbOutage' },
    );
    const queue = f.resources.queues['point-consumer-group']!.source.arn;
    await f.invoke([sqsRecord(orderEnvelope(order, { msgId }), queue, 17)]);
    outage = false;
    await f.flush();
    const waiting = await ops(f, ['trace', order.orderNo, ...GROUP, '--json']);
    // Act
    const redrive = await ops(f, ['dlq', 'redrive', ...GROUP, '--key', order.orderNo, '--yes']);
    await f.drain();
    await f.close();
    const after = await ops(f, ['trace', msgId, ...GROUP, '--json']);
    const text = await ops(f, ['trace', order.orderNo, ...GROUP, '--user', order.userId]);
    // Assess
    expect(waiting.code).toBe(1);
    const before: Traced = waiting.json();
    expect(before.groups[0]!.deliveries).toEqual([
      expect.objectContaining({ msgId, outcome: 'failed', attempt: 17, redriven: false }),
    ]);
    expect(before.groups[0]!.deliveries[0]!.why).toBe(
      'ServiceUnavailable (transient): service unavailable; retries spent, dead-lettered',
    );
    expect(before.groups[0]!.letters).toEqual([
      expect.objectContaining({ msgId, reason: expect.stringContaining('RETRIES_EXHAUSTED') }),
    ]);
    expect(before.findings).toEqual([expect.stringContaining('1 letter(s) of the order wait in')]);
    expect(redrive.code).toBe(0);
    expect(after.code).toBe(0);
    const story = (after.json() as Traced).groups[0]!;
    expect(story.deliveries.map((d) => [d.outcome, d.redriven, d.attempt])).toEqual([
      ['failed', false, 17],
      ['applied', true, 1],
    ]);
    expect(story.deliveries[1]!.why).toBe('redriven from the DLQ; applied the effect');
    expect(story.deliveries[1]!.redriveCount).toBe(1);
    expect(story.letters).toEqual([]);
    expect((after.json() as Traced).ledger.effect).toEqual([
      { userId: 'u-31', points: 40, awardsInForce: 1, balance: 40 },
    ]);
    expect(text.stdout).toContain('Ledger t');
    expect(text.stdout).toContain("(the user's partition)");
    expect(text.stdout).toContain('Findings: none.');
  });

  it('traces every order number the consumer accepts, and a key from a log line cannot reshape the pattern', async () => {
    // Prepare: punctuated order numbers, one that is another's prefix, and one written to break out of the quotes
    const f = await loggedPointsFixture();
    const injected = 'SO-9"||$.key="*';
    const orders = ['SO/2020/0001', 'JD#8812', 'JD', 'SO+1', injected];
    const msgIds = new Map(orders.map((orderNo) => [orderNo, newMsgId()]));
    for (const orderNo of orders)
      await f.invoke([orderEnvelope({ orderNo, userId: '88372', points: 1 }, { msgId: msgIds.get(orderNo)! })]);
    await f.close();
    // CloudWatch Logs' own answers: the keys of the events each FilterLogEvents call returned
    const logs = createCloudWatchLogs(emulatorConfig(f.resources.endpoint));
    const returned: string[][] = [];
    logs.middlewareStack.add(
      (next) => async (args) => {
        const result = await next(args);
        const events = (result.output as { events?: Array<{ message?: string }> }).events ?? [];
        returned.push(events.map((e) => JSON.parse(e.message ?? '{}').key));
        return result;
      },
      { step: 'initialize' },
    );
    // Act
    const traced = new Map<string, Awaited<ReturnType<typeof ops>>>();
    for (const orderNo of orders.slice(0, 4)) traced.set(orderNo, await ops(f, ['trace', orderNo, ...GROUP, '--json']));
    returned.length = 0;
    const byMsgId = await ops(f, ['trace', msgIds.get(injected)!, ...GROUP, '--json'], { logs });
    // Assess: each order's own story, and the service selected only the injected order's lines
    for (const orderNo of orders.slice(0, 4)) {
      const out = traced.get(orderNo)!;
      expect({ orderNo, code: out.code, stderr: out.stderr }).toEqual({ orderNo, code: 0, stderr: '' });
      expect((out.json() as Traced).groups[0]!.deliveries.map((d) => [d.msgId, d.outcome])).toEqual([
        [msgIds.get(orderNo), 'applied'],
      ]);
    }
    expect(byMsgId.code).toBe(0);
    expect((byMsgId.json() as Traced).orderNo).toBe(injected);
    expect(returned.flat().filter((key) => key !== injected)).toEqual([]);
  });

  it('says so when nothing names the order, and refuses what cannot be an order number', async () => {
    const f = await loggedPointsFixture();
    await f.close();
    const missing = await ops(f, ['trace', 'SO-NEVER-SEEN', ...GROUP]);
    const spaced = await ops(f, ['trace', 'SO 1', ...GROUP]);
    const long = await ops(f, ['trace', 'S'.repeat(65), ...GROUP]);
    const csv = await ops(f, ['trace', 'SO-1', ...GROUP, '--csv']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('nothing about SO-NEVER-SEEN in the logs, dedup records, DLQs or ledger');
    for (const bad of [spaced, long]) {
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain(
        'trace wants an order number (printable ASCII without spaces, at most 64) or a msgId',
      );
    }
    expect(csv.code).toBe(2);
  });
});
