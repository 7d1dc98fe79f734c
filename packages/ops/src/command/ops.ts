#!/usr/bin/env -S npx tsx
/**
 * Operations command line: `npm run ops -- <command>` (or the `rocketmq-ops` bin).
 * Parses arguments and wires clients; the work lives in packages/ops/src/operations/.
 * Exit codes: 0 clean / done, 1 findings (or something left for a person), 2 error.
 */
import { realpathSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { CloudWatchLogsClient } from '@aws-sdk/client-cloudwatch-logs';
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { STSClient } from '@aws-sdk/client-sts';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  createCloudWatchLogs,
  createDynamoDb,
  createSecretsManager,
  createSqs,
  createSts,
} from '@rocketmq-lambda/runtime/aws/index.ts';
import { IncoherentLifetimesError } from '@rocketmq-lambda/runtime/config/index.ts';
import { generateSigningKey } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { type CrossSystemReport, renderCrossSystem } from '../migration/index.ts';
import {
  type AuditReport,
  awsConfigOf,
  type ConfirmationChannel,
  checkPlanTarget,
  confirmWrite,
  deadLetterSourcesOf,
  findDeadLetter,
  groupQueuesOf,
  isClean,
  messageOf,
  OperationsError,
  type OutputFormat,
  type PointTableNames,
  ProgressBar,
  type ProgressStream,
  pointTablesOf,
  queueLocation,
  type RedriveFilter,
  RedriveInterruptedError,
  ReversalInterruptedError,
  readDeadLetters,
  readReversalPlan,
  redriveDeadLetters,
  redriveWriteSummary,
  releaseDeadLetters,
  renderAudit,
  renderDeadLetter,
  renderDeadLetterList,
  renderRedrive,
  renderReversal,
  renderTable,
  reversalPlanOf,
  reversalWriteSummary,
  reverseDoubleAwards,
  revokeSigningKey,
  runLedgerAudit,
  type SavedPlan,
  secretLocation,
  signingKeyVersions,
  signingSecretOf,
  type TargetOptions,
  tableLocation,
  terminalSafe,
  UsageError,
  writeReversalPlan,
} from '../operations/index.ts';
import { CommandLineError, nearest, parseCommandLine } from './command-line.ts';
import { resignDeadLetters } from './dead-letter-resign.ts';
import { withLegacyAudit } from './legacy-audit.ts';
import { migrateImport } from './migrate-import.ts';
import { missingTablesText } from './missing-tables.ts';
import { orderTrace } from './order-trace.ts';
import { outboxCommand } from './outbox-command.ts';
import { shadowCompare } from './shadow-compare.ts';

export const ExitCode = { OK: 0, FINDINGS: 1, ERROR: 2 } as const;

