/**
 * `npm start`: the project's pipeline on the local emulator. Without arguments it replays
 * the built-in incident scenario; with `--events <file.jsonl>` a file of bridge envelopes.
 * See docs/local-run.md. Exit codes: 0 the run completed (whatever it found), 1 it could
 * not run, 2 bad arguments, 3 it gave up before the queues drained.
 */
import { parseArgs } from 'node:util';
import type { LogLevel } from '@aws-lambda-powertools/logger/types';
import { InvalidCatalogueEntryError } from '../lib/config/index.ts';
import { INCIDENT_ORDER, incidentScenario } from './local/incident-scenario.ts';

import { HandlerModuleError } from './local/local-consumers.ts';
import { LocalRunConfigError, runLocalPipeline } from './local/local-pipeline.ts';
import { LocalSigningKey } from './local/local-signing-key.ts';
import { ProgressDisplay } from './local/progress-display.ts';
import { type ReportContext, runSummary } from './local/replay-report.ts';
import { readableReport } from './local/run-report.ts';
import { InvalidTimeScaleError } from './local/time-scale.ts';
import { readTrafficFile, TrafficFileError } from './local/traffic-file.ts';

const USAGE = `Usage: npm start -- [options]

  (no --events)               replay the built-in incident scenario
  --events <file.jsonl>       replay a file of bridge envelopes, one per line
  --redeliver <probability>   deliver each message a second time with this probability (0..1)
  --consumers <n>             concurrent consumers per group, like Lambda's maximum concurrency (default 2)
  --groups <g1,g2>            consumer groups to run (default: every group of the catalogue)
  --seed <n>                  seed for redeliveries (default 1)
  --json                      last line of stdout: the JSON summary
  --keep                      leave the emulator running with its data; print its endpoint
  --time-scale <n>            divide RocketMQ's retry delays by n (default 600; 1 = real delays)
  --batch-size <n>            records per invocation (default 10)
  --batching-window-ms <n>    how long to gather a batch (default 0)
  --visibility-timeout <s>    local source queues' visibility timeout = function timeout (default 5)
  --max-run-seconds <n>       give up if the queues have not drained by then (default 600, plus 0.05
                              per copy: each message times the groups it goes to)
  --endpoint <url>            use a running emulator (e.g. one left by --keep) instead of starting one
  --prefix <name>             resource name prefix (default local-<random>)
  --log-level <level>         consumer log level printed on the console (Powertools; default SILENT);
                              INFO and up is shipped to the emulator's CloudWatch Logs either way
  --no-function-logs          do not ship the consumers' log lines (and skip the closing ops trace)
  --full-trace                print the closing ops trace of the incident's order whole, per group
  -h, --help`;

class UsageError extends Error {
  override readonly name = 'UsageError';
}

function parse() {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      events: { type: 'string' },
      redeliver: { type: 'string' },
      consumers: { type: 'string' },
      groups: { type: 'string' },
      seed: { type: 'string' },
      json: { type: 'boolean', default: false },
      keep: { type: 'boolean', default: false },
      'time-scale': { type: 'string' },
      'batch-size': { type: 'string' },
      'batching-window-ms': { type: 'string' },
      'visibility-timeout': { type: 'string' },
      'max-run-seconds': { type: 'string' },
      endpoint: { type: 'string' },
      prefix: { type: 'string' },
      'log-level': { type: 'string' },
      'no-function-logs': { type: 'boolean', default: false },
      'full-trace': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (positionals.length > 0) throw new UsageError(`unexpected argument: ${positionals[0]}`);
  const num = (name: string, value: string | undefined) => {
    if (value === undefined) return undefined;
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n)) throw new UsageError(`--${name} must be a number, got "${value}"`);
    return n;
  };
  return {
    help: values.help,
    events: values.events,
    json: values.json,
    keep: values.keep,
    endpoint: values.endpoint,
    prefix: values.prefix,
    logLevel: values['log-level'] ?? 'SILENT',
    functionLogs: !values['no-function-logs'],
    fullTrace: values['full-trace'],
    groups: values.groups
      ?.split(',')
      .map((g) => g.trim())
      .filter((g) => g !== ''),
    redeliverProbability: num('redeliver', values.redeliver),
    consumers: num('consumers', values.consumers),
    seed: num('seed', values.seed),
    timeScale: num('time-scale', values['time-scale']),
    batchSize: num('batch-size', values['batch-size']),
    batchingWindowMs: num('batching-window-ms', values['batching-window-ms']),
    visibilityTimeoutSeconds: num('visibility-timeout', values['visibility-timeout']),
    maxRunSeconds: num('max-run-seconds', values['max-run-seconds']),
  };
}

