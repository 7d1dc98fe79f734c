import {
  ChangeMessageVisibilityBatchCommand,
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SetQueueAttributesCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../../../src/emulator/emulator.ts';

/**
 * The launcher replaces moto's SQS queue counts (packages/tools/src/emulator/hot_paths.py). This file
 * drives one sequence of SQS calls against the launcher and a stock moto side by side and
 * compares everything a client can observe after every call: which messages come back in
 * which order, their receive counts and attributes, the three approximate counts, redrive
 * to the DLQ, FIFO group hold-back, errors.
 *
 * Time: visibility timeouts and delays are whole seconds, so the calls run on a grid of
 * 2/3 s and every timeout or delay is an odd number of seconds (1, 3, 31 = 1.5, 4.5, 46.5
 * ticks): a deadline set by a call on the grid falls half-way between two later calls,
 * 333 ms from either, so both servers see every deadline on the same side even though
 * they answer some milliseconds apart (more when the machine is busy). A step that sets a
 * deadline makes that call first.
 */

const TICK_MS = 2000 / 3;
/**
 * Each act runs up to three times. A real divergence between the two implementations is
 * deterministic (the same calls on the same grid give the same answers) and fails every
 * attempt; what a rerun absorbs is a call delayed past the 333 ms margin on a saturated
 * machine (seen at load averages of 8 and more on 2 cores), which lands on the other side of
 * a deadline on one server only.
 */
const ACT = { timeout: 120_000, retry: 2 };
let launcher: Emulator;
let stock: Emulator;
let sqsLauncher: SQSClient;
let sqsStock: SQSClient;

function client(endpoint: string) {
  // One attempt: a retry must never hide an error from the comparison.
  return new SQSClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
}

beforeAll(async () => {
  [launcher, stock] = await Promise.all([startEmulator(), startEmulator({ stockMoto: true })]);
  sqsLauncher = client(launcher.endpoint);
  sqsStock = client(stock.endpoint);
});

afterAll(async () => {
  sqsLauncher?.destroy();
  sqsStock?.destroy();
  await Promise.all([launcher?.stop(), stock?.stop()]);
});

/** One server's side of the comparison: its client and the receipt handles it has handed out, by label. */
interface Side {
  sqs: SQSClient;
  urls: Record<string, string>;
  handles: Map<string, string>;
}

/** What a client can observe of a received message (ids, handles and timestamps differ by nature). */
function observable(m: Message) {
  const { SentTimestamp, ApproximateFirstReceiveTimestamp, SequenceNumber, ...attributes } = m.Attributes ?? {};
  return {
    body: m.Body,
    md5OfBody: m.MD5OfBody,
    md5OfMessageAttributes: m.MD5OfMessageAttributes,
    attributes,
    messageAttributes: m.MessageAttributes,
    hasTimestamps: [SentTimestamp, ApproximateFirstReceiveTimestamp].every((t) => /^\d+$/.test(t ?? '')),
    hasSequenceNumber: SequenceNumber !== undefined,
  };
}

async function outcome<T>(call: () => Promise<T>): Promise<T | { error: string; status?: number }> {
  try {
    return await call();
  } catch (err) {
    const e = err as { name: string; $metadata?: { httpStatusCode?: number } };
    return { error: e.name, status: e.$metadata?.httpStatusCode };
  }
}

const COUNTS = [
  'ApproximateNumberOfMessages',
  'ApproximateNumberOfMessagesNotVisible',
  'ApproximateNumberOfMessagesDelayed',
] as const;

const ops = {
  async counts(side: Side, queue: string) {
    const { Attributes } = await side.sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: side.urls[queue], AttributeNames: [...COUNTS] }),
    );
    return Attributes;
  },
  async allAttributes(side: Side, queue: string) {
    const { Attributes = {} } = await side.sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: side.urls[queue], AttributeNames: ['All'] }),
    );
    // Timestamps and ARNs differ between two servers started apart; everything else must not.
    const { CreatedTimestamp, LastModifiedTimestamp, QueueArn, RedrivePolicy, Policy, ...rest } = Attributes;
    return { ...rest, hasRedrivePolicy: RedrivePolicy !== undefined };
  },
  async receive(side: Side, queue: string, label: string, max: number, visibility?: number) {
    const { Messages = [] } = await side.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: side.urls[queue],
        MaxNumberOfMessages: max,
        VisibilityTimeout: visibility,
        MessageSystemAttributeNames: ['All'],
        MessageAttributeNames: ['All'],
        WaitTimeSeconds: 0,
      }),
    );
    for (const [i, m] of Messages.entries()) side.handles.set(`${label}.${i}`, m.ReceiptHandle!);
    return Messages.map(observable);
  },
  async delete(side: Side, queue: string, labels: string[]) {
    const { Successful = [], Failed = [] } = await side.sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: side.urls[queue],
        Entries: labels.map((l, i) => ({ Id: `d${i}`, ReceiptHandle: side.handles.get(l) ?? `not-a-handle-${i}` })),
      }),
    );
    return { ok: Successful.map((s) => s.Id).sort(), failed: Failed.map((f) => [f.Id, f.Code]).sort() };
  },
  async changeVisibility(side: Side, queue: string, labels: string[], seconds: number) {
    const { Successful = [], Failed = [] } = await side.sqs.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: side.urls[queue],
        Entries: labels.map((l, i) => ({
          Id: `v${i}`,
          ReceiptHandle: side.handles.get(l) ?? `not-a-handle-${i}`,
          VisibilityTimeout: seconds,
        })),
      }),
    );
    return { ok: Successful.map((s) => s.Id).sort(), failed: Failed.map((f) => [f.Id, f.Code]).sort() };
  },
};

