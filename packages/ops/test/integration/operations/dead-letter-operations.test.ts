import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
} from '@aws-sdk/client-sqs';
import { createSqs, emulatorConfig } from '@rocketmq-lambda/runtime/aws/index.ts';
import { writeEnvelope } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { newMsgId, orderEnvelope, pointsFixture, sqsRecord } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { describe, expect, it } from 'vitest';
import { ops, type PointsFixture, terminalAnswering } from './operations-fixture.ts';

const GROUP = ['--group', 'point-consumer-group'];
const OUTAGE_ORDERS = [
  { orderNo: 'SO-OUT-1', userId: 'u-7', points: 70 },
  { orderNo: 'SO-OUT-2', userId: 'u-7', points: 30 },
];
const OUTAGE_MSG_IDS = [newMsgId(), newMsgId()];
const MALFORMED = '{"specversion":"1.0", "id": ';

/**
 * A DLQ as production fills it: two awards whose retries ran out during a DynamoDB outage,
 * a conflicting payload, a body that is no envelope (all three via the failure router),
 * and one message SQS's redrive policy moved without any attribute.
 */
async function deadLetteredFixture() {
  const f = await pointsFixture();
  const queue = f.resources.queues['point-consumer-group']!;
  let outage = true;
  f.dynamoDb.middlewareStack.add(
    (next) => async (args) => {
      if (outage && (args.input as { TransactItems?: unknown }).TransactItems) {
        throw Object.assign(new Error('service unavailable'), { name: 'ServiceUnavailable', $fault: 'server' });
      }
      return next(args);
    },
    { step: 'initialize', name: 'dynamoDbOutage' },
  );
  // The 17th delivery: retries spent, so the router dead-letters with RETRIES_EXHAUSTED.
  await f.invoke(
    OUTAGE_ORDERS.map((o, i) => sqsRecord(orderEnvelope(o, { msgId: OUTAGE_MSG_IDS[i] }), queue.source.arn, 17)),
  );
  outage = false;
  await f.invoke([orderEnvelope({ orderNo: 'SO-CONFLICT', userId: 'u-8', points: 10 })]);
  await f.invoke([orderEnvelope({ orderNo: 'SO-CONFLICT', userId: 'u-8', points: 1000 })]);
  await f.invoke([MALFORMED]);
  await f.sqs.send(
    new SendMessageCommand({
      QueueUrl: queue.deadLetter.url,
      MessageBody: orderEnvelope({ orderNo: 'SO-CRASH', userId: 'u-9', points: 5 }),
    }),
  );
  return f;
}

async function queueDepth(f: PointsFixture, which: 'source' | 'deadLetter' | { url: string }) {
  const { Attributes } = await f.sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: typeof which === 'string' ? f.resources.queues['point-consumer-group']![which].url : which.url,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return Number(Attributes!.ApproximateNumberOfMessages) + Number(Attributes!.ApproximateNumberOfMessagesNotVisible);
}

type Listed = {
  messageId: string;
  reasonText: string;
  failure?: { code?: string; key?: string };
  envelope?: { msgId: string; topic: string; tags?: string; keys: string[]; body: string };
  body: string;
  envelopeError?: string;
};

