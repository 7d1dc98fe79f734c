import { OUTBOX_EVENT_ID_PROPERTY } from '@rocketmq-lambda/runtime/config/index.ts';
import { type OutboxDeadLetterNotice, readOutboxNotice } from '@rocketmq-lambda/runtime/outbox/index.ts';
import {
  DEAD_LETTER_KIND_ATTRIBUTE,
  NOTICE_REASON_ATTRIBUTE,
  type RocketMQMessage,
} from '@rocketmq-lambda/runtime/rocketmq/index.ts';

/**
 * The letters the outbox's queues hold, which no consumer wrote (docs/outbox.md):
 * - the relay DLQ (`<prefix>-<group>-outbox-dlq`): the relay's notice of an item it could not send
 *   (`OUTBOX_NOTICE_KIND`: the item stays FAILED in the outbox table), and the event source mapping's
 *   on-failure record of stream records it gave up on (Lambda's batch metadata: shard and sequence range,
 *   not the items, which stay PENDING);
 * - the bridge's outbound DLQ (`<prefix>-rocketmq-outbound-dlq`): a relayed body the bridge refused to
 *   produce, byte for byte, with its reason (`bridge-outbound-refusal`).
 */

/** `dead-letter-kind` of the bridge's outbound refusals (packages/bridge/src/outbound-route.ts's OUTBOUND_REFUSAL_KIND). */
export const OUTBOUND_REFUSAL_KIND = 'bridge-outbound-refusal';
/** The refusal's detail attribute, beside its reason in `NOTICE_REASON_ATTRIBUTE`. */
export const OUTBOUND_REFUSAL_DETAIL_ATTRIBUTE = 'detail';
/** The reasons the outbound route refuses with (the bridge's `OutboundRefusalReason`). */
export const OutboundRefusalReason = {
  UNAUTHENTICATED: 'UNAUTHENTICATED_MESSAGE',
  INVALID_ENVELOPE: 'INVALID_ENVELOPE',
} as const;

/** A body the bridge's outbound route would not produce to RocketMQ. */
export interface OutboundRefusal {
  readonly reason: string;
  readonly detail?: string;
  /** The outbox event id, when the body is an envelope that carries it. */
  readonly eventId?: string;
}

/** Lambda's on-failure record for a DynamoDB stream batch it gave up on (`DDBStreamBatchInfo`). */
export interface StreamBatchFailure {
  /** `RetryAttemptsExhausted`, `RecordAgeExceeded`, … as Lambda words it. */
  readonly condition?: string;
  readonly approximateInvokeCount?: number;
  readonly functionArn?: string;
  readonly shardId: string;
  readonly startSequenceNumber: string;
  readonly endSequenceNumber: string;
  readonly batchSize?: number;
  readonly streamArn?: string;
  readonly firstRecordAt?: string;
  readonly lastRecordAt?: string;
}

/** What a letter of the outbox's queues is; `undefined` for any other letter. */
export type OutboxLetter =
  | { readonly kind: 'outbox-notice'; readonly notice: OutboxDeadLetterNotice }
  | { readonly kind: 'outbound-refusal'; readonly refusal: OutboundRefusal }
  | { readonly kind: 'stream-failure'; readonly batch: StreamBatchFailure };

export function outboxLetterOf(
  body: string,
  attributes: Record<string, string>,
  envelope: RocketMQMessage | undefined,
): OutboxLetter | undefined {
  const notice = readOutboxNotice(body);
  if (notice) return { kind: 'outbox-notice', notice };
  if (attributes[DEAD_LETTER_KIND_ATTRIBUTE] === OUTBOUND_REFUSAL_KIND) {
    const eventId = envelope?.userProperties[OUTBOX_EVENT_ID_PROPERTY] ?? envelope?.keys[0];
    return {
      kind: 'outbound-refusal',
      refusal: {
        reason: attributes[NOTICE_REASON_ATTRIBUTE] ?? 'no reason recorded',
        ...(attributes[OUTBOUND_REFUSAL_DETAIL_ATTRIBUTE]
          ? { detail: attributes[OUTBOUND_REFUSAL_DETAIL_ATTRIBUTE] }
          : {}),
        ...(eventId ? { eventId } : {}),
      },
    };
  }
  const batch = readStreamBatchFailure(body);
  return batch ? { kind: 'stream-failure', batch } : undefined;
}

