/**
 * The benchmarks, one entry: `npm run bench -- [<bench>] [options]`, `award` when no bench is named.
 * `npm run bench -- --help` lists them; `npm run bench -- <bench> --help` shows one's options. Each
 * bench prints its figures, and with `--json` also a machine-readable line (`rollback` prints JSON
 * lines only); what each measures and how is said at the top of its own file. The npm scripts
 * `bench:import`, `bench:bridge`, `bench:fifo` and `bench:sqs-call` are aliases of `bench <name>`;
 * `bench:bridge` runs it in a network namespace of its own (the brokers it starts listen on
 * loopback only).
 */

type BenchEntry = (argv: readonly string[]) => Promise<void>;

interface Bench {
  readonly summary: string;
  readonly options: string;
  readonly load: () => Promise<BenchEntry>;
  /** Leave the process once the bench is done, even with timers still running. */
  readonly exitWhenDone?: boolean;
}

const BENCHES: Readonly<Record<string, Bench>> = {
  award: {
    summary: 'one award workload through the consumer variants and a Powertools control on the emulator',
    options: '[--messages 2000] [--users 200] [--latency-ms 5] [--batch-size 10] [--json]',
    load: async () => (await import('./bench-award.ts')).awardBench,
  },
  signature: {
    summary: "the consumer's signature check alone, µs per record",
    options: '[--records 1000] [--rounds 20] [--repeats 5] [--json]',
    load: async () => (await import('./bench-signature.ts')).signatureBench,
  },
  bundle: {
    summary: 'bundle size and module init time per function, next to a Powertools consumer',
    options: '[--runs 7] [--json]',
    load: async () => (await import('./bundle-report.ts')).bundleReport,
  },
  'hot-key': {
    summary: 'many concurrent awards to one account, per-record vs packed (contention modelled)',
    options:
      '[--messages 400] [--invocations 10] [--batch-size 10] [--accounts 1] [--spread-by award|batch] [--latency-ms 5] [--transaction-ms 10] [--json]',
    load: async () => (await import('./hot-key-bench.ts')).hotKeyBench,
  },
  import: {
    summary: '`ops migrate import` of a generated legacy export, --ledger kept and moved, and a --dry-run',
    options: '[--rows 100000] [--dry-run-rows 1000000] [--concurrency 16] [--json]',
    load: async () => (await import('./bench-import.ts')).importBench,
  },
  bridge: {
    summary:
      'one bridge task forwarding a local RocketMQ topic to SQS, against a bare consumer (run it as `npm run bench:bridge`)',
    options:
      '[--messages 10000] [--latency-ms 5] [--source 5|4|both] [--sqs stand-in|emulator] [--in-flight n] [--pairs 3] [--signing signed|unsigned|both] [--log-level INFO] [--cpu-prof-dir dir] [--json]',
    load: async () => (await import('./bench-bridge.ts')).bridgeBench,
    // The RocketMQ 4 client keeps a process-wide producer (for sending messages back) with its timers running after
    // every consumer closed.
    exitWhenDone: true,
  },
  'sqs-call': {
    summary: 'CPU per message of one SendMessageBatch of ten signed envelopes, no broker',
    options: '[--calls 4000] [--rounds 3] [--lanes 4] [--json]',
    load: async () => (await import('./bench-sqs-call.ts')).sqsCallBench,
  },
  rollback: {
    summary:
      'the emulator launcher against stock moto: transaction latency by table size, puts lost to cancelled transactions (JSON lines)',
    options: '[--sizes 0,2000,10000] [--rounds 300]',
    load: async () => (await import('./bench-rollback.ts')).rollbackBench,
  },
  relay: {
    summary:
      "the outbox relay's commit-to-relay latency (p50, p99) and round trips per message, through the stream poller",
    options:
      '[--items 1000] [--rate 200] [--groups 50] [--batch-size 100] [--poll-ms 250] [--target sqs|eventbridge|rocketmq] [--json]',
    load: async () => (await import('./bench-relay.ts')).relayBench,
  },
  fifo: {
    summary: "a FIFO route's forward step alone, no broker, per number of message groups in a receive",
    options: '[--messages 4000] [--batch 20] [--groups 1,2,5,20,1000] [--latency-ms 5] [--json]',
    load: async () => (await import('./bench-fifo-forward.ts')).fifoBench,
  },
};

const DEFAULT_BENCH = 'award';

function usage(): string {
  const width = Math.max(...Object.keys(BENCHES).map((name) => name.length)) + 2;
  return [
    'Usage: npm run bench -- [<bench>] [options]   (default bench: award)',
    '       npm run bench -- <bench> --help',
    '',
    'Benches:',
    ...Object.entries(BENCHES).map(([name, b]) => `  ${name.padEnd(width)}${b.summary}`),
  ].join('\n');
}

const usageOf = (name: string, bench: Bench) => `Usage: npm run bench -- ${name} ${bench.options}\n\n${bench.summary}`;

const wantsHelp = (args: readonly string[]) => args.includes('--help') || args.includes('-h');

/** The bench `argv` names (its first word, or the default when it starts with an option) and the options after it. */
function chosen(argv: readonly string[]): { name: string; args: readonly string[] } {
  const [first, ...rest] = argv;
  if (first === undefined || first.startsWith('-')) return { name: DEFAULT_BENCH, args: argv };
  return { name: first, args: rest };
}

async function main(argv: readonly string[]): Promise<number> {
  const { name, args } = chosen(argv);
  const bench = BENCHES[name];
  if (bench === undefined) {
    console.error(`unknown bench "${name}"\n\n${usage()}`);
    return 2;
  }
  if (wantsHelp(args)) {
    console.log(name === argv[0] ? usageOf(name, bench) : usage());
    return 0;
  }
  await (await bench.load())(args);
  if (bench.exitWhenDone) process.exit(0);
  return 0;
}

process.exitCode = await main(process.argv.slice(2));
