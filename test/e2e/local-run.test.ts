import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { MsgIdGenerator, writeEnvelope } from '../../lib/rocketmq/index.ts';
import { runCommand } from './spawned-commands.ts';

const POINTS = 'point-consumer-group';

interface Summary {
  delivered: number;
  processed: number;
  duplicatesSuppressed: number;
  filtered: number;
  deadLettered: number;
  retried: number;
  groups: Record<
    string,
    {
      delivered: number;
      processed: number;
      duplicatesSuppressed: number;
      filtered: number;
      deadLettered: number;
      retried: number;
    }
  >;
  awarded: Record<string, number>;
  balances: Record<string, number>;
  invariantHolds: boolean;
  bridge: { enqueued: number; redelivered: number; unrouted: number; rejected: number };
  input?: { lines: number; envelopes: number; badLines: number; blankLines: number };
  deadLetterQueue: number;
  stage: { prefix: string; reused: number };
  captureTimes?: { mode: string; shiftMs: number; messages: number; earliest?: string; latest?: string };
  completed: boolean;
  neverSent: number;
  inFlight: number;
}

/** Runs the command itself, as a person would: `npx tsx scripts/local-run.ts …`. */
const localRun = (args: string[]) => runCommand('npx', ['tsx', 'scripts/local-run.ts', ...args]);

function lastJsonLine(stdout: string): Summary {
  const lines = stdout.trimEnd().split('\n');
  return JSON.parse(lines[lines.length - 1]!) as Summary;
}

/**
 * A file of bridge envelopes with every kind of trouble, and what the points group must
 * make of it, computed from the file's own content (not from the consumer's code).
 */
function trafficFile() {
  const ids = new MsgIdGenerator('0A000001', 0x0101);
  const lines: string[] = [];
  const orders: Array<{ orderNo: string; userId: string; points: number; line: string }> = [];
  const envelope = (body: string, tags: string, topic = 'ORDER_TOPIC') =>
    writeEnvelope({ topic, msgId: ids.next(), tags, body });
  for (let i = 0; i < 40; i++) {
    const order = {
      orderNo: `SO2024010112000${String(i).padStart(5, '0')}`,
      userId: `u${(i * 7) % 9}`,
      points: 5 + ((i * 37) % 200),
    };
    const line = envelope(JSON.stringify(order), 'PAID');
    orders.push({ ...order, line });
    lines.push(line);
  }
  // The bridge delivered some messages twice: the same line, same msgId.
  for (const o of orders.slice(3, 11)) lines.push(o.line);
  // The application re-sent some orders after a timeout: new msgId, same content.
  for (const o of orders.slice(20, 26))
    lines.push(envelope(JSON.stringify({ orderNo: o.orderNo, userId: o.userId, points: o.points }), 'PAID'));
  // Other tags of the topic: the points group subscribes to PAID only.
  for (const o of orders.slice(0, 5))
    lines.push(envelope(JSON.stringify({ orderNo: o.orderNo, status: 'FINISHED' }), 'FINISHED'));
  lines.push(
    envelope(JSON.stringify({ orderNo: 'SO-X1' }), 'CANCELLED'),
    envelope(JSON.stringify({ orderNo: 'SO-X2' }), 'CREATED'),
  );
  // Bad lines: not JSON, JSON that is not an envelope, an envelope with an invalid msgId.
  // The writer refuses an invalid msgId, so that line is a valid envelope edited the way a broken producer would send
  // it.
  const badMsgId = JSON.parse(envelope('{}', 'PAID'));
  badMsgId.data.msgId = 'not-a-msg-id';
  lines.push('{"specversion":"1.0", truncated', JSON.stringify({ hello: 'world' }), JSON.stringify(badMsgId));
  // A valid envelope whose body breaks the points schema.
  lines.push(envelope(JSON.stringify({ orderNo: 'SO-NEG', userId: 'u1', points: -5 }), 'PAID'));
  // A topic nobody here subscribes to.
  lines.push(envelope(JSON.stringify({ userId: 'u1' }), 'REGISTERED', 'USER_TOPIC'));
  // Interleave deterministically so duplicates are not always adjacent to their originals.
  const shuffled = lines
    .map((l, i) => ({ l, k: (i * 7919) % 97 }))
    .sort((a, b) => a.k - b.k)
    .map((x) => x.l);
  shuffled.splice(10, 0, '   ');
  const dir = mkdtempSync(join(tmpdir(), 'local-run-'));
  const path = join(dir, 'traffic.jsonl');
  writeFileSync(path, `${shuffled.join('\n')}\n`);

  const awarded: Record<string, number> = {};
  for (const o of orders) awarded[o.userId] = (awarded[o.userId] ?? 0) + o.points;
  return {
    path,
    awarded,
    expected: {
      routed: lines.length - 1,
      processed: 40,
      duplicatesSuppressed: 8 + 6,
      filtered: 5 + 2,
      deadLettered: 3 + 1,
      unrouted: 1,
      badLines: 3,
      blankLines: 1,
    },
  };
}

