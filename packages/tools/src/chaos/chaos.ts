/**
 * `npm run chaos`: a seeded workload with a seeded fault plan through the local path,
 * then the exactly-once invariants checked from the tables and queues. See
 * docs/reliability.md. Exit codes: 0 every invariant holds, 1 an invariant failed (or the
 * run could not start), 2 bad arguments, 3 the run stopped at its time limit before every
 * message was sent and settled, with no violation among what it could judge.
 */
import { parseArgs } from 'node:util';
import { LocalRunConfigError } from '../local/local-pipeline.ts';
import { ProgressDisplay } from '../local/progress-display.ts';
import { type ChaosResult, runChaos } from './chaos-run.ts';
import { InvalidWorkloadError } from './workload.ts';

const USAGE = `Usage: npm run chaos -- [options]

  --seed <n>              workload and fault plan seed (default 1)
  --messages <n>          messages the producers send, all kinds included, split evenly between the
                          groups' plug-ins (default 2000, at least 40)
  --consumers <n>         concurrent consumers per group (default 2)
  --time-scale <n>        divide RocketMQ's retry delays by n (default 600)
  --visibility-timeout <s> source queues' visibility timeout = function timeout (default 5; use more
                          for large runs, where the emulator's latency grows with the backlog)
  --max-run-seconds <n>   give up if the queues have not drained by then (default 10 min plus 50 ms
                          per copy: a message goes to every group of its topic)
  --endpoint <url>        use a running emulator instead of starting one
  --log-level <level>     consumers' log level (default SILENT)
  --json                  end the output with one JSON line (the summary)
  -h, --help`;

class UsageError extends Error {
  override readonly name = 'UsageError';
}

