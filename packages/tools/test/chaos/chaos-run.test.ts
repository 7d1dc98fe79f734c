import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { CONSUMER_GROUPS } from '@rocketmq-lambda/runtime/config/index.ts';
import { describe, expect, inject, it } from 'vitest';
import { runChaos } from '../../src/chaos/chaos-run.ts';
import { loadChaosPlugins } from '../../src/chaos/plugin-discovery.ts';
import { composeWorkload } from '../../src/chaos/workload.ts';

const ROOT = fileURLToPath(new URL('../../../..', import.meta.url));
process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';
process.env.POWERTOOLS_METRICS_DISABLED = 'true';

// Both suites run concurrently: each run is mostly waiting (retry delays, crashed batches'
// visibility timeouts, quiet between phases), and the file is on the suite's critical path.
describe.concurrent('chaos run (seed 20240101, 1,000 messages, 2 consumers per group)', () => {
  it('keeps every invariant under the seeded fault plan, checked from the tables and queues', async () => {
    // Prepare: the seeded workload and fault plan, on fresh resources of the shared emulator.
    const seed = 20240101;

    // Act
    const r = await runChaos({
      seed,
      messages: 1000,
      consumers: 2,
      endpoint: inject('emulatorEndpoint'),
      prefix: `chaos${randomUUID().slice(0, 8)}`,
    });

    // Assess: the invariants, and that the plan's faults really happened.
    expect(r.invariants.violations).toEqual([]);
    expect(r.summary).toMatchObject({
      seed,
      messages: 1000,
      completed: true,
      neverSent: 0,
      inFlight: 0,
      doubleAwards: 0,
      lostAwards: 0,
      unaccounted: 0,
      invariantHolds: true,
    });
    expect(r.summary.deadLettered).toBe(r.summary.expectedDeadLettered);
    expect(r.summary.expectedDeadLettered).toBeGreaterThan(0);
    // Every message goes to the three groups of ORDER_TOPIC but the rebalance replay (points only) and the
    // notification plug-in's POINTS_TOPIC share (its group only); some come back again.
    const replayed = r.workload.compositions['point-consumer-group']!.replayed!;
    const points = Object.values(r.workload.compositions['notification-consumer-group']!).reduce((a, b) => a + b, 0);
    expect(r.summary.deliveries).toBeGreaterThan((r.summary.messages - replayed - points) * 3 + replayed + points);
    expect(Object.keys(r.summary.groups)).toEqual(CONSUMER_GROUPS.map((g) => g.group));
    expect(Object.values(r.summary.groups).every((g) => g.invariantHolds && g.deliveries > 0)).toBe(true);
    // The orderly group: orders finished in producer order although PAIDs failed on purpose
    // ahead of their FINISHED, and its crash point fired.
    const status = r.summary.groups['order-status-consumer-group']!.detail;
    expect(status).toMatchObject({ appliedOutOfOrder: 0, overtaken: 0, illegalTransitionDeadLetters: 0 });
    expect(status.finished).toBeGreaterThan(0);
    expect(r.faults.injectedFailures).toBeGreaterThan(0);
    expect(r.plan.crashes['order-status-consumer-group']!.atCrashPoint.length).toBeGreaterThan(0);
    expect(r.faults.processCrashes).toBeGreaterThan(0);
    expect(r.faults.crashedAfterSettling).toBeGreaterThan(0);
    expect(r.faults.sdk.throttle + r.faults.sdk.unknownOutcome + r.faults.sdk.lostRequest).toBeGreaterThan(0);
    expect(r.outcomes.duplicatesSuppressed).toBeGreaterThan(0);
    expect(r.outcomes.filtered).toBeGreaterThan(0);
    // The outbox: one event per award, all relayed, none orphaned, no user told twice, under the relay's faults.
    expect(r.outboxViolations).toEqual([]);
    const outbox = r.summary.outbox!;
    expect(outbox).toMatchObject({ pending: 0, failed: 0, orphaned: 0, downstreamDouble: 0, holds: true });
    expect(outbox.committed).toBeGreaterThan(0);
    expect(outbox.relayed).toBe(outbox.committed);
    expect(r.faults.relay.kills).toBeGreaterThan(0);
    expect(r.faults.relay.throttles).toBeGreaterThan(0);
    expect(r.faults.relay.redeliveries).toBeGreaterThan(0);
  }, 400_000);

  it('derives the same workload from the same seed', async () => {
    // Prepare
    const plugins = [...(await loadChaosPlugins(CONSUMER_GROUPS)).values()];

    // Act
    const a = composeWorkload(plugins, { seed: 5, messages: 200 });
    const b = composeWorkload(plugins, { seed: 5, messages: 200 });
    const c = composeWorkload(plugins, { seed: 6, messages: 200 });

    // Assess
    expect(a.phases.map((p) => p.messages.map((m) => m.body))).toEqual(
      b.phases.map((p) => p.messages.map((m) => m.body)),
    );
    expect(a.phases.flatMap((p) => p.messages).length).toBe(200);
    expect(c.phases[0]!.messages[0]!.body).not.toBe(a.phases[0]!.messages[0]!.body);
  });
});

