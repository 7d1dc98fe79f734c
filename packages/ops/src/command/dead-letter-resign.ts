import { readFile } from 'node:fs/promises';
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { GetCallerIdentityCommand, type STSClient } from '@aws-sdk/client-sts';
import { parseBridgeConfig, RocketMQProtocol } from '@rocketmq-lambda/bridge/index.ts';
import {
  checkResignPlanTarget,
  type DeadLetter,
  letterSha256,
  matchesFilter,
  type OutputFormat,
  type PlannedResign,
  type ProgressStream,
  proofOf,
  queueLocation,
  type RedriveFilter,
  RocketMQMessageLookup,
  readDeadLetters,
  readResignPlan,
  readSigningKeyVersions,
  releaseDeadLetters,
  renderTable,
  resignCandidate,
  resignPlanOf,
  resignRewrite,
  type TargetOptions,
  UsageError,
  writeResignPlan,
} from '../operations/index.ts';

/** What `ops dlq resign` reads from the command line (ops.ts parses it). */
export interface ResignValues {
  all?: boolean;
  apply?: boolean;
  plan?: string;
  note?: string;
  'reviewed-by'?: string;
  'compromised-since'?: string;
  'bridge-config'?: string;
}

export interface ResignContext {
  format: OutputFormat;
  target: TargetOptions;
  sqs: SQSClient;
  secrets: SecretsManagerClient;
  sts: () => STSClient;
  now: () => Date;
  print: (text: string) => void;
  /** Where each re-signed letter is logged, one JSON line: the record a person keeps. */
  log: ProgressStream;
  signingSecret: string;
  deadLetterQueueUrl: string;
  maxReceiveCount: number | undefined;
  limit: number | undefined;
  /** How long the plan run keeps the letters it reads hidden (they are made visible again at its end). */
  visibilityTimeoutSeconds: number;
  filter: RedriveFilter;
  /** `dlq redrive`'s sending, with the guards, of the letters `filter` selects, each rewritten by `rewrite`. */
  redrive: (
    filter: RedriveFilter,
    rewrite: (letter: DeadLetter) => { body: string } | { refusal: string },
    onMoved: (letter: DeadLetter) => void,
  ) => Promise<number>;
}

const ExitCode = { OK: 0, FINDINGS: 1 } as const;

/**
 * `dlq resign --plan <file>`: which letters signed with a revoked key are proven genuine (by
 * RocketMQ, or by dates before the compromise), saved for review; `dlq resign --apply --plan
 * <file> --note <why>`: signs again exactly those, as the caller AWS authenticates.
 */
export async function resignDeadLetters(v: ResignValues, ctx: ResignContext): Promise<number> {
  if (v.all)
    throw new UsageError(
      'dlq resign never takes --all: it re-signs only the letters a reviewed plan names (dlq resign --plan <file>, then dlq resign --apply --plan <file>)',
    );
  if (v['reviewed-by'] !== undefined)
    throw new UsageError(
      'dlq resign records the caller AWS authenticates (STS GetCallerIdentity), not a name given: leave out --reviewed-by',
    );
  if (!v.plan)
    throw new UsageError(
      'dlq resign --plan <file> writes the letters proven genuine for review; dlq resign --apply --plan <file> --note <why> re-signs them',
    );
  const dlqArn = (await queueLocation(ctx.sqs, ctx.deadLetterQueueUrl)).arn;
  return v.apply ? applyPlan(v, v.plan, dlqArn, ctx) : writePlan(v, v.plan, dlqArn, ctx);
}

async function writePlan(v: ResignValues, path: string, dlqArn: string, ctx: ResignContext): Promise<number> {
  const compromisedSince = instantOf(v['compromised-since']);
  if (!v['bridge-config'] && !compromisedSince)
    throw new UsageError(
      'a letter is proven genuine by RocketMQ (--bridge-config <the bridge config file>: its cluster is asked for the msgId and body) or by dates (--compromised-since <time>): give one or both',
    );
  const rocketmq = v['bridge-config'] ? await lookupOf(v['bridge-config']) : undefined;
  const versions = await readSigningKeyVersions(ctx.secrets, ctx.signingSecret);
  const letters = await readDeadLetters({
    sqs: ctx.sqs,
    queueUrl: ctx.deadLetterQueueUrl,
    visibilityTimeoutSeconds: ctx.visibilityTimeoutSeconds,
    limit: ctx.limit,
    maxReceiveCount: ctx.maxReceiveCount,
  });
  const planned: PlannedResign[] = [];
  const leftOut: Array<{ msgId: string; key: string; why: string }> = [];
  try {
    for (const letter of letters.filter((l) => matchesFilter(l, ctx.filter, ctx.now()))) {
      const candidate = resignCandidate(versions, letter);
      const proof =
        'refusal' in candidate
          ? { unproven: candidate.refusal }
          : await proofOf(letter, { rocketmq, compromisedSince });
      const msgId = letter.envelope?.msgId ?? letter.messageId;
      const key = letter.envelope?.keys[0];
      if ('unproven' in proof) leftOut.push({ msgId, key: key ?? '', why: proof.unproven });
      else planned.push({ msgId, letterSha256: letterSha256(letter), key, proof });
    }
  } finally {
    await releaseDeadLetters(ctx.sqs, ctx.deadLetterQueueUrl, letters);
    await rocketmq?.close();
  }
  const plan = resignPlanOf({
    createdAt: ctx.now().toISOString(),
    deadLetterQueueArn: dlqArn,
    signingSecret: ctx.signingSecret,
    ...(compromisedSince ? { compromisedSince: compromisedSince.toISOString() } : {}),
    letters: planned,
  });
  await writeResignPlan(path, plan);
  ctx.print(renderPlan(plan, leftOut, path, ctx.format));
  return leftOut.length > 0 ? ExitCode.FINDINGS : ExitCode.OK;
}