/**
 * Runs `act` on both servers at the next tick of the grid and records both answers; the
 * transcripts are compared at the end, so a failure shows every step up to the divergence.
 */
class Lockstep {
  readonly launcher: unknown[] = [];
  readonly stock: unknown[] = [];
  private tick = 0;
  private readonly start = Date.now();

  constructor(private readonly sides: { launcher: Side; stock: Side }) {}

  async step(name: string, act: (side: Side) => Promise<unknown>, { wait = true } = {}) {
    if (wait) {
      // A step that overran (200 sends to stock moto take seconds) must not shift the grid.
      this.tick = Math.max(this.tick + 1, Math.ceil((Date.now() - this.start) / TICK_MS));
      const due = this.start + this.tick * TICK_MS - Date.now();
      if (due > 0) await new Promise((r) => setTimeout(r, due));
    }
    const [l, s] = await Promise.all([outcome(() => act(this.sides.launcher)), outcome(() => act(this.sides.stock))]);
    this.launcher.push({ step: name, answer: l });
    this.stock.push({ step: name, answer: s });
  }
}

async function createQueues(sqs: SQSClient, prefix: string): Promise<Record<string, string>> {
  const make = async (name: string, attributes: Record<string, string> = {}) =>
    (await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }))).QueueUrl!;
  const arnOf = async (url: string) =>
    (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }))).Attributes!
      .QueueArn!;
  const dlq = await make(`${prefix}-dlq`);
  const source = await make(`${prefix}-src`, {
    VisibilityTimeout: '1',
    RedrivePolicy: JSON.stringify({ deadLetterTargetArn: await arnOf(dlq), maxReceiveCount: 3 }),
  });
  const fifoDlq = await make(`${prefix}-dlq.fifo`, { FifoQueue: 'true' });
  const fifo = await make(`${prefix}-src.fifo`, {
    FifoQueue: 'true',
    ContentBasedDeduplication: 'true',
    VisibilityTimeout: '1',
    RedrivePolicy: JSON.stringify({ deadLetterTargetArn: await arnOf(fifoDlq), maxReceiveCount: 2 }),
  });
  const delayed = await make(`${prefix}-delayed`, { DelaySeconds: '1', VisibilityTimeout: '31' });
  const backlog = await make(`${prefix}-backlog`, { VisibilityTimeout: '31' });
  return { dlq, source, fifoDlq, fifo, delayed, backlog };
}

