import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseEnvelope } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { afterEach, describe, expect, it } from 'vitest';
import { type CommandRun, KeptRun, ROOT, runCommand, unreachable } from './spawned-commands.ts';

const SECTION = '## Rehearse the cutover locally';

/** The section's shell blocks, each as its commands (comments and blank lines left out). */
function sectionCommands(): string[][] {
  const doc = readFileSync(join(ROOT, 'docs/migration.md'), 'utf8');
  const start = doc.indexOf(SECTION);
  expect(start, `${SECTION} in docs/migration.md`).toBeGreaterThanOrEqual(0);
  const end = doc.indexOf('\n## ', start + SECTION.length);
  const section = doc.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) =>
    m[1]!
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '' && !line.startsWith('#')),
  );
}

/**
 * What the two example files make of the replay, read from the files themselves: a copy of a legacy
 * award (same user and points) is suppressed, one with other content is a conflict, an order the
 * legacy store never awarded is awarded here once, whatever copies of it arrive.
 */
function expectedFromExamples() {
  const [header, ...rows] = readFileSync(join(ROOT, 'examples/cutover/legacy-points.csv'), 'utf8').trim().split('\n');
  const column = header!.split(',');
  const legacy = new Map(
    rows.map((row) => {
      const cells = Object.fromEntries(row.split(',').map((cell, i) => [column[i], cell]));
      return [cells.order_no!, { userId: cells.user_id!, points: Number(cells.point) }];
    }),
  );
  const orders = readFileSync(join(ROOT, 'examples/cutover/after-cutover.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(parseEnvelope(line).body) as { orderNo: string; userId: number; points: number });
  const conflicts = orders.filter((o) => {
    const award = legacy.get(o.orderNo);
    return award !== undefined && (award.userId !== String(o.userId) || award.points !== o.points);
  });
  const fresh = new Map(orders.filter((o) => !legacy.has(o.orderNo)).map((o) => [o.orderNo, o]));
  const awarded: Record<string, number> = {};
  for (const o of fresh.values()) awarded[o.userId] = (awarded[o.userId] ?? 0) + o.points;
  return {
    legacyRows: legacy.size,
    delivered: orders.length,
    processed: fresh.size,
    deadLettered: conflicts.length,
    conflicts: conflicts.map((o) => o.orderNo),
    awarded,
  };
}

/**
 * Each command's result, judged by what the command is: the import, the replay, the DLQ, the
 * audit, the trace. Returns which it was.
 */
function checkStep(command: string, run: CommandRun, expected: ReturnType<typeof expectedFromExamples>): string {
  const output = `$ ${command}\n${run.stdout}\n${run.stderr}`;
  expect(run.code, output).toBe(0);
  if (command.includes(' migrate import ')) {
    expect(run.stdout, output).toMatch(new RegExp(`\\nimported +${expected.legacyRows}\\n`));
    return 'import';
  }
  if (command.startsWith('npm start ')) {
    const summary = JSON.parse(run.stdout.trim().split('\n').pop()!);
    expect(summary, output).toMatchObject({
      delivered: expected.delivered,
      processed: expected.processed,
      duplicatesSuppressed: expected.delivered - expected.processed - expected.deadLettered,
      deadLettered: expected.deadLettered,
      invariantHolds: true,
      completed: true,
      stage: { prefix: 'rehearsal', reused: 7 }, // 4 tables, the points group's outbox table, its 2 queues
      captureTimes: { mode: 'rebased' },
    });
    // Only new orders are awarded: no legacy order, and no conflict.
    expect(summary.awarded, output).toEqual(expected.awarded);
    return 'replay';
  }
  if (command.includes(' dlq list ')) {
    expect(run.stdout, output).toContain(
      `Dead letters in rehearsal-point-consumer-group-dlq: ${expected.deadLettered}`,
    );
    for (const orderNo of expected.conflicts) expect(run.stdout, output).toContain(`PAYLOAD_CONFLICT: key ${orderNo}`);
    return 'dlq';
  }
  if (command.includes(' audit ')) {
    expect(run.stdout, output).toContain(`Read ${expected.legacyRows} legacy awards`);
    expect(run.stdout, output).toContain('No order is awarded in both systems.');
    return 'audit';
  }
  if (command.includes(' trace ')) {
    expect(run.stdout, output).toContain('No delivery applied the effect; 1 copy(ies) suppressed as duplicates.');
    expect(run.stdout, output).toContain('the legacy consumer processed it (imported record)');
    expect(run.stdout, output).toContain('no entry of the order');
    return 'trace';
  }
  throw new Error(`the rehearsal section has a command this test does not know how to judge: ${command}`);
}

describe('docs/migration.md, "Rehearse the cutover locally", run as written', () => {
  let kept: KeptRun | undefined;
  afterEach(() => kept?.kill());

  it('keeps a stage, imports the legacy CSV, replays the copies and new orders: only new orders awarded, the conflict dead-lettered', {
    timeout: 600_000,
  }, async () => {
    // Prepare: the section's two blocks, the first terminal's and the second's
    const [first, second] = sectionCommands();
    expect(first).toHaveLength(1);
    expect(first![0]).toMatch(/^npm start -- /);
    const expected = expectedFromExamples();
    const started = Date.now();

    // Act: the first terminal, then what a person pastes into the second
    kept = new KeptRun(first![0]!.replace(/^npm start -- /, '').split(' '));
    const environment = await kept.exported();
    const runs: Array<[string, CommandRun]> = [];
    for (const command of second!) runs.push([command, await runCommand('sh', ['-c', command], environment)]);
    kept.interrupt('group');

    // Assess
    const steps = runs.map(([command, run]) => checkStep(command, run, expected));
    expect(steps).toEqual(['import', 'replay', 'dlq', 'audit', 'trace']);
    expect(await kept.exit()).toBe(0);
    expect(await kept.groupGone()).toBe(true);
    expect(await unreachable(environment.AWS_ENDPOINT_URL!)).toBe(true);
    process.stdout.write(`cutover rehearsal: ${Math.round((Date.now() - started) / 100) / 10} s\n`);
  });
});