describe.concurrent('npm run chaos', () => {
  it('ends with the JSON summary line and exits 0 when the invariants hold; refuses bad arguments with exit 2', async () => {
    // Prepare
    const run = (args: string[]) =>
      new Promise<{ code: number; stdout: string }>((resolve) =>
        execFile(
          'npx',
          ['tsx', 'packages/tools/src/chaos/chaos.ts', ...args],
          { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 },
          (error, stdout) => resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout }),
        ),
      );

    // Act
    const ok = await run([
      '--seed',
      '3',
      '--messages',
      '60',
      '--consumers',
      '1',
      '--json',
      '--endpoint',
      inject('emulatorEndpoint'),
    ]);
    const bad = await run(['--messages', 'lots']);

    // Assess
    const last = JSON.parse(ok.stdout.trimEnd().split('\n').at(-1)!);
    expect(Object.keys(last)).toEqual([
      'seed',
      'messages',
      'completed',
      'neverSent',
      'inFlight',
      'deliveries',
      'doubleAwards',
      'lostAwards',
      'unaccounted',
      'deadLettered',
      'expectedDeadLettered',
      'invariantHolds',
      'groups',
      'outbox',
    ]);
    expect(Object.keys(last.groups)).toEqual(CONSUMER_GROUPS.map((g) => g.group));
    expect(Object.keys(last.outbox)).toEqual([
      'committed',
      'relayed',
      'pending',
      'failed',
      'orphaned',
      'downstreamDouble',
      'holds',
    ]);
    expect(last).toMatchObject({
      seed: 3,
      messages: 60,
      completed: true,
      neverSent: 0,
      inFlight: 0,
      doubleAwards: 0,
      lostAwards: 0,
      unaccounted: 0,
      invariantHolds: true,
    });
    expect(ok.code).toBe(0);
    expect(bad.code).toBe(2);
  }, 240_000);

  it('reports a run cut short by its time limit as incomplete (exit 3), never as lost awards', async () => {
    // Prepare: 600 messages cannot all be sent and settled within 5 s: the later phases wait
    // for quiet, and a crashed batch alone is invisible for the 5 s visibility timeout.
    const run = (args: string[]) =>
      new Promise<{ code: number; stdout: string }>((resolve) =>
        execFile(
          'npx',
          ['tsx', 'packages/tools/src/chaos/chaos.ts', ...args],
          { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 },
          (error, stdout) => resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout }),
        ),
      );

    // Act
    const cut = await run([
      '--seed',
      '4',
      '--messages',
      '600',
      '--consumers',
      '1',
      '--max-run-seconds',
      '5',
      '--json',
      '--endpoint',
      inject('emulatorEndpoint'),
    ]);

    // Assess: the summary says what did not happen, and nothing unsent or in flight counts as lost.
    const last = JSON.parse(cut.stdout.trimEnd().split('\n').at(-1)!);
    expect(cut.code).toBe(3);
    expect(last).toMatchObject({
      seed: 4,
      messages: 600,
      completed: false,
      doubleAwards: 0,
      lostAwards: 0,
      unaccounted: 0,
      invariantHolds: false,
    });
    expect(last.neverSent).toBeGreaterThan(0);
    expect(cut.stdout).toContain('INCOMPLETE');
    expect(cut.stdout).not.toContain('VIOLATION');
  }, 240_000);
});