export const USAGE = `Usage: npm run ops -- <command> [options]

Commands:
  audit                    Balance vs ledger per user, orders awarded more than once, and
                           orders awarded to more than one user.
                           Exit 0 clean, 1 findings, 2 error.
  reverse [--plan <file>]  Dry run: what would be reversed; --plan saves it for review.
    --rightful <order>=<user>  For an order awarded to several users: the user whose award
                           stays; the others are reversed. Repeatable. Orders without one
                           are listed, not reversed (exit 1).
  reverse --apply --plan <file>
                           Reverse what the reviewed plan holds (its --rightful choices
                           included); refused if the ledger now calls for anything else.
  dlq list --group G       List dead letters with their reasons and RocketMQ envelopes.
  dlq show --group G <id>  One dead letter in full (id: SQS message id, msgId or key).
  dlq redrive --group G    Send dead letters back to the source queue (--all or a filter).
  dlq resign --group G --plan <file> [--bridge-config <file>] [--compromised-since <time>]
                           After a key was revoked: the letters refused as
                           UNAUTHENTICATED_MESSAGE that verify with a revoked key and are proven
                           genuine, saved for review: RocketMQ stores the msgId with the same
                           body (asked through the bridge config's name servers), or the letter
                           entered the source queue and was stored before <time>. Filters as
                           for redrive; never --all. Exit 1 when a letter is left out.
  dlq resign --group G --apply --plan <file> --note <why>
                           Sign again, with the current key, exactly the letters of the reviewed
                           plan (same body), record the caller (STS) and the decision in each
                           envelope and a log line, and send them back as dlq redrive does.
  keys list                The envelope signing key's versions: created, labels, revoked.
  keys revoke --version <id>
                           Take a compromised key out of every consumer and bridge; a current
                           key is replaced by a new one in the same step. Returns once every
                           ring has read the revocation (about a minute).
  migrate import           Import a legacy consumer's dedup state (and, --ledger moved, its
                           awards) so that copies of what it processed are suppressed here.
  outbox list [--group G]  A publishing group's PENDING and FAILED outbox items: age, target,
                           topic:tag, event id, business key, the relay's reason (--status: others).
  outbox redrive [--group G] --event-id <id>… | --all [--apply]
                           Set FAILED items back to PENDING for the relay (a dry run without --apply).
  outbox redrive [--group G] --stale [--pending-older-than <age>] [--apply]
                           Write anew the PENDING items whose stream record the relay's mapping gave
                           up on (older than its maxRecordAge, 23h): still PENDING, redriveCount + 1,
                           so the stream hands them to the relay again (a dry run without --apply).
  trace <orderNo | msgId>  The story of one order in every consumer group (--group: one), in
                           time order: each delivery (msgIds, attempts, times), the copy that
                           applied the effect, the copies suppressed and why, failures,
                           retries, dead letters and redrives, the ledger entries and their
                           balance effect, and where each delivery's trace can be opened.
                           Read only. Exit 0 told, 1 findings (two awards in force, letters
                           waiting in a DLQ), 2 nothing found or an error.
  compare --legacy-source <store> --since <time>
                           On a shadow stage: every order the legacy consumer or this stage
                           awarded since <time> (the shadow's start), per order: awarded on
                           both sides, once, to the same user with the same points. Lists
                           each disagreement; exit 0 when all agree, 1 otherwise.
    --settle <age>         Orders first awarded later than this before now are not judged
                           yet (default 5m).

Target:
  --endpoint <url>         Local emulator; without it, AWS via the default credential chain.
  --region <region>        AWS region (default: AWS_REGION, else us-east-1).
  --prefix <prefix>        Deployment prefix: names tables and queues as the stack does.
  --ledger-table <name>    --accounts-table <name>   --dlq-url <url>   --source-queue-url <url>
  --signing-secret <id>    The signing key secret (default: <prefix>/envelope-signing-key).

Writes (reverse --apply, dlq redrive, dlq resign, outbox redrive --apply, keys revoke):
  The account, region and resources are shown first; on a terminal the command asks
  Proceed? [y/N]. Without a terminal it refuses unless --yes is given.
  --yes                    Confirm in advance (scripts).

Output:
  --json | --csv           Machine-readable output (default: a table).
  --quiet                  No progress bar (it is shown only on a terminal anyway).

audit / reverse:
  --segments <n>           Parallel scan segments (default 4).
  --legacy-source <store>  Also every order awarded both here and in the legacy store, or to
                           another user here (read only; --table, --map, --time-zone, --pattern,
                           --legacy-ca as for migrate import). reverse compensates them in this
                           ledger (a moved legacy award: its entry here).
trace:
  --mermaid                A Mermaid sequence diagram of the order's journey (for the ticket).
  --user <userId>          The order's user: the ledger is queried in that user's partition
                           (without it, the ledger is scanned).
  --newer-than <age>       Only log lines newer than that (e.g. 2d): less for CloudWatch Logs
                           to search. Default: the log groups' whole retention.
  --log-group <name>       With --group: the function's log group, when it is not Lambda's
                           /aws/lambda/<prefix>-<functionName>.
dlq:
  --visibility-timeout <s> How long read messages stay hidden (list/show default 30, redrive 120).
  --limit <n>              At most n messages.
migrate import (docs/migration.md):
  --source <url|file>      mysql://user@host/db, mariadb://…, rediss://host:6379/0, or an
                           export: file.csv (header row) / file.jsonl. Off this machine the
                           store is read over TLS only (rediss:// for Redis), its certificate
                           checked; the password comes from LEGACY_PASSWORD (in the URL only
                           for a store on loopback).
  --legacy-ca <pem>        The CAs the store's certificate must chain to (default: Node's
                           roots); on loopback it asks for TLS too.
  --sha256 <hex>           An export's published checksum: another file is refused.
  --plan <file>            --ledger moved: with --dry-run, save the awards and points per
                           user for review; without it, import exactly that reviewed plan
                           (refused, nothing written, if the source no longer holds it).
  --group <group>          The catalogue group whose records are written.
  --ledger moved|kept      moved: legacy awards enter the ledger and balances here too;
                           kept: dedup records only (the legacy ledger keeps its awards).
  --table <name>           Default t_point_record.
  --map key=…,user=…,points=…,time=…,cursor=…
                           Columns (or fields) of another schema; user=,points= for a table
                           that keeps only the key. Default: order_no, user_id, point,
                           create_time, id.
  --pattern <prefix*>      Redis keys (default mq:dedup:point:*); read with SCAN.
  --key-ttl <s>            The TTL the legacy consumer set on its keys (default 86400).
  --accept-expired-keys    Import keys that expire before a copy can stop arriving (refused
                           otherwise: the gap is reported, audit afterwards).
  --since <time>           Only rows processed at or after it (the delta import).
  --time-zone <zone>       Zone of times written without one: +08:00, or an IANA name such as
                           Europe/Berlin for a zone with daylight saving time (each time read
                           with its own offset). Default: the MySQL server's, when it keeps
                           one offset all year.
  --legacy-max-reconsume-times <n>  --legacy-delay-levels "<1s 5s …>"
  --legacy-file-reserved-hours <h>  The legacy group's and broker's settings (4.x defaults).
  --checkpoint <file>      Where the run's progress is kept (default .ops-checkpoints/);
                           an interrupted run resumes from it.
  --rejects <file>         Every row not imported, as JSON lines.
  --concurrency <n>        Writes in flight (default 16).
  --page-size <n>          Rows read and checkpointed at a time (default 1000).
  --idempotency-table <name>
  --dry-run                Read and check the source; touch no AWS resource.

outbox:
  --group <group>          The publishing group (default: the only one the catalogue has).
  --outbox-table <name>    Its outbox table, when not <prefix>-<group>-outbox.
  --status <status>        list: PENDING, FAILED or RELAYED (repeatable; default PENDING and FAILED).
  --event-id <id>          redrive: an item by its event id (repeatable).
  --all                    redrive: every FAILED item.
  --stale                  redrive: every PENDING item whose last stream record (commit, or last
                           redrive) is older than the relay mapping's maxRecordAge (23h): the
                           records its relay DLQ lists as "records the relay gave up on".
  --pending-older-than <age>  --stale with another threshold (e.g. 6h): an item younger than 23h may
                           still be retried by the mapping, and is then sent twice (deduplicated
                           downstream on its event id).
  --apply                  redrive: write (confirmed as other writes); without it a dry run.
  Only FAILED (or, --stale, stale PENDING) items are redriven, and only those committed within the
  subscribers' redrive horizon (a letter's, from delivery-lifetimes): an older copy would be
  dead-lettered downstream as PAST_REDRIVE_HORIZON. Exit 1 when any item was refused.

dlq (the outbox's queues):
  --outbox                 With --group: the group's relay DLQ (<prefix>-<group>-outbox-dlq). list
                           classifies its letters: outbox-notice (code, reason, event id, group,
                           topic) and stream-failure ("records the relay gave up on": shard and
                           sequence range). redrive sends none of them: it names the command that
                           does (ops outbox redrive --event-id <id>, ops outbox redrive --stale).
  --outbound               The bridge's outbound DLQ (<prefix>-rocketmq-outbound-dlq). Its
                           outbound-refusal letters are the relayed body unchanged: redrive sends an
                           UNAUTHENTICATED_MESSAGE one back to the outbound queue (fix the signing
                           key first: the bridge verifies it again), an INVALID_ENVELOPE one only
                           when --reason INVALID_ENVELOPE names it; the guards below apply.

dlq redrive:
  --reason <code|text>     Failure code or words of the reason ("unknown": moved by redrive policy). Repeatable.
  --key <key>              Idempotency key, RocketMQ key or msgId. Repeatable.
  --older-than <age>       --newer-than <age>   e.g. 30m, 6h, 2d.
  --all                    Redrive everything (required when no filter is given).
  --rate <n>               Sends per second at most (default 10).
  --dry-run                Show what would be redriven; send and delete nothing.
  --force                  Also send letters first delivered before the redrive horizon
                           (record TTL minus a retry window and the source queue's
                           retention): check them with audit first.
  PAYLOAD_CONFLICT letters are held back unless --reason PAYLOAD_CONFLICT names them.
  Letters are sent only to a queue whose redrive policy moves messages into the DLQ, and
  only to the one they record (a letter recording none only when there is one such queue);
  a FIFO letter only in the message group its envelope gives. Others are held back too.
  Held-back letters stay in the DLQ with the reason; exit 1 when any were held back.
`;

