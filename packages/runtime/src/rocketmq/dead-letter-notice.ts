import type { Envelope } from './envelope.ts';

/**
 * The bridge's dead-letter notice: what the bridge puts in a group's DLQ for a message it could
 * not forward at all (today: an envelope too large for the target). It is the envelope with the
 * body left out, the body being why it did not fit, so it is no message a consumer can apply:
 * the body is still in RocketMQ, by topic and msgId, or broker, queue and offset, for as long as
 * the broker keeps its commit log. The bridge writes notices here and `ops dlq` reads them here,
 * so the two cannot drift.
 *
 * How a notice says what it is, without guessing from its shape:
 * - the SQS message attribute `dead-letter-kind` = `bridge-notice`, beside `BridgeDeadLetterReason`
 *   (the reason, which alarms and older tools read);
 * - the same in the body, as CloudEvents extension attributes `deadletterkind`,
 *   `deadletterreason` and `deadletterdetail`, so a notice stays recognisable when its
 *   attributes are gone (a notice sent to the consumer anyway comes back from the failure
 *   router with the router's attributes instead).
 * Notices written before `dead-letter-kind` existed carry `BridgeDeadLetterReason`, or a body
 * with `deadletterreason` and `data.bodyOmitted`; they are notices too.
 */
export const DEAD_LETTER_KIND_ATTRIBUTE = 'dead-letter-kind';
export const BRIDGE_NOTICE_KIND = 'bridge-notice';
/** SQS message attribute carrying the notice's reason. */
export const NOTICE_REASON_ATTRIBUTE = 'BridgeDeadLetterReason';

/** Why the bridge wrote a notice instead of forwarding the message. */
export const NoticeReason = {
  /** The envelope exceeds the target's message size limit; retrying cannot fix it. */
  BodyTooLarge: 'BODY_TOO_LARGE',
} as const;
export type NoticeReason = (typeof NoticeReason)[keyof typeof NoticeReason];

/** Where the body of a notice's message still is: everything the broker needs to hand it out again. */
export interface NoticeBodyLocation {
  readonly topic?: string;
  readonly msgId?: string;
  /** RocketMQ 4 only: store host + commit-log offset, what `mqadmin queryMsgById` takes. */
  readonly offsetMsgId?: string;
  readonly brokerName?: string;
  readonly queueId?: number;
  readonly queueOffset?: number;
  /** When the broker stored it: the commit log keeps it for its retention period from there. */
  readonly storeTimestamp?: number;
}

export interface DeadLetterNotice {
  readonly reason: string;
  readonly detail: string | undefined;
  readonly body: NoticeBodyLocation;
}

/** The notice's SQS body: the envelope without its body, and why. */
export function noticeBody(envelope: Envelope, reason: NoticeReason, detail: string): string {
  return JSON.stringify({
    ...envelope,
    deadletterkind: BRIDGE_NOTICE_KIND,
    deadletterreason: reason,
    deadletterdetail: detail,
    data: { ...envelope.data, body: '', bodyEncoding: 'utf8', bodyOmitted: true },
  });
}

/**
 * The notice a dead letter is, or `undefined` for any other letter (the failure router's, or a
 * message SQS's redrive policy moved). `attributes` are the letter's SQS message attributes by name.
 */
export function readNotice(body: string, attributes: Readonly<Record<string, string>>): DeadLetterNotice | undefined {
  const json = parseObject(body);
  const data = isObject(json?.data) ? json.data : {};
  const marked =
    attributes[DEAD_LETTER_KIND_ATTRIBUTE] === BRIDGE_NOTICE_KIND || json?.deadletterkind === BRIDGE_NOTICE_KIND;
  const older = attributes[NOTICE_REASON_ATTRIBUTE] !== undefined;
  const bodyOnly = typeof json?.deadletterreason === 'string' && data.bodyOmitted === true;
  if (!marked && !older && !bodyOnly) return undefined;
  return {
    reason: attributes[NOTICE_REASON_ATTRIBUTE] || text(json?.deadletterreason) || 'no reason recorded',
    detail: text(json?.deadletterdetail),
    body: {
      topic: text(data.topic),
      msgId: text(data.msgId),
      offsetMsgId: text(data.offsetMsgId),
      brokerName: text(data.brokerName),
      queueId: whole(data.queueId),
      queueOffset: whole(data.queueOffset),
      storeTimestamp: whole(data.storeTimestamp),
    },
  };
}

/**
 * How to fetch the body of a notice's message from RocketMQ, as `mqadmin` commands (each writes
 * the body to /tmp/rocketmq/msgbodys/), most precise first: by queue offset, by commit-log id
 * (4.x), by msgId. `<nameserver>` is left for the operator.
 */
export function refetchCommands(location: NoticeBodyLocation): string[] {
  const { topic, msgId, offsetMsgId, brokerName, queueId, queueOffset } = location;
  const commands: string[] = [];
  if (topic && brokerName && queueId !== undefined && queueOffset !== undefined)
    commands.push(
      `mqadmin queryMsgByOffset -n <nameserver> -t ${topic} -b ${brokerName} -i ${queueId} -o ${queueOffset}`,
    );
  if (offsetMsgId) commands.push(`mqadmin queryMsgById -n <nameserver> -i ${offsetMsgId}`);
  if (topic && msgId) commands.push(`mqadmin queryMsgByUniqueKey -n <nameserver> -t ${topic} -i ${msgId}`);
  return commands;
}

function parseObject(body: string): Record<string, unknown> | undefined {
  try {
    const json: unknown = JSON.parse(body);
    return isObject(json) ? json : undefined;
  } catch {
    return undefined;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function whole(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : undefined;
}