async function applyPlan(v: ResignValues, path: string, dlqArn: string, ctx: ResignContext): Promise<number> {
  const note = v.note?.trim();
  if (!note) throw new UsageError('dlq resign --apply records why in each letter: give --note <why> (the ticket)');
  if (note.length > 512) throw new UsageError('--note takes at most 512 characters');
  const plan = await readResignPlan(path);
  checkResignPlanTarget(plan, dlqArn, ctx.signingSecret);
  if (plan.letters.length === 0) {
    ctx.print(`The plan ${path} names no letter: nothing to re-sign.`);
    return ExitCode.OK;
  }
  const by = (await ctx.sts().send(new GetCallerIdentityCommand({}))).Arn;
  if (!by) throw new UsageError('STS GetCallerIdentity gave no ARN: the caller cannot be recorded');
  const versions = await readSigningKeyVersions(ctx.secrets, ctx.signingSecret);
  const at = ctx.now();
  const rewrite = resignRewrite(versions, { by, note, at, plan });
  const byMsgId = new Map(plan.letters.map((l) => [l.msgId, l]));
  return ctx.redrive({ keys: plan.letters.map((l) => l.msgId) }, rewrite, (letter) => {
    const entry = byMsgId.get(letter.envelope?.msgId ?? '');
    ctx.log.write(
      `${JSON.stringify({
        event: 'dlq-resign',
        by,
        at: at.toISOString(),
        note,
        plan: plan.digest,
        deadLetterQueue: dlqArn,
        sqsMessageId: letter.messageId,
        msgId: entry?.msgId,
        key: entry?.key,
        proof: entry?.proof,
      })}\n`,
    );
  });
}

/** The bridge's cluster, asked over remoting through its name servers (a 5.x cluster's config must name them too). */
async function lookupOf(configPath: string): Promise<RocketMQMessageLookup> {
  let config: ReturnType<typeof parseBridgeConfig>;
  try {
    config = parseBridgeConfig(JSON.parse(await readFile(configPath, 'utf8')));
  } catch (error) {
    throw new UsageError(`--bridge-config ${configPath}: ${(error as Error).message}`);
  }
  if (!config.nameServer)
    throw new UsageError(
      `--bridge-config ${configPath}: the ${config.protocol === RocketMQProtocol.RocketMQ5 ? '5.x proxy has no query API; its brokers are' : 'cluster is'} asked through its name servers: add nameServer`,
    );
  return RocketMQMessageLookup.open({ nameServer: config.nameServer, clusterName: config.clusterName });
}

function instantOf(value: string | undefined): Date | undefined {
  if (value === undefined) return undefined;
  const at = new Date(value);
  if (!/^\d{4}-\d{2}-\d{2}T.*(Z|[+-]\d{2}:\d{2})$/.test(value) || Number.isNaN(at.getTime()))
    throw new UsageError(
      `--compromised-since wants an ISO-8601 instant with its offset (2026-12-01T08:00:00Z), got "${value}"`,
    );
  return at;
}

function renderPlan(
  plan: ReturnType<typeof resignPlanOf>,
  leftOut: ReadonlyArray<{ msgId: string; key: string; why: string }>,
  path: string,
  format: OutputFormat,
): string {
  if (format === 'json') return JSON.stringify({ plan: path, ...plan, leftOut }, null, 2);
  const proofText = (l: PlannedResign) =>
    l.proof.kind === 'rocketmq'
      ? `stored in ${l.proof.cluster} (${l.proof.broker}) at ${new Date(l.proof.storeTimestamp).toISOString()}, same body`
      : `sent at ${l.proof.sourceSentAt}, before ${l.proof.compromisedSince}`;
  return [
    `Plan ${path} (digest ${plan.digest}): ${plan.letters.length} letter(s) proven genuine, to re-sign with dlq resign --apply --plan ${path} --note <why>.`,
    renderTable(
      [
        { header: 'msgId', value: (l: PlannedResign) => l.msgId },
        { header: 'key', value: (l: PlannedResign) => l.key ?? '' },
        { header: 'proof', value: proofText },
      ],
      plan.letters,
    ),
    `Left out: ${leftOut.length} letter(s); they stay in the DLQ.`,
    renderTable(
      [
        { header: 'msgId', value: (l: { msgId: string }) => l.msgId },
        { header: 'key', value: (l: { key: string }) => l.key },
        { header: 'why', value: (l: { why: string }) => l.why },
      ],
      leftOut,
    ),
  ].join('\n');
}