/** Deterministic PRNG (mulberry32) so a divergence is reproducible. */
function prng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The same queues on both servers, and a lockstep runner over them. */
async function lockstep(act: string) {
  const prefix = `diff${act}${Date.now().toString(36)}`;
  const sides = {
    launcher: { sqs: sqsLauncher, urls: await createQueues(sqsLauncher, prefix), handles: new Map<string, string>() },
    stock: { sqs: sqsStock, urls: await createQueues(sqsStock, prefix), handles: new Map<string, string>() },
  };
  return new Lockstep(sides);
}

/** The three counts of each of `queues` (only queues this act alone touches: the acts run concurrently). */
const countsOf = (queues: string[]) => async (side: Side) =>
  Object.fromEntries(await Promise.all(queues.map(async (q) => [q, await ops.counts(side, q)] as const)));

const stepAnswer = <T>(transcript: unknown[], step: string) =>
  (transcript.find((s) => (s as { step: string }).step === step) as { answer: T }).answer;

// The acts use separate queues and run concurrently: most of each is waiting for the grid.
describe.concurrent('differential: launcher SQS (one-pass counts) vs stock moto', ACT, () => {
  it('runs the patch on the launcher and not on the stock server (so "identical" compares two implementations)', () => {
    expect(launcher.patches).toEqual({ mode: 'patched', hotPaths: true });
    expect(stock.patches).toEqual({ mode: 'stock', hotPaths: false });
  });

  it('standard queue: delays, visibility and its changes, receive counts, stale and invalid handles, redrive to the DLQ', async () => {
    // Prepare
    const run = await lockstep('std');
    const all = countsOf(['source', 'dlq']);

    // Act
    await run.step('send 6, two delayed 1 s, one with attributes', (s) =>
      s.sqs
        .send(
          new SendMessageBatchCommand({
            QueueUrl: s.urls.source,
            Entries: [
              { Id: 'a', MessageBody: 'm-a' },
              { Id: 'b', MessageBody: 'm-b', DelaySeconds: 1 },
              {
                Id: 'c',
                MessageBody: 'm-c',
                MessageAttributes: { kind: { DataType: 'String', StringValue: 'poison' } },
              },
              { Id: 'd', MessageBody: 'm-d', DelaySeconds: 1 },
              { Id: 'e', MessageBody: 'm-e' },
              { Id: 'f', MessageBody: 'm-f' },
            ],
          }),
        )
        .then((r) => ({ ok: (r.Successful ?? []).map((x) => x.Id).sort(), failed: r.Failed ?? [] })),
    );
    await run.step('counts', all, { wait: false });
    await run.step('receive 2 (queue visibility 1 s)', (s) => ops.receive(s, 'source', 'r1', 2));
    await run.step('counts', all, { wait: false });
    await run.step('receive 10 with visibility 3 s', (s) => ops.receive(s, 'source', 'r2', 10, 3));
    await run.step('counts', all, { wait: false });
    await run.step('extend r1.1 to 3 s (and a bogus handle), make r1.0 visible now', async (s) => [
      await ops.changeVisibility(s, 'source', ['r1.1', 'nothing'], 3),
      await ops.changeVisibility(s, 'source', ['r1.0'], 0),
    ]);
    await run.step('counts', all, { wait: false });
    await run.step('receive 10: r1.0 again', (s) => ops.receive(s, 'source', 'r3', 10));
    for (let i = 0; i < 4; i++) {
      await run.step(`tick ${i}: counts`, all);
      await run.step(`tick ${i}: receive 10`, (s) => ops.receive(s, 'source', `t${i}`, 10, 1), { wait: false });
    }
    await run.step(
      'delete r3.0 with a stale handle (r1.0), then the current one, then twice',
      async (s) => [
        await ops.delete(s, 'source', ['r1.0']),
        await ops.delete(s, 'source', ['r3.0']),
        await ops.delete(s, 'source', ['r3.0']),
      ],
      { wait: false },
    );
    await run.step(
      'DeleteMessage with an invalid handle',
      (s) => s.sqs.send(new DeleteMessageCommand({ QueueUrl: s.urls.source, ReceiptHandle: 'x'.repeat(185) })),
      { wait: false },
    );
    await run.step(
      'ChangeMessageVisibility beyond 12 h',
      (s) =>
        s.sqs.send(
          new ChangeMessageVisibilityCommand({
            QueueUrl: s.urls.source,
            ReceiptHandle: s.handles.get('t3.0') ?? 'x',
            VisibilityTimeout: 43_201,
          }),
        ),
      { wait: false },
    );
    for (let i = 0; i < 3; i++) {
      await run.step(`redrive ${i}: receive 10 with visibility 0`, (s) => ops.receive(s, 'source', `z${i}`, 10, 0));
      await run.step(`redrive ${i}: counts`, all, { wait: false });
    }
    await run.step('the DLQ, in order', (s) => ops.receive(s, 'dlq', 'dlq', 10, 31));

    // Assess: every answer identical, step by step; and the sequence did what it is meant to exercise.
    expect(run.launcher).toEqual(run.stock);
    const flat = JSON.stringify(run.stock);
    expect(flat).toContain('"ApproximateReceiveCount":"3"');
    expect(flat).toContain('ReceiptHandleIsInvalid');
    expect(stepAnswer<unknown[]>(run.stock, 'the DLQ, in order').length).toBe(6);
  });

  it('FIFO queue: group hold-back while a message is in flight, content-based deduplication, redrive', async () => {
    // Prepare
    const run = await lockstep('fifo');
    const all = countsOf(['fifo', 'fifoDlq']);

    // Act
    await run.step('fifo: send A1 A2 B1, A1 again (deduplicated)', async (s) => {
      const send = (body: string, group: string) =>
        s.sqs.send(new SendMessageCommand({ QueueUrl: s.urls.fifo, MessageBody: body, MessageGroupId: group }));
      for (const [b, g] of [
        ['A1', 'A'],
        ['A2', 'A'],
        ['B1', 'B'],
        ['A1', 'A'],
      ] as const)
        await send(b, g);
      return 'sent';
    });
    await run.step('fifo: receive 1 (A1)', (s) => ops.receive(s, 'fifo', 'f1', 1));
    await run.step('fifo: receive 10 (B1 only: group A held back)', (s) => ops.receive(s, 'fifo', 'f2', 10), {
      wait: false,
    });
    await run.step('fifo: counts', all, { wait: false });
    await run.step('fifo: counts 0.67 s later', all);
    await run.step('fifo: receive 10 while A1 and B1 are in flight', (s) => ops.receive(s, 'fifo', 'f2b', 10), {
      wait: false,
    });
    await run.step('fifo: after A1 times out, receive 10', (s) => ops.receive(s, 'fifo', 'f3', 10));
    await run.step('fifo: counts', all);
    await run.step('fifo: delete A1 and B1', (s) => ops.delete(s, 'fifo', ['f3.0', 'f2.0']));
    await run.step('fifo: receive 10', (s) => ops.receive(s, 'fifo', 'f4', 10));
    for (let i = 0; i < 4; i++)
      await run.step(`fifo redrive ${i}: receive 10, counts`, async (s) => [
        await ops.receive(s, 'fifo', `fz${i}`, 10, 0),
        await all(s),
      ]);
    await run.step('fifo DLQ', (s) => ops.receive(s, 'fifoDlq', 'fdlq', 10, 31));

    // Assess
    expect(run.launcher).toEqual(run.stock);
    expect(
      stepAnswer<Array<{ body: string }>>(run.stock, 'fifo: receive 10 (B1 only: group A held back)').map(
        (m) => m.body,
      ),
    ).toEqual(['B1']);
    expect(stepAnswer<Array<{ body: string }>>(run.stock, 'fifo DLQ').map((m) => m.body)).toEqual(['A2']);
  });

  it('queue-level delay, retention and attributes: All, one by one, an unknown name', async () => {
    // Prepare
    const run = await lockstep('attr');
    const all = countsOf(['delayed']);

    // Act
    await run.step('delayed queue: send 3, counts', async (s) => {
      await s.sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: s.urls.delayed,
          Entries: ['x', 'y', 'z'].map((b) => ({ Id: b, MessageBody: b })),
        }),
      );
      return [await all(s), await ops.receive(s, 'delayed', 'dl0', 10)];
    });
    await run.step('delayed queue: still delayed', async (s) => [
      await all(s),
      await ops.receive(s, 'delayed', 'dl1', 10),
    ]);
    await run.step('delayed queue: set retention 60 s and delay 0, read All', async (s) => {
      await s.sqs.send(
        new SetQueueAttributesCommand({
          QueueUrl: s.urls.delayed,
          Attributes: { MessageRetentionPeriod: '60', DelaySeconds: '0' },
        }),
      );
      return ops.allAttributes(s, 'delayed');
    });
    await run.step('delayed queue: now visible', async (s) => [
      await all(s),
      await ops.receive(s, 'delayed', 'dl2', 10),
    ]);
    await run.step('attributes: All on every queue, names one by one, an unknown name', async (s) => [
      await Promise.all(['source', 'dlq', 'fifo', 'fifoDlq', 'delayed'].map((q) => ops.allAttributes(s, q))),
      await Promise.all(
        ['ApproximateNumberOfMessages', 'VisibilityTimeout', 'FifoQueue', 'DelaySeconds', 'MessageRetentionPeriod'].map(
          async (n) =>
            (await s.sqs.send(new GetQueueAttributesCommand({ QueueUrl: s.urls.fifo, AttributeNames: [n as never] })))
              .Attributes,
        ),
      ),
      await outcome(() =>
        s.sqs.send(
          new GetQueueAttributesCommand({ QueueUrl: s.urls.source, AttributeNames: ['NoSuchAttribute' as never] }),
        ),
      ),
    ]);

    // Assess
    expect(run.launcher).toEqual(run.stock);
    expect(JSON.stringify(stepAnswer(run.stock, 'delayed queue: now visible'))).toContain('"body":"x"');
  });

  it('a backlog of 200 drained under seeded random receives, deletes and visibility changes', async () => {
    // Prepare: the local bridge keeps up to 300 waiting per queue.
    const run = await lockstep('backlog');

    // Act. Each call that sets a short deadline is a step of its own, on the grid: stock moto
    // is slow with a backlog, so a second such call in the same step would run late there.
    await run.step('backlog: send 200 (no deadlines)', async (s) => {
      for (let i = 0; i < 20; i++) {
        await s.sqs.send(
          new SendMessageBatchCommand({
            QueueUrl: s.urls.backlog,
            Entries: Array.from({ length: 10 }, (_, j) => ({ Id: `e${j}`, MessageBody: `b-${i * 10 + j}` })),
          }),
        );
      }
      return ops.counts(s, 'backlog');
    });
    const random = prng(18);
    for (let i = 0; i < 10; i++) {
      const max = 1 + Math.floor(random() * 10);
      // Visible at once, or hidden past the test's end: no deadline of this test falls between two
      // calls, so a call the busy machine delays cannot land on the other side of one (the
      // standard-queue test covers short deadlines, on a queue small enough to answer fast).
      const visibility = [0, 31][Math.floor(random() * 2)]!;
      const deletes = [
        ...new Set(
          Array.from(
            { length: Math.floor(random() * 6) },
            () => `k${Math.floor(random() * (i + 1))}.${Math.floor(random() * 10)}`,
          ),
        ),
      ];
      const hide = `k${Math.floor(random() * (i + 1))}.${Math.floor(random() * 10)}`;
      await run.step(`backlog ${i}: receive ${max} (visibility ${visibility})`, (s) =>
        ops.receive(s, 'backlog', `k${i}`, max, visibility),
      );
      await run.step(`backlog ${i}: delete ${deletes.join(' ')}`, (s) => ops.delete(s, 'backlog', deletes), {
        wait: false,
      });
      // 31 s outlasts the test, so this call sets no deadline the grid must keep clear of.
      await run.step(`backlog ${i}: hide ${hide} for 31 s`, (s) => ops.changeVisibility(s, 'backlog', [hide], 31), {
        wait: false,
      });
      await run.step(`backlog ${i}: counts`, (s) => ops.counts(s, 'backlog'), { wait: false });
    }

    // Assess
    expect(run.launcher).toEqual(run.stock);
    expect(JSON.stringify(run.stock)).toContain('"ApproximateReceiveCount":"2"');
  });
});