const OPTIONS = {
  endpoint: { type: 'string' },
  region: { type: 'string' },
  prefix: { type: 'string' },
  'ledger-table': { type: 'string' },
  'accounts-table': { type: 'string' },
  'dlq-url': { type: 'string' },
  'source-queue-url': { type: 'string' },
  'signing-secret': { type: 'string' },
  'reviewed-by': { type: 'string' },
  note: { type: 'string' },
  'compromised-since': { type: 'string' },
  'bridge-config': { type: 'string' },
  version: { type: 'string' },
  group: { type: 'string' },
  json: { type: 'boolean' },
  csv: { type: 'boolean' },
  quiet: { type: 'boolean' },
  segments: { type: 'string' },
  apply: { type: 'boolean' },
  plan: { type: 'string' },
  yes: { type: 'boolean' },
  'dry-run': { type: 'boolean' },
  all: { type: 'boolean' },
  force: { type: 'boolean' },
  rightful: { type: 'string', multiple: true },
  reason: { type: 'string', multiple: true },
  key: { type: 'string', multiple: true },
  'older-than': { type: 'string' },
  'newer-than': { type: 'string' },
  limit: { type: 'string' },
  rate: { type: 'string' },
  'visibility-timeout': { type: 'string' },
  source: { type: 'string' },
  ledger: { type: 'string' },
  table: { type: 'string' },
  map: { type: 'string' },
  pattern: { type: 'string' },
  since: { type: 'string' },
  'time-zone': { type: 'string' },
  'legacy-ca': { type: 'string' },
  sha256: { type: 'string' },
  'key-ttl': { type: 'string' },
  'accept-expired-keys': { type: 'boolean' },
  'legacy-max-reconsume-times': { type: 'string' },
  'legacy-delay-levels': { type: 'string' },
  'legacy-file-reserved-hours': { type: 'string' },
  checkpoint: { type: 'string' },
  rejects: { type: 'string' },
  concurrency: { type: 'string' },
  'page-size': { type: 'string' },
  'idempotency-table': { type: 'string' },
  'outbox-table': { type: 'string' },
  'event-id': { type: 'string', multiple: true },
  stale: { type: 'boolean' },
  outbox: { type: 'boolean' },
  outbound: { type: 'boolean' },
  'pending-older-than': { type: 'string' },
  status: { type: 'string', multiple: true },
  'legacy-source': { type: 'string' },
  mermaid: { type: 'boolean' },
  user: { type: 'string' },
  'log-group': { type: 'string' },
  settle: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

export interface OpsIo {
  stdout: { write(chunk: string): unknown };
  stderr: ProgressStream;
  /** Where a write's confirmation is read; without a terminal here, writes need --yes. */
  stdin?: Readable & { isTTY?: boolean };
  /** Clients to use instead of building them (tests put fault injection on these). */
  dynamoDb?: DynamoDBDocumentClient;
  sqs?: SQSClient;
  secrets?: SecretsManagerClient;
  logs?: CloudWatchLogsClient;
  sts?: STSClient;
  now?: () => Date;
  /** How the command waits (`keys revoke` waits for every ring to refresh); tests move their clock instead. */
  sleep?: (ms: number) => Promise<void>;
}

type Values = ReturnType<typeof parse>['values'];
const parse = (argv: string[]) => parseCommandLine({ args: argv, options: OPTIONS, allowPositionals: true });

const COMMANDS = ['audit', 'reverse', 'dlq', 'outbox', 'keys', 'trace', 'compare', 'migrate'] as const;
const HELP_HINT = 'npm run ops -- --help lists every command and option';

/** Runs one command and returns its exit code; never throws. */
export async function runOps(argv: string[], io: OpsIo): Promise<number> {
  // Reasons, keys and bodies are the senders' text: no escape sequence of theirs reaches a terminal.
  const print = (text: string) => io.stdout.write(terminalSafe(text.endsWith('\n') ? text : `${text}\n`));
  const fail = (text: string) => io.stderr.write(terminalSafe(`ops: ${text}\n`));
  let values: Values;
  let positionals: string[];
  try {
    ({ values, positionals } = parse(argv));
  } catch (error) {
    fail(`${(error as Error).message}\n(${HELP_HINT})`);
    return ExitCode.ERROR;
  }
  if (values.help || positionals.length === 0) {
    print(USAGE);
    return values.help ? ExitCode.OK : ExitCode.ERROR;
  }
  try {
    return await dispatch(positionals, values, io, print);
  } catch (error) {
    if (error instanceof ReversalInterruptedError)
      print(renderReversal(error.report, pointTablesOf(targetOf(values)), formatOf(values)));
    fail(await errorText(error, values, io));
    return ExitCode.ERROR;
  }
}

/**
 * What an operator reads when a command stops: the message of a refusal (a usage error, a
 * setting that disagrees with another) without the class behind it, and for a table that does
 * not exist the tables the options named, the prefix that named them and the prefixes there are.
 */
async function errorText(error: unknown, v: Values, io: OpsIo): Promise<string> {
  if (error instanceof UsageError || error instanceof CommandLineError || error instanceof IncoherentLifetimesError)
    return `${error.message}\n(${HELP_HINT})`;
  if (error instanceof OperationsError) return error.message;
  if ((error as Error).name === 'ResourceNotFoundException') {
    const target = { ...targetOf(v), idempotencyTable: v['idempotency-table'] };
    const where = v.endpoint ?? `region ${v.region ?? process.env.AWS_REGION ?? 'us-east-1'}`;
    const missing = await missingTablesText(io.dynamoDb ?? createDynamoDb(awsConfigOf(target)), target, where).catch(
      () => undefined,
    );
    if (missing) return missing;
    return `${messageOf(error)}${v.prefix ? ` (the names come from --prefix ${v.prefix})` : ''}`;
  }
  return messageOf(error);
}

function targetOf(v: Values): TargetOptions {
  return {
    endpoint: v.endpoint,
    region: v.region,
    prefix: v.prefix,
    ledgerTable: v['ledger-table'],
    accountsTable: v['accounts-table'],
    group: v.group,
    dlqUrl: v['dlq-url'],
    sourceQueueUrl: v['source-queue-url'],
    signingSecret: v['signing-secret'],
    outbox: v.outbox,
    outbound: v.outbound,
  };
}

function formatOf(v: Values): OutputFormat {
  if (v.json && v.csv) throw new UsageError('choose one of --json and --csv');
  return v.json ? 'json' : v.csv ? 'csv' : 'table';
}

/** `--rightful SO-1=u7` (repeatable): for an order awarded to several users, the user whose award stays. */
function rightfulOf(values: string[] | undefined): Map<string, string> {
  const out = new Map<string, string>();
  for (const value of values ?? []) {
    const at = value.lastIndexOf('=');
    if (at <= 0 || at === value.length - 1) throw new UsageError(`--rightful wants <orderNo>=<userId>, got "${value}"`);
    const orderNo = value.slice(0, at);
    if (out.has(orderNo)) throw new UsageError(`--rightful names ${orderNo} twice`);
    out.set(orderNo, value.slice(at + 1));
  }
  return out;
}

function positiveNumber(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new UsageError(`--${name} must be a positive number, got "${value}"`);
  return n;
}

const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
export function durationMs(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const m = /^(\d+(?:\.\d+)?)([smhd])$/.exec(value.trim());
  if (!m) throw new UsageError(`--${name} wants an age like 45s, 30m, 6h or 2d, got "${value}"`);
  return Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
}

/** What every command is given: the output format, the deployment it acts on, and its clients, made on first use. */
function commandContext(v: Values, io: OpsIo) {
  const format = formatOf(v);
  const target = targetOf(v);
  const aws = awsConfigOf(target);
  return {
    format,
    target,
    aws,
    now: io.now ?? (() => new Date()),
    dynamoDb: () => io.dynamoDb ?? createDynamoDb(aws),
    sqs: () => io.sqs ?? createSqs(aws),
    secrets: () => io.secrets ?? createSecretsManager(aws),
    segments: positiveNumber(v.segments, 'segments', 4),
  };
}

type CommandContext = ReturnType<typeof commandContext>;

/** The ledger audit over the points tables, with a progress bar, and the cross-system one when a legacy source is given. */
async function ledgerAudit(ctx: CommandContext, v: Values, io: OpsIo) {
  const { dynamoDb, segments } = ctx;
  const tables = pointTablesOf(ctx.target);
  const bar = new ProgressBar(io.stderr, { quiet: v.quiet });
  const report = await runLedgerAudit({
    dynamoDb: dynamoDb(),
    tables,
    segments,
    onProgress: (p) => bar.update(p),
    onTableDone: (p) => bar.done(p),
  });
  return { tables, ...(await withLegacyAudit(report, v, { dynamoDb: dynamoDb(), tables, segments })) };
}

/** `ops audit`: the report, and whether it found anything. */
async function auditCommand(
  audit: () => ReturnType<typeof ledgerAudit>,
  format: CommandContext['format'],
  print: (text: string) => void,
): Promise<number> {
  const { tables, report, crossSystem } = await audit();
  print(
    renderAudit(report, tables, format, crossSystem && { json: { crossSystem }, text: renderCrossSystem(crossSystem) }),
  );
  return isClean(report) ? ExitCode.OK : ExitCode.FINDINGS;
}

async function dispatch(positionals: string[], v: Values, io: OpsIo, print: (text: string) => void): Promise<number> {
  const [command, sub, ...rest] = positionals;
  const ctx = commandContext(v, io);
  const { format, target, aws, now, dynamoDb, sqs, secrets, segments } = ctx;
  const audit = () => ledgerAudit(ctx, v, io);

  switch (command) {
    case 'audit':
      return auditCommand(audit, format, print);
    case 'reverse':
      return reverse(v, { format, now, dynamoDb: dynamoDb(), audit, print, confirmation: confirmationOf(v, io) });
    case 'dlq':
      return dlq(sub, rest, v, {
        format,
        target,
        sqs: sqs(),
        secrets,
        sts: () => io.sts ?? createSts(aws),
        now,
        print,
        log: io.stderr,
        confirmation: confirmationOf(v, io),
      });
    case 'outbox':
      return outboxCommand(sub, v, {
        format,
        target,
        dynamoDb: dynamoDb(),
        pendingOlderThanMs: durationMs(v['pending-older-than'], 'pending-older-than'),
        now,
        print,
        confirmation: confirmationOf(v, io),
      });
    case 'keys':
      return keys(sub, v, {
        format,
        secretId: signingSecretOf(target),
        secrets: secrets(),
        print,
        stderr: io.stderr,
        ...(io.sleep ? { sleep: io.sleep } : {}),
        confirmation: confirmationOf(v, io),
      });
    case 'trace': {
      const newerThan = durationMs(v['newer-than'], 'newer-than');
      return orderTrace(sub, v, {
        format,
        target,
        region: aws.region ?? process.env.AWS_REGION ?? 'us-east-1',
        startTime: newerThan === undefined ? undefined : now().getTime() - newerThan,
        logs: io.logs ?? createCloudWatchLogs(aws),
        dynamoDb: dynamoDb(),
        sqs: sqs(),
        print,
      });
    }
    case 'compare':
      return shadowCompare(v, {
        format,
        dynamoDb: dynamoDb(),
        ledgerTable: pointTablesOf(target).ledger,
        segments,
        settleMs: durationMs(v.settle, 'settle'),
        now,
        print,
      });
    case 'migrate': {
      const ctx = { format, target, dynamoDb, print, stderr: io.stderr, confirmation: confirmationOf(v, io), now };
      if (sub === 'import') return migrateImport(v, ctx);
      throw new UsageError(`unknown migrate command "${sub ?? ''}": import`);
    }
    default: {
      const near = nearest(command ?? '', COMMANDS);
      throw new UsageError(`unknown command "${command}"${near ? `; did you mean ${near}?` : ''}`);
    }
  }
}

function confirmationOf(v: Values, io: OpsIo): ConfirmationChannel {
  return {
    yes: v.yes === true,
    input: io.stdin,
    output: { write: (text: string) => io.stderr.write(terminalSafe(text)) },
  };
}

/**
 * Dry run by default (`--plan <file>` saves what it found); `--apply --plan <file>` audits again and
 * writes only reversals the reviewed plan holds, after the operator confirms.
 */
async function reverse(
  v: Values,
  ctx: {
    format: OutputFormat;
    now: () => Date;
    dynamoDb: DynamoDBDocumentClient;
    audit: () => Promise<{ tables: PointTableNames; report: AuditReport; crossSystem?: CrossSystemReport }>;
    print: (text: string) => void;
    confirmation: ConfirmationChannel;
  },
): Promise<number> {
  const apply = v.apply === true;
  if (apply && !v.plan) {
    throw new UsageError(
      'reverse --apply writes only a reviewed plan: run reverse --plan <file> (a dry run that saves it), review it, then reverse --apply --plan <file>',
    );
  }
  if (apply && v.rightful)
    throw new UsageError('with --apply the --rightful choices come from the plan; leave them out');
  const reviewed = apply ? await readReversalPlan(v.plan!) : undefined;
  const { tables, report: audited, crossSystem } = await ctx.audit();
  const ledger = v.plan ? await tableLocation(ctx.dynamoDb, tables.ledger) : undefined;
  if (reviewed) checkPlanTarget(reviewed, ledger!.arn, tables, crossSystem?.source);
  const rightful = reviewed ? new Map(Object.entries(reviewed.rightful)) : rightfulOf(v.rightful);
  const report = await reverseDoubleAwards({
    dynamoDb: ctx.dynamoDb,
    tables,
    doubleAwards: audited.doubleAwards,
    crossUserAwards: audited.crossUserAwards,
    rightful,
    apply,
    reviewed: reviewed?.reversals,
    confirm: (planned) =>
      confirmWrite(reversalWriteSummary(ledger!, tables, planned, reviewed!.digest), ctx.confirmation),
    now: ctx.now,
  });
  let saved: SavedPlan | undefined;
  if (!apply && v.plan) {
    const reversals = report.outcomes.map(({ status: _status, ...reversal }) => reversal);
    const plan = reversalPlanOf({
      createdAt: ctx.now().toISOString(),
      ledgerTableArn: ledger!.arn,
      tables,
      rightful: Object.fromEntries(rightful),
      reversals,
      ...(crossSystem ? { legacySource: crossSystem.source } : {}),
    });
    await writeReversalPlan(v.plan, plan);
    saved = { file: v.plan, digest: plan.digest };
  }
  ctx.print(renderReversal(report, tables, ctx.format, saved));
  // Dry run: something to reverse is a finding. Apply: only awards left for a person are.
  const open = report.applied
    ? report.outcomes.filter((o) => o.status === 'award-changed' || o.status === 'kept-award-changed')
    : report.outcomes;
  return open.length > 0 || report.undecided.length > 0 ? ExitCode.FINDINGS : ExitCode.OK;
}

type DlqContext = {
  format: OutputFormat;
  target: TargetOptions;
  sqs: SQSClient;
  secrets: () => SecretsManagerClient;
  sts: () => STSClient;
  now: () => Date;
  print: (text: string) => void;
  log: ProgressStream;
  confirmation: ConfirmationChannel;
};

async function dlq(sub: string | undefined, rest: string[], v: Values, ctx: DlqContext): Promise<number> {
  const queues = await groupQueuesOf(ctx.sqs, ctx.target);
  const limit = v.limit === undefined ? undefined : positiveNumber(v.limit, 'limit', 1);
  const dlqName = queues.deadLetterUrl.slice(queues.deadLetterUrl.lastIndexOf('/') + 1);
  switch (sub) {
    case 'list':
    case 'show': {
      const visibility = positiveNumber(v['visibility-timeout'], 'visibility-timeout', 30);
      const letters = await readDeadLetters({
        sqs: ctx.sqs,
        queueUrl: queues.deadLetterUrl,
        visibilityTimeoutSeconds: visibility,
        limit,
        maxReceiveCount: queues.maxReceiveCount,
      });
      await releaseDeadLetters(ctx.sqs, queues.deadLetterUrl, letters);
      if (sub === 'list') {
        ctx.print(renderDeadLetterList(letters, dlqName, visibility, ctx.format, ctx.now()));
        return ExitCode.OK;
      }
      const id = rest[0];
      if (!id) throw new UsageError('dlq show wants an id: SQS message id, RocketMQ msgId or idempotency key');
      const letter = findDeadLetter(letters, id);
      if (!letter) throw new UsageError(`no message ${id} in ${dlqName} (${letters.length} examined)`);
      ctx.print(renderDeadLetter(letter, ctx.format, ctx.now()));
      return ExitCode.OK;
    }
    case 'redrive':
      return redrive(v, queues, dlqName, limit, ctx);
    case 'resign':
      return resignDeadLetters(v, {
        ...ctx,
        secrets: ctx.secrets(),
        signingSecret: signingSecretOf(ctx.target),
        deadLetterQueueUrl: queues.deadLetterUrl,
        maxReceiveCount: queues.maxReceiveCount,
        limit,
        visibilityTimeoutSeconds: positiveNumber(v['visibility-timeout'], 'visibility-timeout', 120),
        filter: filterOf(v),
        redrive: (filter, rewrite, onMoved) => redrive(v, queues, dlqName, limit, ctx, { filter, rewrite, onMoved }),
      });
    default:
      throw new UsageError(`unknown dlq command "${sub ?? ''}": list, show, redrive or resign`);
  }
}

function filterOf(v: Values): RedriveFilter {
  return {
    reasons: v.reason,
    keys: v.key,
    olderThanMs: durationMs(v['older-than'], 'older-than'),
    newerThanMs: durationMs(v['newer-than'], 'newer-than'),
  };
}

type RedriveOptions = Parameters<typeof redriveDeadLetters>[0];

/**
 * `dlq redrive`, and `dlq resign --apply`, which selects the letters of its plan (`resign.filter`)
 * and sends back what `resign.rewrite` signed again.
 */
async function redrive(
  v: Values,
  queues: Awaited<ReturnType<typeof groupQueuesOf>>,
  dlqName: string,
  limit: number | undefined,
  ctx: DlqContext,
  resign?: {
    filter: RedriveFilter;
    rewrite: NonNullable<RedriveOptions['rewrite']>;
    onMoved: NonNullable<RedriveOptions['onMoved']>;
  },
): Promise<number> {
  const filter = resign?.filter ?? filterOf(v);
  const filtered = Boolean(
    filter.reasons?.length ||
      filter.keys?.length ||
      filter.olderThanMs !== undefined ||
      filter.newerThanMs !== undefined,
  );
  if (!filtered && !v.all)
    throw new UsageError('dlq redrive needs a filter (--reason, --key, --older-than, --newer-than) or --all');
  const target = await redriveTarget(queues, v, ctx);
  const sourceName = target.sourceName;
  const dryRun = v['dry-run'] === true || target.source === undefined;
  if (!dryRun && target.source)
    await confirmWrite(redriveWriteSummary(target.source, sourceName, dlqName, filter, limit), ctx.confirmation);
  try {
    const report = await redriveDeadLetters({
      sqs: ctx.sqs,
      deadLetterQueueUrl: queues.deadLetterUrl,
      sourceQueueUrl: queues.sourceUrl ?? '',
      filter,
      guard: target.guard,
      dryRun,
      ratePerSecond: positiveNumber(v.rate, 'rate', 10),
      limit,
      visibilityTimeoutSeconds: positiveNumber(v['visibility-timeout'], 'visibility-timeout', 120),
      maxReceiveCount: queues.maxReceiveCount,
      now: ctx.now,
      ...(resign ? { rewrite: resign.rewrite, onMoved: resign.onMoved } : {}),
    });
    ctx.print(renderRedrive(report, dlqName, sourceName, ctx.format, ctx.now()));
    return report.sentNotDeleted.length > 0 || report.heldBack.length > 0 ? ExitCode.FINDINGS : ExitCode.OK;
  } catch (error) {
    if (error instanceof RedriveInterruptedError)
      ctx.print(renderRedrive(error.report, dlqName, sourceName, ctx.format, ctx.now()));
    throw error;
  }
}

/**
 * Where `dlq redrive` sends letters and what holds them back. The relay DLQ (`--outbox`) has no source
 * queue: every letter is held back with what to do instead, and nothing is sent or deleted.
 */
async function redriveTarget(queues: Awaited<ReturnType<typeof groupQueuesOf>>, v: Values, ctx: DlqContext) {
  if (!queues.sourceUrl)
    return {
      source: undefined,
      sourceName: '(nowhere: the relay DLQ has no source queue)',
      guard: {
        targetQueueArn: undefined,
        noSourceQueue:
          "a letter of the relay DLQ: nothing goes back from it. The relay's items are in the outbox table: ops outbox list, then ops outbox redrive",
      },
    };
  const source = await queueLocation(ctx.sqs, queues.sourceUrl);
  return {
    source,
    sourceName: queues.sourceUrl.slice(queues.sourceUrl.lastIndexOf('/') + 1),
    guard: {
      targetQueueArn: source.arn,
      horizonMs: queues.redriveHorizonSeconds === undefined ? undefined : queues.redriveHorizonSeconds * 1000,
      force: v.force === true,
      deadLetterSourceArns: await deadLetterSourcesOf(ctx.sqs, queues.deadLetterUrl),
      messageGroupFrom: queues.messageGroupFrom,
    },
  };
}

/** `keys list` and `keys revoke`: the envelope signing key's versions, never their values. */
async function keys(
  sub: string | undefined,
  v: Values,
  ctx: {
    format: OutputFormat;
    secretId: string;
    secrets: SecretsManagerClient;
    print: (text: string) => void;
    stderr: ProgressStream;
    sleep?: (ms: number) => Promise<void>;
    confirmation: ConfirmationChannel;
  },
): Promise<number> {
  switch (sub) {
    case 'list': {
      const versions = await signingKeyVersions(ctx.secrets, ctx.secretId);
      if (ctx.format === 'json') {
        ctx.print(JSON.stringify({ secret: ctx.secretId, versions }, null, 2));
        return ExitCode.OK;
      }
      ctx.print(
        `Versions of ${ctx.secretId}, newest first:\n${renderTable(
          [
            { header: 'version', value: (r) => r.versionId },
            { header: 'created', value: (r) => r.createdAt?.toISOString() ?? '' },
            { header: 'labels', value: (r) => r.stages.join(' ') },
            {
              header: 'state',
              value: (r) => (r.revoked ? 'REVOKED' : r.stages.includes('AWSCURRENT') ? 'current' : ''),
            },
          ],
          versions,
        )}`,
      );
      return ExitCode.OK;
    }
    case 'revoke': {
      const versionId = v.version;
      if (!versionId) throw new UsageError('keys revoke wants the version to revoke: --version <id> (see keys list)');
      const location = await secretLocation(ctx.secrets, ctx.secretId);
      await confirmWrite(
        {
          location,
          resources: [['signing key secret', ctx.secretId]],
          details: [
            `version ${versionId} labelled revoked-${versionId}; a current version is replaced by a new key in the same step. The command returns once every consumer and bridge has read the label (about a minute): from then on none accepts or signs with the key`,
          ],
        },
        ctx.confirmation,
      );
      const result = await revokeSigningKey({
        secrets: ctx.secrets,
        secretId: ctx.secretId,
        versionId,
        newKey: () => Buffer.from(generateSigningKey()).toString('base64url').slice(0, 64),
        onWaiting: (ms) =>
          ctx.stderr.write(
            `Revocation written; waiting ${Math.ceil(ms / 1000)} s for every consumer and bridge to read it.\n`,
          ),
        ...(ctx.sleep ? { sleep: ctx.sleep } : {}),
      });
      ctx.print(
        ctx.format === 'json'
          ? JSON.stringify(result)
          : `Revoked version ${result.revoked}${result.replacedBy ? `; the new current version is ${result.replacedBy}` : ''}.`,
      );
      return ExitCode.OK;
    }
    default:
      throw new UsageError(`unknown keys command "${sub ?? ''}": list or revoke`);
  }
}

function invokedDirectly(): boolean {
  const script = process.argv[1];
  if (!script) return false;
  try {
    return realpathSync(script) === fileURLToPath(import.meta.url);
  } catch {
    return false;
  }
}

if (invokedDirectly()) {
  process.exitCode = await runOps(process.argv.slice(2), {
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
  });
}