const JULY_5_2020 = Date.UTC(2020, 6, 5, 14, 22, 31, 117);

/**
 * Paid orders as a capture of a production queue holds them: stored at `storedFrom` and after,
 * each carrying the production bridge's signature (which the local bridge's key does not verify).
 */
function captureFile(storedFrom: number) {
  const ids = new MsgIdGenerator('0A000003', 0x0303);
  const awarded: Record<string, number> = {};
  const lines = Array.from({ length: 30 }, (_, i) => {
    const stored = storedFrom + i * 137;
    const order = { orderNo: `SO20200705142231${String(i).padStart(4, '0')}`, userId: `u${i % 4}`, points: 5 + i };
    awarded[order.userId] = (awarded[order.userId] ?? 0) + order.points;
    const envelope = JSON.parse(
      writeEnvelope({
        topic: 'ORDER_TOPIC',
        msgId: ids.next(stored),
        tags: 'PAID',
        keys: [order.orderNo],
        body: JSON.stringify(order),
        bornTimestamp: stored - 4,
        storeTimestamp: stored,
      }),
    );
    return JSON.stringify({ ...envelope, signature: 'hmac-sha256:cHJvZHVjdGlvbiBrZXk' });
  });
  const path = join(mkdtempSync(join(tmpdir(), 'capture-')), 'capture.jsonl');
  writeFileSync(path, `${lines.join('\n')}\n`);
  return { path, awarded };
}

