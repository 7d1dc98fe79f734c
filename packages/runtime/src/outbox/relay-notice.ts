import type { OutboxItem } from '../config/index.ts';

/** The SQS message attribute (and body field) saying what a letter in the relay's DLQ is. */
export const OUTBOX_NOTICE_KIND = 'outbox-relay-notice';
/** SQS message attribute carrying the reason's code (`RelayError.code`), for alarms and `ops`. */
export const OUTBOX_NOTICE_REASON_ATTRIBUTE = 'OutboxFailureReason';

/**
 * What the relay puts in its DLQ for an item it could not send for good: where the item is (its
 * group's outbox table, by event id; it stays there, FAILED, with the same reason, until it expires or
 * `ops outbox redrive` sets it back to PENDING) and why. The body is not repeated: it is in the item.
 */
export interface OutboxDeadLetterNotice {
  readonly kind: typeof OUTBOX_NOTICE_KIND;
  readonly eventId: string;
  readonly group: string;
  readonly topic: string;
  readonly tag: string;
  readonly target: string;
  readonly businessKey: string;
  readonly sourceMsgId: string;
  readonly committedAt: number;
  /** `RelayError.code` */
  readonly code: string;
  readonly reason: string;
}

export function outboxNotice(
  item: Partial<OutboxItem> & Pick<OutboxItem, 'eventId'>,
  group: string,
  code: string,
  reason: string,
): OutboxDeadLetterNotice {
  return {
    kind: OUTBOX_NOTICE_KIND,
    eventId: item.eventId,
    group,
    topic: item.topic ?? '',
    tag: item.tag ?? '',
    target: item.target ?? '',
    businessKey: item.businessKey ?? '',
    sourceMsgId: item.sourceMsgId ?? '',
    committedAt: item.committedAt ?? 0,
    code,
    reason,
  };
}

/** A letter of the relay's DLQ as a notice, or `undefined` for anything else. */
export function readOutboxNotice(body: string): OutboxDeadLetterNotice | undefined {
  try {
    const json = JSON.parse(body) as Partial<OutboxDeadLetterNotice> | null;
    return json?.kind === OUTBOX_NOTICE_KIND && typeof json.eventId === 'string'
      ? (json as OutboxDeadLetterNotice)
      : undefined;
  } catch {
    return undefined;
  }
}