/** The on-failure record of a stream event source, or `undefined` for any other body. */
export function readStreamBatchFailure(body: string): StreamBatchFailure | undefined {
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(body) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  const info = json?.DDBStreamBatchInfo as Record<string, unknown> | undefined;
  if (!info || typeof info.shardId !== 'string' || typeof info.startSequenceNumber !== 'string') return undefined;
  const context = (json.requestContext ?? {}) as Record<string, unknown>;
  const text = (v: unknown) => (typeof v === 'string' ? v : undefined);
  const count = (v: unknown) => (typeof v === 'number' ? v : undefined);
  const fields = {
    condition: text(context.condition),
    approximateInvokeCount: count(context.approximateInvokeCount),
    functionArn: text(context.functionArn),
    shardId: info.shardId,
    startSequenceNumber: info.startSequenceNumber,
    endSequenceNumber: text(info.endSequenceNumber) ?? info.startSequenceNumber,
    batchSize: count(info.batchSize),
    streamArn: text(info.streamArn),
    firstRecordAt: text(info.approximateArrivalOfFirstRecord),
    lastRecordAt: text(info.approximateArrivalOfLastRecord),
  };
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) as unknown as StreamBatchFailure;
}

/** One line: what the letter says happened. */
export function outboxLetterReason(letter: OutboxLetter): string {
  switch (letter.kind) {
    case 'outbox-notice': {
      const n = letter.notice;
      return `${n.code}: ${n.reason} (event ${n.eventId}, ${n.group}, ${n.topic}:${n.tag} → ${n.target})`;
    }
    case 'outbound-refusal': {
      const r = letter.refusal;
      return [r.reason, r.detail].filter(Boolean).join(': ') + (r.eventId ? ` (event ${r.eventId})` : '');
    }
    case 'stream-failure': {
      const b = letter.batch;
      return (
        `records the relay gave up on (${b.condition ?? 'no condition recorded'}): ${b.batchSize ?? '?'} stream record(s) of ` +
        `shard ${b.shardId}, sequence ${b.startSequenceNumber}–${b.endSequenceNumber}` +
        (b.firstRecordAt ? `, first written ${b.firstRecordAt}` : '')
      );
    }
  }
}

/**
 * Why `ops dlq redrive` does not send an outbox letter anywhere, and what does instead; `undefined` for the
 * one it sends: an UNAUTHENTICATED_MESSAGE refusal goes back to the outbound queue unchanged, where the bridge
 * checks its signature again (a body that still does not verify is refused again, nothing else happens).
 * An INVALID_ENVELOPE refusal goes back only when `--reason INVALID_ENVELOPE` names it: sent unchanged to the
 * same bridge it is refused again.
 */
export function outboxLetterRefusal(
  letter: OutboxLetter,
  namedReasons: readonly string[],
  prefix = '<prefix>',
): string | undefined {
  switch (letter.kind) {
    case 'outbox-notice': {
      const n = letter.notice;
      return (
        `an outbox relay notice (${n.code}), not a message: the item stays FAILED in ${n.group}'s outbox table, and it ` +
        `is the item that goes back, not this notice. Fix the cause, then: ops outbox redrive --group ${n.group} ` +
        `--event-id ${n.eventId} (a dry run; add --apply). Delete the notice once the item is RELAYED`
      );
    }
    case 'stream-failure':
      return (
        "records the relay gave up on: Lambda's batch metadata (shard and sequence range), not the items, which stay " +
        'PENDING in the outbox table and which the stream will not hand to the relay again. Write them anew: ' +
        'ops outbox redrive --stale (a dry run; add --apply)'
      );
    case 'outbound-refusal': {
      if (letter.refusal.reason === OutboundRefusalReason.UNAUTHENTICATED) return undefined;
      if (namedReasons.some((r) => r.toUpperCase() === letter.refusal.reason)) return undefined;
      return (
        `the bridge refused it as ${letter.refusal.reason}: sent back unchanged to the same bridge it is refused again. ` +
        `Deploy a bridge that reads this envelope (or fix the relay that wrote it), then name --reason ${letter.refusal.reason}` +
        ` to send it back to ${prefix}-rocketmq-outbound`
      );
    }
  }
}
