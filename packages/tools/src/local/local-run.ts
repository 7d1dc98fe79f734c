/**
 * `npm start`: the project's pipeline on the local emulator. Without arguments it replays
 * the built-in incident scenario; with `--events <file.jsonl>` a file of bridge envelopes.
 * See docs/local-run.md. Exit codes: 0 the run completed (whatever it found), 1 it could
 * not run, 2 bad arguments, 3 it gave up before the queues drained.
 */
import type { LogLevel } from '@aws-lambda-powertools/logger/types';
import { CommandLineError, parseCommandLine } from '@rocketmq-lambda/ops/command/command-line.ts';
import { deploymentPrefixesAt } from '@rocketmq-lambda/ops/operations/index.ts';
import { createDynamoDb, emulatorConfig } from '@rocketmq-lambda/runtime/aws/index.ts';
import { InvalidCatalogueEntryError } from '@rocketmq-lambda/runtime/config/index.ts';
import { INCIDENT_ORDER, incidentScenario } from './incident-scenario.ts';
import { HandlerModuleError } from './local-consumers.ts';
import { LocalRunConfigError, type LocalRunResult, runLocalPipeline } from './local-pipeline.ts';
import { LocalSigningKey } from './local-signing-key.ts';
import { ProgressDisplay } from './progress-display.ts';
import { StageShapeError } from './provision.ts';
import { type ReportContext, runSummary } from './replay-report.ts';
import { readableReport } from './run-report.ts';
import { InvalidTimeScaleError } from './time-scale.ts';
import { readTrafficFile, TrafficFileError } from './traffic-file.ts';

const USAGE = `Usage: npm start -- [options]

  (no --events)               replay the built-in incident scenario
  --events <file.jsonl>       replay a file of bridge envelopes, one per line; their store and born
                              times are moved onto now, keeping their spacing and order
  --original-times            replay the file with the times it carries: copies older than their
                              group's redrive horizon are dead-lettered, as deployed
  --no-traffic                replay nothing: make the stage (with --keep, one to import into first)
  --redeliver <probability>   deliver each message a second time with this probability (0..1)
  --consumers <n>             concurrent consumers per group, like Lambda's maximum concurrency (default 2)
  --groups <g1,g2>            consumer groups to run (default: every group of the catalogue);
                              --group <g> says the same, and both may be repeated
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
  --prefix <name>             resource name prefix (default local-<random>); the prefix of a kept
                              stage runs into it, reusing its tables and queues
  --log-level <level>         consumer log level printed on the console (Powertools; default SILENT);
                              INFO and up is shipped to the emulator's CloudWatch Logs either way
  --no-function-logs          do not ship the consumers' log lines (and skip the closing ops trace)
  --full-trace                print the closing ops trace of the incident's order whole, per group
  -h, --help`;

const HELP_HINT = 'npm start -- --help lists every option';