// Concurrent: each test is a separate command on its own resources, and mostly waits
// (the scenario's retry delays and visibility timeouts).
describe.concurrent('npm start (the local run), driven as a command', () => {
  it('replays a file with duplicates, re-sends, filtered tags and bad lines, and the JSON summary matches the file', {
    timeout: 180_000,
  }, async () => {
    // Prepare
    const file = trafficFile();

    // Act: its own emulator, like a newcomer's first run; a long visibility timeout so a slow shared machine cannot
    // turn a batch into a retry.
    const run = await localRun([
      '--events',
      file.path,
      '--json',
      '--groups',
      POINTS,
      '--consumers',
      '2',
      '--visibility-timeout',
      '30',
    ]);

    // Assess
    expect(run.code, run.stderr).toBe(0);
    const s = lastJsonLine(run.stdout);
    const e = file.expected;
    expect(s).toMatchObject({
      delivered: e.routed,
      processed: e.processed,
      duplicatesSuppressed: e.duplicatesSuppressed,
      filtered: e.filtered,
      deadLettered: e.deadLettered,
      retried: 0,
    });
    expect(s.groups[POINTS]).toMatchObject({
      delivered: e.routed,
      processed: e.processed,
      duplicatesSuppressed: e.duplicatesSuppressed,
      filtered: e.filtered,
      deadLettered: e.deadLettered,
    });
    expect(s.awarded).toEqual(file.awarded);
    expect(s.balances).toEqual(file.awarded);
    expect(s.invariantHolds).toBe(true);
    expect(s.input).toEqual({
      lines: e.routed + e.unrouted + e.blankLines,
      envelopes: e.routed + e.unrouted - e.badLines,
      badLines: e.badLines,
      blankLines: e.blankLines,
    });
    expect(s.bridge).toMatchObject({ unrouted: e.unrouted, redelivered: 0, rejected: 0 });
    expect(s.deadLetterQueue).toBe(e.deadLettered);
    expect(s.completed).toBe(true);
  });

  it('with redeliveries and more consumers, awards each order once and the account balances', {
    timeout: 180_000,
  }, async () => {
    // Prepare
    const file = trafficFile();

    // Act: against the suite's emulator, with injected bridge redeliveries.
    const run = await localRun([
      '--events',
      file.path,
      '--json',
      '--groups',
      POINTS,
      '--redeliver',
      '0.5',
      '--seed',
      '7',
      '--consumers',
      '4',
      '--visibility-timeout',
      '30',
      '--endpoint',
      inject('emulatorEndpoint'),
    ]);

    // Assess
    expect(run.code, run.stderr).toBe(0);
    const s = lastJsonLine(run.stdout);
    expect(s.bridge.redelivered).toBeGreaterThan(10);
    expect(s.delivered).toBe(file.expected.routed + s.bridge.redelivered);
    expect(s.processed).toBe(file.expected.processed);
    expect(s.processed + s.duplicatesSuppressed + s.filtered + s.deadLettered).toBe(s.delivered - s.retried);
    expect(s.duplicatesSuppressed).toBeGreaterThan(file.expected.duplicatesSuppressed);
    expect(s.awarded).toEqual(file.awarded);
    expect(s.balances).toEqual(file.awarded);
    expect(s.invariantHolds).toBe(true);
  });

  it('with no arguments replays the incident: the order is awarded once, the crash and the malformed message are accounted for', {
    timeout: 180_000,
  }, async () => {
    // Act
    const run = await localRun(['--json']);

    // Assess
    expect(run.code, run.stderr).toBe(0);
    const s = lastJsonLine(run.stdout);
    expect(s.awarded['88372']).toBe(300);
    expect(s.balances['88372']).toBe(300);
    expect(s.invariantHolds).toBe(true);
    const points = s.groups[POINTS]!;
    expect(points.deadLettered).toBe(1);
    // Two extra copies of the incident order, 25 replayed by the rebalance (3 of them filtered), and the crashed batch
    // again.
    expect(points.duplicatesSuppressed).toBeGreaterThanOrEqual(2 + 22 + 1);
    expect(points.processed + points.duplicatesSuppressed + points.filtered + points.deadLettered).toBe(
      points.delivered - points.retried,
    );
    expect(s).toMatchObject({ completed: true, neverSent: 0, inFlight: 0 });
  });

  it('says a run cut short by its time limit is incomplete, how much was never sent or still in flight, and exits 3', {
    timeout: 180_000,
  }, async () => {
    // Prepare: the incident's later phases wait for quiet, and its crashed batch is invisible for 5 s.
    // Act
    const run = await localRun(['--json', '--max-run-seconds', '3', '--endpoint', inject('emulatorEndpoint')]);

    // Assess
    expect(run.code, run.stderr).toBe(3);
    const s = lastJsonLine(run.stdout);
    expect(s.completed).toBe(false);
    expect(s.neverSent).toBeGreaterThan(0);
    expect(s.inFlight).toBeLessThanOrEqual(s.bridge.enqueued);
  });

  it('prints a readable report without --json, ending with ops trace of the incident order per group', {
    timeout: 180_000,
  }, async () => {
    // Act
    const run = await localRun(['--endpoint', inject('emulatorEndpoint')]);

    // Assess
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('Order SO202007051422310088, delivery by delivery');
    expect(run.stdout).toContain('INVALID_PAYLOAD');
    expect(run.stdout).toMatch(/Balance equals ledger for every user \(\d+\): HOLDS/);
    expect(run.stdout).toMatch(/Function logs: \d+ JSON lines shipped to \/aws\/lambda\/local-\w+-points-consumer/);
    // The traces read the shipped log lines back through FilterLogEvents: each group's story of the order.
    const traces = run.stdout.slice(run.stdout.indexOf("The incident's order, as an operator traces it"));
    const story = (group: string) => {
      const at = traces.indexOf(`trace SO202007051422310088 --group ${group} --user 88372   (exit 0)`);
      expect(at, `${group}'s trace`).toBeGreaterThan(0);
      return traces.slice(at, traces.indexOf('Findings:', at));
    };
    for (const group of ['point-consumer-group', 'coupon-consumer-group']) {
      const text = story(group);
      expect(text.match(/ applied {4}applied the effect/g)).toHaveLength(1);
      expect(text).toContain('the same msgId again (a redelivery)');
      expect(text).toContain('a new msgId for the same key (an application re-send; applied by ');
      expect(text).toContain('2 copy(ies) suppressed as duplicates.');
    }
    // Its FIFO queue absorbed the same-msgId copy; the re-send met the order's advanced state.
    const status = story('order-status-consumer-group');
    expect(status.match(/ applied {4}applied the effect/g)).toHaveLength(1);
    expect(status).toContain('the state has already moved on');
    expect(story('point-consumer-group')).toContain(
      'Balance effect for user 88372: +300 points, 1 award(s) in force; balance now 300.',
    );
  });

  it("replays a capture stored in 2020 as traffic arriving now: it awards what the same capture with today's times awards", {
    timeout: 240_000,
  }, async () => {
    // Prepare: the same orders, captured in 2020 and a minute ago
    const old = captureFile(JULY_5_2020);
    const recent = captureFile(Date.now() - 60_000);
    const replay = (path: string) =>
      localRun(['--events', path, '--json', '--visibility-timeout', '30', '--endpoint', inject('emulatorEndpoint')]);

    // Act
    const [then, now] = await Promise.all([replay(old.path), replay(recent.path)]);

    // Assess: before, every copy of the 2020 capture was dead-lettered as PAST_REDRIVE_HORIZON
    expect(then.code, then.stderr).toBe(0);
    expect(now.code, now.stderr).toBe(0);
    const [a, b] = [lastJsonLine(then.stdout), lastJsonLine(now.stdout)];
    expect(a.awarded).toEqual(old.awarded);
    expect(b.awarded).toEqual(old.awarded);
    expect(a.balances).toEqual(old.awarded);
    for (const group of Object.keys(b.groups)) expect(a.groups[group], group).toEqual(b.groups[group]);
    expect(a).toMatchObject({ deadLettered: 0, deadLetterQueue: 0, completed: true });
    expect(a.captureTimes).toMatchObject({
      mode: 'rebased',
      messages: 30,
      earliest: new Date(JULY_5_2020 - 4).toISOString(),
      latest: new Date(JULY_5_2020 + 29 * 137).toISOString(),
    });
    expect(a.captureTimes!.shiftMs).toBeGreaterThan(Date.now() - JULY_5_2020 - 600_000);
  });

  it("with --original-times keeps a capture's times, so every copy past its group's redrive horizon is dead-lettered", {
    timeout: 240_000,
  }, async () => {
    // Prepare
    const old = captureFile(JULY_5_2020);
    const endpoint = inject('emulatorEndpoint');

    // Act
    const run = await localRun(['--events', old.path, '--original-times', '--json', '--endpoint', endpoint]);
    const s = lastJsonLine(run.stdout);
    const letters = await runCommand('npx', [
      ...['tsx', 'scripts/ops.ts', 'dlq', 'list', '--json', '--group', POINTS],
      ...['--endpoint', endpoint, '--prefix', s.stage.prefix],
    ]);

    // Assess
    expect(run.code, run.stderr).toBe(0);
    expect(s.captureTimes).toMatchObject({ mode: 'as-captured', shiftMs: 0 });
    expect(s.awarded).toEqual({});
    for (const group of [POINTS, 'coupon-consumer-group'])
      expect(s.groups[group], group).toMatchObject({ delivered: 30, processed: 0, deadLettered: 30 });
    // A state transition keeps no dedup record that could expire: the status group has no horizon.
    expect(s.groups['order-status-consumer-group']).toMatchObject({ processed: 30, deadLettered: 0 });
    const codes = (JSON.parse(letters.stdout) as { messages: Array<{ failure?: { code: string } }> }).messages.map(
      (m) => m.failure?.code,
    );
    expect(codes).toEqual(Array(30).fill('PAST_REDRIVE_HORIZON'));
  });

  it('exits non-zero when it cannot run: a missing file, a bad argument', { timeout: 120_000 }, async () => {
    // Act
    const missing = await localRun(['--events', '/nonexistent/traffic.jsonl', '--json']);
    const bad = await localRun(['--consumers', 'many']);

    // Assess
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain('cannot read /nonexistent/traffic.jsonl');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--consumers must be a number');
  });
});