function parse(argv: string[]) {
  const { values } = parseArgs({
    args: argv,
    options: {
      seed: { type: 'string' },
      messages: { type: 'string' },
      consumers: { type: 'string' },
      'time-scale': { type: 'string' },
      'max-run-seconds': { type: 'string' },
      'visibility-timeout': { type: 'string' },
      endpoint: { type: 'string' },
      'log-level': { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  const integer = (name: string, value: string | undefined, fallback: number, min: number) => {
    if (value === undefined) return fallback;
    const n = Number(value);
    if (!Number.isInteger(n) || n < min) throw new UsageError(`--${name} must be an integer >= ${min}, got "${value}"`);
    return n;
  };
  return {
    help: values.help ?? false,
    json: values.json ?? false,
    seed: integer('seed', values.seed, 1, Number.MIN_SAFE_INTEGER),
    messages: integer('messages', values.messages, 2000, 40),
    consumers: integer('consumers', values.consumers, 2, 1),
    timeScale: integer('time-scale', values['time-scale'], 600, 1),
    maxRunMs:
      values['max-run-seconds'] === undefined
        ? undefined
        : integer('max-run-seconds', values['max-run-seconds'], 0, 1) * 1000,
    visibilityTimeoutSeconds: integer('visibility-timeout', values['visibility-timeout'], 5, 1),
    endpoint: values.endpoint,
    logLevel: values['log-level'] ?? 'SILENT',
  };
}

function render(r: ChaosResult): string {
  const o = r.outcomes;
  const crashPoints = Object.entries(r.plan.crashes).map(
    ([g, c]) => `${g} ${c.atCrashPoint.length} ${r.crashPointNames[g]}`,
  );
  const lines = [
    `Chaos run, seed ${r.summary.seed}: ${r.summary.messages} messages, ${r.run.settings.concurrency} consumer(s) per group, ${(r.wallMs / 1000).toFixed(1)} s`,
    ...(r.summary.completed
      ? []
      : [
          `INCOMPLETE: the run reached its time limit with ${r.summary.neverSent} message(s) never sent and ${r.summary.inFlight} still in the source queues; ` +
            `${r.invariants.notJudged} key(s) and dead letter(s) depending on them were not judged (neither lost nor delivered).`,
        ]),
    'Workload:',
    ...Object.entries(r.workload.compositions).map(([g, c]) => `  ${g}: ${figures(c)}`),
    `Faults: crash after commit armed ${Object.values(r.plan.crashes).reduce((n, c) => n + c.afterCommit.length, 0)}; crash points armed: ${crashPoints.join(', ')}; ` +
      `${r.faults.processCrashes} invocation(s) killed mid-way, ${r.faults.crashedAfterSettling} settled record(s) lost their ack, ${r.faults.injectedFailures} first attempt(s) failed on purpose; ` +
      `SDK: ${r.faults.sdk.throttle} throttles, ${r.faults.sdk.transactionConflict} TransactionConflicts, ${r.faults.sdk.unknownOutcome} unknown outcomes, ${r.faults.sdk.lostRequest} lost requests`,
    `Deliveries (counted at the pollers): ${r.summary.deliveries} = ${o.processed} processed + ${o.duplicatesSuppressed} duplicates + ${o.filtered} filtered + ${o.deadLettered} dead-lettered + ${o.retried} retried` +
      (r.summary.unaccounted === 0 ? '' : ` (${r.summary.unaccounted} unaccounted)`),
    ...Object.entries(r.perGroup).map(
      ([g, p]) =>
        `  ${g}: ${p.countedAtPoller} delivered, ${p.processed} processed, ${p.duplicatesSuppressed} duplicates, ${p.filtered} filtered, ${p.deadLettered} dead-lettered, ${p.retried} retried`,
    ),
    `From the tables and queues: ${r.invariants.doubleAwards} effects applied twice, ${r.invariants.lostAwards} lost, ` +
      `${r.invariants.deadLettered}/${r.invariants.expectedDeadLettered} dead letters with a reason (${r.invariants.repeatedDeadLetters} repeated copies), ${r.invariants.leftInSourceQueues} left in source queues`,
    ...Object.entries(r.invariants.groups).map(
      ([g, v]) =>
        `  ${g}: ${v.holds ? 'holds' : 'FAILS'}; ${figures(v.detail)}; ${v.deadLettered}/${v.expectedDeadLettered} dead letters`,
    ),
    ...outboxLines(r),
    ...(r.run.pollErrors + r.run.untrackedDepartures > 0
      ? [
          `Local run: ${r.run.pollErrors} poll(s) failed against the emulator; ${r.run.untrackedDepartures} message(s) left the queues unseen by the run's account (quiet then confirmed from SQS alone)`,
        ]
      : []),
    ...[...r.invariants.violations, ...r.outboxViolations].map((v) => `  VIOLATION: ${v}`),
    r.summary.invariantHolds
      ? 'Invariant holds.'
      : violated(r)
        ? 'INVARIANT FAILED.'
        : 'Run incomplete: nothing violated among what was judged; raise --max-run-seconds for a verdict.',
  ];
  return `${lines.join('\n')}\n`;
}

/** The outbox's figures and the relay's faults, when a group that publishes ran. */
function outboxLines(r: ChaosResult): string[] {
  const o = r.summary.outbox;
  if (!o) return [];
  const f = r.faults.relay;
  return [
    `Outbox: ${o.committed} events committed, ${o.relayed} relayed, ${o.pending} pending, ${o.failed} failed; ` +
      `${o.orphaned} orphaned, ${o.downstreamDouble} notified twice; relay faults: ${f.kills} killed between send and mark, ` +
      `${f.throttles} throttled sends, ${f.redeliveries} batches handed again`,
  ];
}

/** `{ balanceMismatches: 0, orders: 12 }` → `0 balance mismatches, 12 orders`. */
function figures(counts: Readonly<Record<string, number>>): string {
  return Object.entries(counts)
    .map(([name, n]) => `${n} ${name.replace(/[A-Z]/g, (c) => ` ${c.toLowerCase()}`)}`)
    .join(', ');
}

/** A violation among what could be judged (an incomplete run alone is not one). */
function violated(r: ChaosResult): boolean {
  return !r.invariants.holds || r.summary.unaccounted !== 0 || r.outboxViolations.length > 0;
}

async function main(argv: string[]): Promise<number> {
  let args: ReturnType<typeof parse>;
  try {
    args = parse(argv);
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  if (args.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  // One JSON log line per record would drown the report (and the JSON line).
  process.env.POWERTOOLS_LOG_LEVEL = args.logLevel;
  process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
  const progress = new ProgressDisplay();
  try {
    const result = await runChaos({ ...args, onProgress: progress.update }).finally(() => progress.done());
    process.stdout.write(render(result));
    if (args.json) process.stdout.write(`${JSON.stringify(result.summary)}\n`);
    if (result.summary.invariantHolds) return 0;
    return violated(result) ? 1 : 3;
  } catch (error) {
    process.stderr.write(`chaos run failed: ${(error as Error).message}\n`);
    return error instanceof InvalidWorkloadError || error instanceof LocalRunConfigError ? 2 : 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