describe('ops dlq (emulator)', () => {
  it('lists every dead letter with its reason and decoded envelope, and leaves them visible', async () => {
    // Prepare
    const f = await deadLetteredFixture();
    // Act
    const list = await ops(f, ['dlq', 'list', ...GROUP, '--json']);
    const again = await ops(f, ['dlq', 'list', ...GROUP, '--visibility-timeout', '5']);
    // Assess
    expect(list.code).toBe(0);
    const messages: Listed[] = list.json().messages;
    expect(messages).toHaveLength(5);
    const byCode = (code: string | undefined) => messages.filter((m) => m.failure?.code === code);
    expect(
      byCode('RETRIES_EXHAUSTED')
        .map((m) => m.envelope?.msgId)
        .sort(),
    ).toEqual([...OUTAGE_MSG_IDS].sort());
    expect(byCode('RETRIES_EXHAUSTED')[0]!.envelope).toMatchObject({ topic: 'ORDER_TOPIC', tags: 'PAID' });
    const conflict = byCode('PAYLOAD_CONFLICT')[0]!;
    expect(conflict.failure?.key).toBe('SO-CONFLICT');
    expect(conflict.envelope?.keys).toEqual(['SO-CONFLICT']);
    expect(JSON.parse(conflict.envelope!.body)).toMatchObject({ points: 1000 });
    const malformed = byCode('INVALID_ENVELOPE')[0]!;
    expect(malformed.envelope).toBeUndefined();
    expect(malformed.body).toBe(MALFORMED);
    expect(malformed.envelopeError).toBe('body is not JSON');
    const moved = byCode(undefined)[0]!;
    expect(moved.failure).toBeUndefined();
    expect(moved.reasonText).toBe('reason unknown: moved by redrive policy after 17 receives');
    expect(again.stdout).toContain('Dead letters in');
    expect(again.stdout).toContain(': 5');
    expect(await queueDepth(f, 'deadLetter')).toBe(5);
  });

  it('shows one dead letter in full by RocketMQ msgId', async () => {
    const f = await deadLetteredFixture();
    const show = await ops(f, ['dlq', 'show', ...GROUP, OUTAGE_MSG_IDS[0]!]);
    expect(show.code).toBe(0);
    expect(show.stdout).toMatch(/failure code:\s+RETRIES_EXHAUSTED/);
    expect(show.stdout).toMatch(/idempotency key:\s+SO-OUT-1/);
    expect(show.stdout).toContain(`msgId:            ${OUTAGE_MSG_IDS[0]}`);
    expect(show.stdout).toContain('"orderNo": "SO-OUT-1"');
    const missing = await ops(f, ['dlq', 'show', ...GROUP, 'NO-SUCH-ID']);
    expect(missing.code).toBe(2);
  });

  it("shows a delay message's born, store and delivery times and its 4.x delay level", async () => {
    // Prepare: two letters of delayed messages, one from RocketMQ 5 (a delivery timestamp), one from 4.x (a delay level)
    const f = await pointsFixture();
    const dlqUrl = f.resources.queues['point-consumer-group']!.deadLetter.url;
    const [v5, v4] = [newMsgId(), newMsgId()];
    const born = Date.parse('2026-12-01T08:00:00.000Z');
    for (const body of [
      orderEnvelope(
        { orderNo: 'SO-DELAY-5', userId: 'u-5', points: 5 },
        { msgId: v5, bornTimestamp: born, storeTimestamp: born + 3_600_000, deliveryTimestamp: born + 3_600_000 },
      ),
      orderEnvelope(
        { orderNo: 'SO-DELAY-4', userId: 'u-4', points: 4 },
        { msgId: v4, bornTimestamp: born, storeTimestamp: born + 10_000, delayTimeLevel: 3 },
      ),
    ])
      await f.sqs.send(new SendMessageCommand({ QueueUrl: dlqUrl, MessageBody: body }));

    // Act
    const show5 = await ops(f, ['dlq', 'show', ...GROUP, v5]);
    const show4 = await ops(f, ['dlq', 'show', ...GROUP, v4]);
    const json = await ops(f, ['dlq', 'show', ...GROUP, v5, '--json']);

    // Assess
    expect(show5.stdout).toContain('born:             2026-12-01T08:00:00.000Z');
    expect(show5.stdout).toContain('stored:           2026-12-01T09:00:00.000Z');
    expect(show5.stdout).toContain(
      'delivery due:     2026-12-01T09:00:00.000Z (a delay message: RocketMQ held it back until then)',
    );
    expect(show5.stdout).not.toContain('delay level:');
    expect(show4.stdout).toContain("delay level:      3 (RocketMQ 4: the broker held it back for this level's delay)");
    expect(show4.stdout).not.toContain('delivery due:');
    expect(json.json().envelope).toMatchObject({ deliveryTimestamp: born + 3_600_000 });
  });

  it('redrives only the selected reason; the consumer then processes each once; the rest stay', async () => {
    const f = await deadLetteredFixture();
    const dryRun = await ops(f, ['dlq', 'redrive', ...GROUP, '--reason', 'RETRIES_EXHAUSTED', '--dry-run', '--json']);
    expect(dryRun.code).toBe(0);
    expect(dryRun.json()).toMatchObject({ dryRun: true, examined: 5, moved: 0 });
    expect(dryRun.json().selected).toHaveLength(2);
    expect(await queueDepth(f, 'source')).toBe(0);
    // Act
    const redrive = await ops(f, ['dlq', 'redrive', ...GROUP, '--reason', 'RETRIES_EXHAUSTED', '--rate', '4', '--yes']);
    await f.drain();
    // Assess
    expect(redrive.code).toBe(0);
    expect(redrive.stdout).toContain('Moved 2 message(s) back to the source queue.');
    expect(await f.balance('u-7')).toBe(100);
    expect((await f.ledger('u-7')).map((e) => e.orderNo).sort()).toEqual(['SO-OUT-1', 'SO-OUT-2']);
    const redriven = f.reports.filter((r) => OUTAGE_MSG_IDS.includes(r.msgId ?? ''));
    expect(redriven.map((r) => r.settlement.outcome)).toEqual(['failed', 'failed', 'processed', 'processed']);
    const left: Listed[] = (await ops(f, ['dlq', 'list', ...GROUP, '--json'])).json().messages;
    expect(left.map((m) => m.failure?.code ?? 'redrive-policy').sort()).toEqual([
      'INVALID_ENVELOPE',
      'PAYLOAD_CONFLICT',
      'redrive-policy',
    ]);
    expect(await f.ledgerMismatches()).toEqual([]);
  });

  it('selects by key and by age, and refuses an unfiltered redrive without --all', async () => {
    const f = await deadLetteredFixture();
    const byKey = await ops(f, ['dlq', 'redrive', ...GROUP, '--key', 'SO-OUT-2', '--dry-run', '--json']);
    const byAge = await ops(f, ['dlq', 'redrive', ...GROUP, '--older-than', '1h', '--dry-run', '--json']);
    const unknown = await ops(f, ['dlq', 'redrive', ...GROUP, '--reason', 'unknown', '--dry-run', '--json']);
    const unfiltered = await ops(f, ['dlq', 'redrive', ...GROUP]);
    expect(byKey.json().selected.map((l: Listed) => l.envelope?.msgId)).toEqual([OUTAGE_MSG_IDS[1]]);
    expect(byAge.json().selected).toEqual([]);
    expect(unknown.json().selected.map((l: Listed) => JSON.parse(l.envelope!.body).orderNo)).toEqual(['SO-CRASH']);
    expect(unfiltered.code).toBe(2);
    expect(unfiltered.stderr).toMatch(/needs a filter .* or --all/);
    expect(await queueDepth(f, 'deadLetter')).toBe(5);
  });

  it('a failed send to the source queue leaves the message in the DLQ (exit 2)', async () => {
    // Prepare: the SQS client fails every SendMessage to the source queue
    const f = await deadLetteredFixture();
    const sourceUrl = f.resources.queues['point-consumer-group']!.source.url;
    const sqs = createSqs({ ...emulatorConfig(f.resources.endpoint), maxAttempts: 1 });
    sqs.middlewareStack.add(
      (next) => async (args) => {
        if (
          (args.input as { QueueUrl?: string; MessageBody?: string }).QueueUrl === sourceUrl &&
          'MessageBody' in (args.input as object)
        ) {
          throw Object.assign(new Error('connect ETIMEDOUT'), { name: 'TimeoutError' });
        }
        return next(args);
      },
      { step: 'initialize', name: 'failSendToSource' },
    );
    // Act
    const run = await ops(f, ['dlq', 'redrive', ...GROUP, '--key', 'SO-OUT-1', '--yes'], { sqs });
    // Assess
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/to the source queue failed, it stays in the DLQ/);
    expect(await queueDepth(f, 'source')).toBe(0);
    expect(await queueDepth(f, 'deadLetter')).toBe(5);
    const still: Listed[] = (await ops(f, ['dlq', 'list', ...GROUP, '--json'])).json().messages;
    expect(still.some((m) => m.failure?.key === 'SO-OUT-1')).toBe(true);
  });

  it('marks a redriven message and drops the failure attributes', async () => {
    // Prepare
    const f = await deadLetteredFixture();
    // Act
    await ops(f, ['dlq', 'redrive', ...GROUP, '--key', 'SO-OUT-1', '--yes']);
    const { Messages = [] } = await f.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: f.resources.queues['point-consumer-group']!.source.url,
        MessageAttributeNames: ['All'],
        WaitTimeSeconds: 1,
      }),
    );
    // Assess
    expect(Messages).toHaveLength(1);
    expect(Object.keys(Messages[0]!.MessageAttributes ?? {}).sort()).toEqual([
      'redrive-count',
      'redriven-at',
      'redriven-from-dlq',
    ]);
    expect(Messages[0]!.MessageAttributes!['redrive-count']!.StringValue).toBe('1');
    expect(Messages[0]!.MessageAttributes!['redriven-from-dlq']!.StringValue).toBe(
      `${f.resources.prefix}-point-consumer-group-dlq`,
    );
  });

  it('escapes terminal control sequences in list and show, neutralises CSV formulas, and keeps --json exact', async () => {
    // Prepare: a letter whose tag, key and (non-JSON) body carry escape sequences, a C1 CSI, a
    // bidi override and a carriage return, and whose key is a spreadsheet formula
    const f = await pointsFixture();
    const hostileBody = '\u001b]0;pwned\u0007\u001b[2Jnot json\rOK \u009b31mred gnp\u202eexe';
    const formulaKey = '=HYPERLINK("http://evil.example","x")';
    const msgId = newMsgId();
    await f.sqs.send(
      new SendMessageCommand({
        QueueUrl: f.resources.queues['point-consumer-group']!.deadLetter.url,
        MessageBody: writeEnvelope({
          topic: 'ORDER_TOPIC',
          msgId,
          tags: 'PAID\u001b[8m',
          keys: [formulaKey],
          body: hostileBody,
        }),
      }),
    );
    // Act
    const list = await ops(f, ['dlq', 'list', ...GROUP]);
    const show = await ops(f, ['dlq', 'show', ...GROUP, msgId]);
    const csv = await ops(f, ['dlq', 'list', ...GROUP, '--csv']);
    const json = await ops(f, ['dlq', 'list', ...GROUP, '--json']);
    // Assess: nothing a terminal acts on, but every sequence visible as text
    for (const run of [list, show, csv]) expect(run.stdout.replaceAll('\n', '')).not.toMatch(/[\p{Cc}\p{Cf}]/u);
    expect(list.stdout).toContain('ORDER_TOPIC:PAID\\u001b[8m');
    expect(show.stdout).toContain('\\u001b]0;pwned\\u0007\\u001b[2Jnot json\\u000dOK \\u009b31mred gnp\\u202eexe');
    expect(csv.stdout).toContain(`"'=HYPERLINK(""http://evil.example"",""x"")"`);
    expect(json.json().messages[0].envelope).toMatchObject({
      body: hostileBody,
      keys: [formulaKey],
      tags: 'PAID\u001b[8m',
    });
  });

  it('holds back a letter whose recorded source queue is not the redrive target, with the reason', async () => {
    // Prepare: a second group's queue given as the target by mistake
    const f = await deadLetteredFixture();
    const { QueueUrl: otherUrl } = await f.sqs.send(
      new CreateQueueCommand({ QueueName: `${f.resources.prefix}-coupon-consumer-group` }),
    );
    const ownArn = f.resources.queues['point-consumer-group']!.source.arn;
    // Act
    const run = await ops(f, [
      'dlq',
      'redrive',
      ...GROUP,
      '--key',
      'SO-OUT-1',
      '--source-queue-url',
      otherUrl!,
      '--yes',
      '--json',
    ]);
    // Assess
    expect(run.code).toBe(1);
    expect(run.json()).toMatchObject({ moved: 0, selected: [] });
    expect(run.json().heldBack).toEqual([
      expect.objectContaining({
        why: `its recorded source queue is ${ownArn}, not the redrive target arn:aws:sqs:us-east-1:123456789012:${f.resources.prefix}-coupon-consumer-group: sent there it would be consumed by another group. Redrive it to its own source queue (--group, or --source-queue-url)`,
      }),
    ]);
    expect(await queueDepth(f, { url: otherUrl! })).toBe(0);
    expect(await queueDepth(f, 'deadLetter')).toBe(5);
  });

  it('shows account, region and both queues before a redrive; without a terminal or a yes it moves nothing', async () => {
    // Prepare
    const f = await deadLetteredFixture();
    const prefix = f.resources.prefix;
    // Act
    const script = await ops(f, ['dlq', 'redrive', ...GROUP, '--reason', 'RETRIES_EXHAUSTED']);
    const declined = await ops(f, ['dlq', 'redrive', ...GROUP, '--reason', 'RETRIES_EXHAUSTED'], {
      stdin: terminalAnswering('no'),
    });
    // Assess
    for (const run of [script, declined]) {
      expect(run.code).toBe(2);
      expect(run.stderr).toContain('About to write in AWS account 123456789012, region us-east-1:');
      expect(run.stderr).toMatch(new RegExp(`send to: +${prefix}-point-consumer-group\n`));
      expect(run.stderr).toMatch(new RegExp(`delete from: +${prefix}-point-consumer-group-dlq\n`));
      expect(run.stderr).toContain(
        'dead letters selected by --reason RETRIES_EXHAUSTED: each sent to the source queue, then deleted from the DLQ',
      );
    }
    expect(script.stderr).toContain('add --yes to confirm in a script');
    expect(declined.stderr).toContain('Proceed? [y/N] ');
    expect(await queueDepth(f, 'source')).toBe(0);
    expect(await queueDepth(f, 'deadLetter')).toBe(5);
  });
});
