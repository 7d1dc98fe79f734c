import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MsgIdGenerator, writeEnvelope } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { describe, expect, inject, it } from 'vitest';
import { KeptRun, runCommand } from './spawned-commands.ts';

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

/** Runs the command itself, as a person would: `npx tsx packages/tools/src/local/local-run.ts …`. */
const localRun = (args: string[]) => runCommand('npx', ['tsx', 'packages/tools/src/local/local-run.ts', ...args]);

/** The AWS CLI on this machine when it is version 1 (it reads AWS_DEFAULT_REGION, not AWS_REGION, and no AWS_ENDPOINT_URL). */
function awsCliV1(): boolean {
  try {
    return execFileSync('aws', ['--version'], { encoding: 'utf8', stdio: 'pipe' }).startsWith('aws-cli/1.');
  } catch {
    return false;
  }
}

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

  it('prints the verdict first, the incident order in a compact trace, all within 80 lines of 120 columns', {
    timeout: 180_000,
  }, async () => {
    // Act
    const run = await localRun(['--endpoint', inject('emulatorEndpoint')]);

    // Assess: the shape a newcomer reads
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines.length, run.stdout).toBeLessThanOrEqual(80);
    expect(lines.filter((l) => l.length > 120)).toEqual([]);
    // The verdict first: what happened to user 88372, beside what the incident did.
    const head = lines.slice(0, 15).join('\n');
    expect(head).toContain('Verdict: exactly once held in all 4 groups');
    expect(head).toContain(
      'User 88372 was awarded 300 points once for SO202007051422310088 (1 ledger entry); the incident awarded 600.',
    );
    expect(head).toMatch(/point-consumer-group +once +once +2 +twice: 600 points/);
    // Its award announced through the outbox once, relayed, and the user told once.
    expect(head).toMatch(
      /Its award was announced once \(outbox event [0-9A-F]{4}…[0-9A-F]{4}, RELAYED\) and notified once\./,
    );
    expect(run.stdout).toMatch(/Outbox: 81 events committed, 81 relayed, 0 pending, 0 failed/);
    // Every group judged by its chaos plug-in, the points group and the two without a ledger alike.
    expect(run.stdout).toMatch(/point-consumer-group +HOLDS: orders 81, users 21/);
    expect(run.stdout).toMatch(/coupon-consumer-group +HOLDS: orders 81/);
    expect(run.stdout).toMatch(/order-status-consumer-group +HOLDS: orders 81, paid 71, finished 10/);
    // The injected crash is labelled as such, not as a failure.
    expect(run.stdout).toMatch(
      /Injected on purpose, not failures: a crash after commit, before the ack, in point-consumer-group \(its batch's \d+\s+records came back/,
    );
    expect(run.stdout).toContain('1 crashed on purpose (above)');
    expect(run.stdout).not.toMatch(/invocation\(s\) failed/);
    // Dead letters grouped by reason, with a count and one example.
    expect(run.stdout).toContain('3 × INVALID_PAYLOAD: body is not JSON  (every group that received it)');
    expect(run.stdout).toMatch(/ {10}e\.g\. msgId [0-9A-F]{32}: malformed body/);
    // The incident's order, traced as an operator would, one line per delivery.
    const trace = run.stdout.slice(run.stdout.indexOf("The incident's order as an operator traces it"));
    for (const group of ['point-consumer-group', 'coupon-consumer-group'])
      expect(trace).toContain(`  ${group}: applied by 0A1B…0001, 2 copies suppressed`);
    expect(trace).toContain('  order-status-consumer-group: applied by 0A1B…0001, 1 copy suppressed');
    expect(trace).toMatch(/ {5}\d\d:\d\d:\d\d\.\d{3} {2}0A1B…0002 {2}duplicate {2}a new msgId for the same key/);
    expect(trace).toMatch(/ledger \S+-point-ledger: user 88372 \+300 points, 1 award\(s\) in force, balance 300/);
    expect(trace).toContain('Findings: none.');
    // Progress went to stderr, one unit a line.
    for (const line of run.stderr.split('\n').filter((l) => /^\[\d+\.\d+s\]/.test(l)))
      expect(line).toMatch(/ \d+ of \d+ messages sent$|\] copies: \d+ in the queues, \d+ deliveries/);
  });

  it('judges a group without a ledger by its own effect, and prints the whole trace behind --full-trace', {
    timeout: 180_000,
  }, async () => {
    // Act
    const run = await localRun([
      '--groups',
      'coupon-consumer-group',
      '--full-trace',
      '--endpoint',
      inject('emulatorEndpoint'),
    ]);

    // Assess
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('Verdict: exactly once held in the group');
    expect(run.stdout).toMatch(/coupon-consumer-group +once +once +2 +twice\n/);
    expect(run.stdout).toMatch(/coupon-consumer-group +HOLDS: orders 81, 1 dead letter, 1 expected/);
    expect(run.stdout).not.toContain('Points:');
    expect(run.stdout).toContain(
      '$ npm run ops -- trace SO202007051422310088 --group coupon-consumer-group --user 88372   (exit 0)',
    );
    expect(run.stdout).toContain('2 copy(ies) suppressed as duplicates.');
  });

  it('reports a replayed file’s dead letters by reason, and says its groups’ invariants were not judged', {
    timeout: 180_000,
  }, async () => {
    // Prepare
    const file = trafficFile();

    // Act
    const run = await localRun([
      '--events',
      file.path,
      '--groups',
      POINTS,
      '--visibility-timeout',
      '30',
      '--endpoint',
      inject('emulatorEndpoint'),
    ]);

    // Assess
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('Not judged: a replayed file says what its messages are');
    expect(run.stdout).toContain('Dead-lettered (deliveries), by reason: 4');
    expect(run.stdout).toMatch(/ {6}1 × INVALID_PAYLOAD: /);
    expect(run.stdout).toMatch(/ {6}\d × INVALID_ENVELOPE: /);
    expect(run.stdout).toMatch(/e\.g\. (msgId|SQS message) \S+/);
    expect(run.stdout).toContain('Points: balance equals ledger for every user (9): HOLDS.');
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
      ...['tsx', 'packages/ops/src/command/ops.ts', 'dlq', 'list', '--json', '--group', POINTS],
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

  it('--keep prints an AWS CLI set-up that works with the CLI v1 too (AWS_DEFAULT_REGION, --endpoint-url)', {
    timeout: 180_000,
  }, async () => {
    // Act
    const kept = new KeptRun(['--keep', '--no-traffic', '--groups', POINTS]);
    try {
      const env = await kept.exported();

      // Assess: the environment it prints names the region both ways
      expect(env).toMatchObject({ AWS_REGION: 'us-east-1', AWS_DEFAULT_REGION: 'us-east-1' });
      const [command] = await kept.waitFor(/aws --endpoint-url \S+ sqs list-queues --queue-name-prefix \S+/);
      if (!awsCliV1()) return;
      // and the printed command, run by the CLI v1 with that environment alone, finds the stage's queues.
      const [, ...argv] = command.split(' ');
      const listed = execFileSync('aws', argv, {
        encoding: 'utf8',
        env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
      });
      expect(listed).toContain(`${argv.at(-1)}-${POINTS}`);
    } finally {
      kept.interrupt('group');
      await kept.exit();
      kept.kill();
    }
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