function parse() {
  const { values, positionals } = parseCommandLine({
    allowPositionals: true,
    options: {
      events: { type: 'string' },
      'original-times': { type: 'boolean', default: false },
      'no-traffic': { type: 'boolean', default: false },
      redeliver: { type: 'string' },
      consumers: { type: 'string' },
      groups: { type: 'string', multiple: true },
      group: { type: 'string', multiple: true },
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
  if (positionals.length > 0) throw new CommandLineError(`unexpected argument "${positionals[0]}"`);
  if (values.events && values['no-traffic']) throw new CommandLineError('--events and --no-traffic: choose one');
  if (values['original-times'] && !values.events)
    throw new CommandLineError('--original-times is about the times of an --events file: give one');
  const num = (name: string, value: string | undefined) => {
    if (value === undefined) return undefined;
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n))
      throw new CommandLineError(`--${name} must be a number, got "${value}"`);
    return n;
  };
  // ops spells it --group: both are taken, repeated or comma-separated.
  const groups = [...(values.groups ?? []), ...(values.group ?? [])];
  return {
    help: values.help,
    events: values.events,
    originalTimes: values['original-times'],
    noTraffic: values['no-traffic'],
    json: values.json,
    keep: values.keep,
    endpoint: values.endpoint,
    prefix: values.prefix,
    logLevel: values['log-level'] ?? 'SILENT',
    functionLogs: !values['no-function-logs'],
    fullTrace: values['full-trace'],
    groups:
      groups.length > 0
        ? groups
            .flatMap((g) => g.split(','))
            .map((g) => g.trim())
            .filter((g) => g !== '')
        : undefined,
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

type Arguments = ReturnType<typeof parse>;

async function main(): Promise<number> {
  let args: Arguments;
  try {
    args = parse();
  } catch (error) {
    if (!(error instanceof CommandLineError)) throw error;
    process.stderr.write(`npm start: ${error.message}\n(${HELP_HINT})\n`);
    return 2;
  }
  if (args.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  try {
    return await replay(args);
  } catch (error) {
    process.stderr.write(`local run failed: ${failureText(error, args.endpoint)}\n`);
    return error instanceof LocalRunConfigError || error instanceof InvalidTimeScaleError ? 2 : 1;
  }
}

/** The run itself, its report, and with --keep the wait for Ctrl-C. Returns the exit code. */
async function replay(args: Arguments): Promise<number> {
  // Consumers log a JSON line per record and emit EMF metrics; on a console that drowns the report.
  process.env.POWERTOOLS_LOG_LEVEL = args.logLevel;
  process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
  if (args.endpoint && !args.prefix) await noteOtherStages(args.endpoint);

  // The run's envelope signing key: the scenario is judged as its bridge puts it on the queues, signed.
  const signing = new LocalSigningKey();
  const scenario = args.events || args.noTraffic ? undefined : incidentScenario({ seed: args.seed });
  const file = args.events ? await readTrafficFile(args.events) : undefined;
  const context: ReportContext = file
    ? { title: `Replay of ${args.events}`, phases: [{ name: 'replay', messages: file.messages }], input: file.account }
    : scenario
      ? { title: scenario.title, phases: signing.signed(scenario.phases), focusOrderNo: scenario.focusOrderNo }
      : { title: 'No traffic (the stage only)', phases: [] };

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
    ...(file ? { captureTimes: args.originalTimes ? 'as-captured' : 'rebased' } : {}),
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
  if (args.json) process.stdout.write(`${JSON.stringify(runSummary(result, file?.account))}\n`);
  else if (args.noTraffic)
    process.stdout.write(`Stage "${result.resources.prefix}" is ready on ${result.endpoint}; no traffic replayed.\n`);
  else
    process.stdout.write(
      await readableReport(result, context, {
        crashes: scenario?.crashes,
        ...(scenario
          ? { facts: { incident: INCIDENT_ORDER }, trace: { order: INCIDENT_ORDER, full: args.fullTrace } }
          : {}),
      }),
    );

  if (args.keep) {
    // With --json the summary must stay the last line of stdout.
    (args.json ? process.stderr : process.stdout).write(`${keptStageText(result, !args.endpoint).join('\n')}\n`);
    if (!args.endpoint) {
      await untilInterrupted();
      process.stderr.write(`Stopping the emulator at ${result.endpoint}.\n`);
    }
  }
  await run.close();
  return result.completed ? 0 : 3;
}

/** What `--keep` prints: where the stage is, and the commands that reach it again, its prefix in each. */
function keptStageText(result: LocalRunResult, ownEmulator: boolean): string[] {
  const r = result.resources;
  const at = `--endpoint ${result.endpoint} --prefix ${r.prefix}`;
  return [
    '',
    ownEmulator
      ? `Emulator kept running at ${result.endpoint} (Ctrl-C stops it and discards its data).`
      : `Stage "${r.prefix}" stays on the emulator at ${result.endpoint}, which another process runs.`,
    `  export AWS_ENDPOINT_URL=${result.endpoint} AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1 AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local`,
    '  (the AWS CLI v1 reads neither AWS_REGION nor AWS_ENDPOINT_URL: hence AWS_DEFAULT_REGION and --endpoint-url)',
    `  aws --endpoint-url ${result.endpoint} sqs list-queues --queue-name-prefix ${r.prefix}`,
    `  aws --endpoint-url ${result.endpoint} dynamodb scan --table-name ${r.tables.ledger}`,
    `  re-run into this stage: npm start -- ${at} [--events file.jsonl]`,
    `  operate on it:          npm run ops -- audit ${at}`,
    ...Object.entries(r.tables).map(([k, name]) => `  table ${k}: ${name}`),
    ...Object.entries(r.queues).flatMap(([g, q]) => [`  ${g}: ${q.source.url}`, `  ${g} DLQ: ${q.deadLetter.url}`]),
  ];
}

/**
 * Resolves at Ctrl-C (SIGINT from the terminal, or forwarded by npm) or SIGTERM. The listeners
 * stay while the run stops its emulator: without one, a second signal (a terminal's Ctrl-C reaches
 * every process of the group, and npm forwards its own) would end the process before it stopped.
 */
function untilInterrupted(): Promise<void> {
  return new Promise((resolve) => {
    process.on('SIGINT', () => resolve());
    process.on('SIGTERM', () => resolve());
  });
}

/**
 * `--endpoint` without `--prefix` makes a new stage: say so when the emulator holds others, since
 * a re-run meant for a kept stage would otherwise find none of its orders, imports or records.
 */
async function noteOtherStages(endpoint: string): Promise<void> {
  const dynamoDb = createDynamoDb(emulatorConfig(endpoint));
  const stages = await deploymentPrefixesAt(dynamoDb).finally(() => dynamoDb.destroy());
  if (stages.length === 0) return;
  process.stderr.write(
    `No --prefix: this run makes a new stage beside the ${stages.length} on ${endpoint} (${stages.join(', ')}), and sees none of their data; --prefix ${stages[0]} runs into that one.\n`,
  );
}

/** Why the run could not run, for a person: the message of a known refusal, the endpoint it could not reach. */
function failureText(error: unknown, endpoint: string | undefined): string {
  const known =
    error instanceof LocalRunConfigError ||
    error instanceof InvalidTimeScaleError ||
    error instanceof TrafficFileError ||
    error instanceof HandlerModuleError ||
    error instanceof InvalidCatalogueEntryError ||
    error instanceof StageShapeError;
  if (known) return (error as Error).message;
  const code = (error as { code?: string }).code;
  if (endpoint && (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EHOSTUNREACH'))
    return `cannot reach the emulator at ${endpoint} (${code}): is the run that kept it (--keep) still running? Without --endpoint the run starts one of its own`;
  return (error as Error).stack ?? String(error);
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`local run failed: ${(error as Error).stack ?? String(error)}\n`);
    process.exitCode = 1;
  },
);