async function main(): Promise<number> {
  let args: ReturnType<typeof parse>;
  try {
    args = parse();
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  if (args.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  // Consumers log a JSON line per record and emit EMF metrics; on a console that drowns the report.
  process.env.POWERTOOLS_LOG_LEVEL = args.logLevel;
  process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

  // The run's envelope signing key: the scenario is judged as its bridge puts it on the queues, signed.
  const signing = new LocalSigningKey();
  const scenario = args.events ? undefined : incidentScenario({ seed: args.seed });
  const file = args.events ? await readTrafficFile(args.events) : undefined;
  const context: ReportContext = file
    ? { title: `Replay of ${args.events}`, phases: [{ name: 'replay', messages: file.messages }], input: file.account }
    : { title: scenario!.title, phases: signing.signed(scenario!.phases), focusOrderNo: scenario!.focusOrderNo };

  const progress = new ProgressDisplay();
  const run = await runLocalPipeline({
    phases: context.phases,
    signing,
    crashes: scenario?.crashes,
    groups: args.groups,
    consumers: args.consumers,
    batchSize: args.batchSize,
    batchingWindowMs: args.batchingWindowMs,
    timeScale: args.timeScale,
    visibilityTimeoutSeconds: args.visibilityTimeoutSeconds,
    redeliverProbability: args.redeliverProbability,
    seed: args.seed,
    endpoint: args.endpoint,
    // Kept for inspection: one endpoint for every service, as printed below.
    separateDynamoDb: !args.keep,
    prefix: args.prefix,
    maxRunMs: args.maxRunSeconds !== undefined ? args.maxRunSeconds * 1000 : undefined,
    onProgress: progress.update,
    // As deployed (applicationLogLevelV2 INFO): INFO and up reach the log group.
    ...(args.functionLogs
      ? {
          functionLogs: {
            logLevel: args.logLevel === 'SILENT' ? 'INFO' : (args.logLevel as LogLevel),
            echo: args.logLevel !== 'SILENT',
          },
        }
      : {}),
  }).finally(() => progress.done());

  const { result } = run;
  process.stdout.write(
    args.json
      ? `${JSON.stringify(runSummary(result, file?.account))}\n`
      : await readableReport(result, context, {
          crashes: scenario?.crashes,
          ...(scenario
            ? { facts: { incident: INCIDENT_ORDER }, trace: { order: INCIDENT_ORDER, full: args.fullTrace } }
            : {}),
        }),
  );

  if (args.keep) {
    const r = result.resources;
    const lines = [
      '',
      `Emulator kept running at ${result.endpoint} (Ctrl-C stops it and discards its data).`,
      `  export AWS_ENDPOINT_URL=${result.endpoint} AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1 AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local`,
      '  (the AWS CLI v1 reads neither AWS_REGION nor AWS_ENDPOINT_URL: hence AWS_DEFAULT_REGION and --endpoint-url)',
      `  aws --endpoint-url ${result.endpoint} sqs list-queues --queue-name-prefix ${r.prefix}`,
      `  aws --endpoint-url ${result.endpoint} dynamodb scan --table-name ${r.tables.ledger}`,
      `  re-run against it: npm start -- --endpoint ${result.endpoint} [--events file.jsonl]`,
      ...Object.entries(r.tables).map(([k, name]) => `  table ${k}: ${name}`),
      ...Object.entries(r.queues).flatMap(([g, q]) => [`  ${g}: ${q.source.url}`, `  ${g} DLQ: ${q.deadLetter.url}`]),
    ];
    // With --json the summary must stay the last line of stdout.
    (args.json ? process.stderr : process.stdout).write(`${lines.join('\n')}\n`);
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
  }
  await run.close();
  return result.completed ? 0 : 3;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    const badArgument = error instanceof LocalRunConfigError || error instanceof InvalidTimeScaleError;
    const known =
      badArgument ||
      error instanceof TrafficFileError ||
      error instanceof HandlerModuleError ||
      error instanceof InvalidCatalogueEntryError;
    process.stderr.write(
      `local run failed: ${known ? (error as Error).message : ((error as Error).stack ?? String(error))}\n`,
    );
    process.exitCode = badArgument ? 2 : 1;
  },
);
