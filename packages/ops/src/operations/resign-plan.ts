import { z } from 'zod';
import type { DeadLetter } from './dead-letter-inspection.ts';
import { OperationsError } from './errors.ts';
import { planDigest, readPlanFile, writePlanFile } from './reviewed-plan.ts';
import { type RocketMQMessageLookup, sha256 } from './rocketmq-message-lookup.ts';

/**
 * What `ops dlq resign --plan <file>` found proven genuine, and the only letters
 * `ops dlq resign --apply --plan <file>` may sign again. A letter signed with a revoked key is
 * genuine or forged with the leaked key, and the signature cannot tell which; a letter goes into
 * the plan only with a proof that does not rest on that key:
 * - `rocketmq`: the cluster stores a message under the letter's msgId, in its topic, with the same
 *   body (SHA-256): a forger holding the key cannot put a message into RocketMQ;
 * - `sent-before`: the letter entered the source queue (SQS's own `SentTimestamp`, which the
 *   consumer recorded when it dead-lettered it) and was stored by RocketMQ (the envelope's store
 *   time) before `--compromised-since`: nothing was forged before the key leaked. The envelope's
 *   store time alone is no proof, since the leaked key signs any store time.
 * Letters are named by msgId and the SHA-256 of the letter's body, so the apply run re-signs the
 * very letters reviewed.
 */
export type ResignProof =
  | {
      readonly kind: 'rocketmq';
      readonly cluster: string;
      readonly broker: string;
      readonly storeTimestamp: number;
      readonly bodySha256: string;
    }
  | {
      readonly kind: 'sent-before';
      readonly compromisedSince: string;
      readonly sourceSentAt: string;
      readonly storeTimestamp: number;
    };

export interface PlannedResign {
  readonly msgId: string;
  /** SHA-256 of the letter's SQS body: the apply run re-signs only a letter with this body. */
  readonly letterSha256: string;
  readonly key: string | undefined;
  readonly proof: ResignProof;
}

export interface ResignPlan {
  version: 1;
  createdAt: string;
  deadLetterQueueArn: string;
  signingSecret: string;
  compromisedSince?: string;
  letters: PlannedResign[];
  digest: string;
}

/** The plan file cannot be read, was edited since the dry run, or is for another queue or secret. */
export class ResignPlanError extends OperationsError {
  override readonly name = 'ResignPlanError';
}

const proofSchema = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('rocketmq'),
    cluster: z.string(),
    broker: z.string(),
    storeTimestamp: z.number(),
    bodySha256: z.string(),
  }),
  z.object({
    kind: z.literal('sent-before'),
    compromisedSince: z.string(),
    sourceSentAt: z.string(),
    storeTimestamp: z.number(),
  }),
]);

const planSchema = z.object({
  version: z.literal(1),
  createdAt: z.string(),
  deadLetterQueueArn: z.string(),
  signingSecret: z.string(),
  compromisedSince: z.string().optional(),
  letters: z.array(
    z.object({ msgId: z.string(), letterSha256: z.string(), key: z.string().optional(), proof: proofSchema }),
  ),
  digest: z.string(),
});

const digestOf = (letters: readonly PlannedResign[]) =>
  planDigest(letters.map((l) => `${l.msgId} ${l.letterSha256} ${l.proof.kind}`));

export function resignPlanOf(fields: Omit<ResignPlan, 'version' | 'digest'>): ResignPlan {
  return { version: 1, ...fields, digest: digestOf(fields.letters) };
}

export const writeResignPlan = (path: string, plan: ResignPlan) => writePlanFile(path, plan);

export function readResignPlan(path: string): Promise<ResignPlan> {
  return readPlanFile(path, {
    schema: planSchema as z.ZodType<ResignPlan>,
    digestOf: (plan) => digestOf(plan.letters),
    writtenBy: 'ops dlq resign --plan',
    refuse: (message) => new ResignPlanError(message),
  });
}

/** Refuses a plan reviewed against another DLQ or signing key secret. */
export function checkResignPlanTarget(plan: ResignPlan, deadLetterQueueArn: string, signingSecret: string): void {
  if (plan.deadLetterQueueArn !== deadLetterQueueArn || plan.signingSecret !== signingSecret)
    throw new ResignPlanError(
      `the plan was made for ${plan.deadLetterQueueArn} and ${plan.signingSecret}; this run targets ${deadLetterQueueArn} and ${signingSecret}`,
    );
}

export const letterSha256 = (letter: DeadLetter) => sha256(Buffer.from(letter.body, 'utf8'));

/** Where a letter's proof may come from: the cluster it was produced to, and when the key may have leaked. */
export interface ProofSources {
  readonly rocketmq?: RocketMQMessageLookup;
  readonly compromisedSince?: Date;
}

/**
 * The proof that a letter signed with a revoked key is genuine, or why there is none. RocketMQ is
 * asked first: it answers for letters of any age, and a stored message with another body is a
 * forgery whatever the dates say.
 */
export async function proofOf(letter: DeadLetter, sources: ProofSources): Promise<ResignProof | { unproven: string }> {
  const envelope = letter.envelope;
  if (!envelope) return { unproven: `its body is not an envelope (${letter.envelopeError ?? 'unreadable'})` };
  const reasons: string[] = [];
  if (sources.rocketmq) {
    const bodySha256 = sha256(Buffer.from(envelope.body, 'utf8'));
    const ids = [...new Set([envelope.msgId, envelope.offsetMsgId].filter((id): id is string => Boolean(id)))];
    const stored = (await Promise.all(ids.map((id) => sources.rocketmq!.byMsgId(envelope.topic, id)))).flat();
    const same = stored.find((m) => m.bodySha256 === bodySha256);
    if (same)
      return {
        kind: 'rocketmq',
        cluster: sources.rocketmq.cluster,
        broker: same.broker,
        storeTimestamp: same.storeTimestamp,
        bodySha256,
      };
    if (stored.length > 0)
      return {
        unproven: `RocketMQ stores msgId ${envelope.msgId} with another body: the letter was forged or changed with the leaked key`,
      };
    reasons.push(`RocketMQ (${sources.rocketmq.cluster}) stores no message ${envelope.msgId} in ${envelope.topic}`);
  } else reasons.push('RocketMQ was not asked (--bridge-config)');
  const since = sources.compromisedSince;
  if (since) {
    const sent = letter.failure?.sourceSentAt ? new Date(letter.failure.sourceSentAt) : undefined;
    const stored = envelope.storeTimestamp;
    if (sent && stored !== undefined && sent < since && stored < since.getTime())
      return {
        kind: 'sent-before',
        compromisedSince: since.toISOString(),
        sourceSentAt: sent.toISOString(),
        storeTimestamp: stored,
      };
    reasons.push(
      !sent
        ? 'the letter does not record when it entered the source queue'
        : `it entered the source queue at ${sent.toISOString()}${stored === undefined ? ' and has no store time' : ` and was stored at ${new Date(stored).toISOString()}`}, not both before ${since.toISOString()}`,
    );
  } else reasons.push('no --compromised-since bound');
  return { unproven: reasons.join('; ') };
}
