import { z } from 'zod';

/**
 * The bridge envelope: one RocketMQ message as a CloudEvents 1.0 object with
 * `type: "mq:Topic:SendMessage"`, the shape RocketMQ events already have on
 * EventBridge-style integrations, extended with typed fields. It arrives either as the
 * SQS body itself or wrapped in an EventBridge event (`detail` = the CloudEvent or its
 * `data`). `parseEnvelope` accepts all three and returns one normalised message.
 * The JSON Schema of the wire format is `docs/envelope.schema.json`.
 */
/**
 * The CloudEvent type of a RocketMQ message (Alibaba Cloud's EventBridge shape, which the bridge keeps). A fact of the
 * envelope: the CDK app's EventBridge rules match it, so they read it from here.
 */
export const ROCKETMQ_EVENT_TYPE = 'mq:Topic:SendMessage';

/** A RocketMQ message as every consumer sees it, whatever wrapping it arrived in. */
export interface RocketMQMessage {
  readonly msgId: string;
  readonly topic: string;
  /** `undefined` when the producer set no tag (matches only the `*` selector). */
  readonly tags: string | undefined;
  readonly keys: readonly string[];
  readonly body: string;
  readonly reconsumeTimes: number;
  readonly offsetMsgId?: string;
  readonly queueId?: number;
  readonly queueOffset?: number;
  readonly brokerName?: string;
  readonly bornTimestamp?: number;
  readonly storeTimestamp?: number;
  /**
   * When the producer asked RocketMQ to deliver the message (epoch milliseconds): RocketMQ 5's
   * delivery timestamp of a delay message, or a 4.x message's `__STARTDELIVERTIME`. Absent for a
   * message sent to be delivered at once.
   */
  readonly deliveryTimestamp?: number;
  /** RocketMQ 4's delay level the broker held the message back on (its `DELAY` property). */
  readonly delayTimeLevel?: number;
  readonly bornHost?: string;
  readonly storeHost?: string;
  readonly source?: string;
  readonly time?: string;
  readonly systemProperties: Readonly<Record<string, string>>;
  readonly userProperties: Readonly<Record<string, string>>;
  /**
   * The envelope's CloudEvents distributed-tracing attributes: the W3C context of the last hop that
   * forwarded the message (the bridge's forward span), unvalidated (packages/runtime/src/tracing reads it strictly).
   */
  readonly traceparent?: string;
  readonly tracestate?: string;
  /** Set when EventBridge replayed the event from the bus archive (its `replay-name`): an old copy arriving as new. */
  readonly replayName?: string;
}

/**
 * RocketMQ 5's trace-context system property (`MessageConst.PROPERTY_TRACE_CONTEXT`), where the 5.x
 * client's OpenTelemetry instrumentation puts the producer's `traceparent`; the envelope keeps it
 * under this name among its `systemProperties`.
 */
export const ROCKETMQ5_TRACE_CONTEXT_PROPERTY = 'TRACE_CONTEXT';

/** A body that is not a RocketMQ envelope: permanent, retrying cannot fix it. */
export class InvalidEnvelopeError extends Error {
  override readonly name = 'InvalidEnvelopeError';
  constructor(
    readonly reason: string,
    readonly msgId?: string,
  ) {
    super(`invalid RocketMQ envelope: ${reason}`);
  }
}

/**
 * Bounds on what a producer chooses. Where RocketMQ has a limit the envelope takes it, so whatever a
 * broker stored fits: the bridge can never be handed a message its envelope writer must refuse.
 */
export const ENVELOPE_LIMITS = {
  /**
   * RocketMQ's TopicValidator (4.7.1 through 5.x, common/…/topic/TopicValidator.java): the broker
   * refuses a topic longer than TOPIC_MAX_LENGTH = 127 or with characters outside ^[%|a-zA-Z0-9_-]+$.
   */
  topicChars: 127,
  /**
   * RocketMQ's commit log stores the length of a message's properties in a short: the broker refuses
   * properties over Short.MAX_VALUE = 32,767 UTF-8 bytes, encoded `name U+0001 value U+0002` each
   * (PutMessageStatus.PROPERTIES_SIZE_EXCEEDED in CommitLog / MessageExtEncoder; "msg properties
   * length limit 32k"). Tags (TAGS) and keys (KEYS, space-separated) are properties, so this one
   * limit bounds them and every property name and value.
   */
  propertiesBytes: 32_767,
  /**
   * Ours, for the fields RocketMQ does not bound itself: the id (a msgId is at most 56 hex
   * characters; CloudEvents sets no limit), source, subject, time, content type, offsetMsgId,
   * broker name and hosts. The body is bounded by the transport (SQS, EventBridge), not here.
   */
  textChars: 256,
} as const;

const MSG_ID = /^[0-9A-Fa-f]{32,56}$/;
/** A signing key's id as an envelope names it (packages/runtime/src/rocketmq/envelope-signature.ts `signingKeyId`). */
export const SIGNING_KEY_ID = /^[A-Za-z0-9_-]{16}$/;
const TOPIC = /^[%|a-zA-Z0-9_-]+$/;
const stringMap = z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]).transform(String));
const nonNegativeInt = z.number().int().nonnegative();
const boundedText = z.string().max(ENVELOPE_LIMITS.textChars);

const dataSchema = z.object({
  topic: z
    .string()
    .min(1)
    .max(ENVELOPE_LIMITS.topicChars)
    .regex(TOPIC, 'topic may hold only %|a-zA-Z0-9_- (RocketMQ TopicValidator)'),
  msgId: z.string().regex(MSG_ID, 'msgId must be 32 to 56 hex characters'),
  offsetMsgId: boundedText.optional(),
  tags: z.string().nullish(),
  keys: z.union([z.array(z.string()), z.string()]).nullish(),
  queueId: nonNegativeInt.optional(),
  queueOffset: nonNegativeInt.optional(),
  brokerName: boundedText.optional(),
  bornTimestamp: nonNegativeInt.optional(),
  storeTimestamp: nonNegativeInt.optional(),
  deliveryTimestamp: nonNegativeInt.optional(),
  delayTimeLevel: z.number().int().positive().optional(),
  bornHost: boundedText.optional(),
  storeHost: boundedText.optional(),
  reconsumeTimes: nonNegativeInt.optional(),
  systemProperties: stringMap.optional(),
  userProperties: stringMap.optional(),
  bodyEncoding: z.enum(['utf8', 'base64']).optional(),
  body: z.string(),
});

const cloudEventSchema = z.object({
  specversion: z.literal('1.0'),
  id: boundedText.min(1),
  type: z.literal(ROCKETMQ_EVENT_TYPE),
  source: boundedText.optional(),
  subject: boundedText.optional(),
  time: boundedText.optional(),
  datacontenttype: boundedText.optional(),
  /**
   * The bridge's HMAC over the rest of the envelope (packages/runtime/src/rocketmq/envelope-signature.ts); checked when the consumer
   * requires it.
   */
  signature: boundedText.optional(),
  /**
   * The id of the key the signature was made with (`signingKeyId`: 96 bits of the key's SHA-256, base64url), covered
   * by the signature: a verifier that does not hold that key yet reads the secret again at once instead of refusing a
   * genuine envelope.
   */
  signaturekey: z.string().regex(SIGNING_KEY_ID, 'signaturekey must be 16 base64url characters').optional(),
  /**
   * CloudEvents distributed-tracing extension: the W3C context of the hop that wrote the envelope.
   * A malformed value is ignored by the reader, never refused; only its length is bounded here.
   */
  traceparent: boundedText.optional(),
  tracestate: z.string().max(512).optional(),
  data: dataSchema,
});

type CloudEvent = z.infer<typeof cloudEventSchema>;

/**
 * The envelope as written (the schema's input type): what `buildEnvelope` returns, so writer and parser cannot drift.
 */
export type Envelope = z.input<typeof cloudEventSchema>;

/** The envelope's JSON Schema, generated from the parser's own schema so the two cannot drift. */
export function envelopeJsonSchema(): Record<string, unknown> {
  return {
    ...z.toJSONSchema(
      cloudEventSchema.describe('RocketMQ bridge envelope: one RocketMQ message as a CloudEvents 1.0 object'),
      { io: 'input' },
    ),
    $id: 'envelope.schema.json',
  };
}
type EnvelopeData = z.infer<typeof dataSchema>;

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Parses an SQS body into a RocketMQ message, or throws `InvalidEnvelopeError`. */
export function parseEnvelope(body: string): RocketMQMessage {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    throw new InvalidEnvelopeError('body is not JSON');
  }
  return normalise(unwrap(json));
}

/**
 * Throws the `InvalidEnvelopeError` `parseEnvelope` would throw for this envelope's shape and
 * limits: the writer's check on what it built. The body is not decoded: bytes that are not UTF-8
 * travel as base64 on purpose, to be dead-lettered by the consumer with their reason and kept.
 */
export function checkEnvelope(envelope: Envelope): void {
  checkPropertiesSize(unwrap(envelope).data);
}

/** Accepts the CloudEvent itself, or an EventBridge event whose `detail` is the CloudEvent or its `data`. */
function unwrap(json: unknown): { event?: CloudEvent; data: EnvelopeData; replayName?: string } {
  if (isObject(json) && 'detail-type' in json && 'detail' in json) {
    const detail = json.detail;
    const replay = json['replay-name'];
    const replayName = typeof replay === 'string' && replay !== '' ? { replayName: excerpt(replay) } : {};
    if (isObject(detail) && 'specversion' in detail) {
      const event = validate(cloudEventSchema, detail);
      return { event, data: event.data, ...replayName };
    }
    return { data: validate(dataSchema, detail), ...replayName };
  }
  const event = validate(cloudEventSchema, json);
  return { event, data: event.data };
}

function normalise({
  event,
  data,
  replayName,
}: {
  event?: CloudEvent;
  data: EnvelopeData;
  replayName?: string;
}): RocketMQMessage {
  checkPropertiesSize(data);
  const system = data.systemProperties ?? {};
  const tags = data.tags ?? system.TAGS;
  return {
    msgId: data.msgId.toUpperCase(),
    topic: data.topic,
    tags: tags === undefined || tags === '' ? undefined : tags,
    keys: keysOf(data.keys, system.KEYS),
    body: decodeBody(data),
    reconsumeTimes: data.reconsumeTimes ?? 0,
    offsetMsgId: data.offsetMsgId,
    queueId: data.queueId,
    queueOffset: data.queueOffset,
    brokerName: data.brokerName,
    bornTimestamp: data.bornTimestamp,
    storeTimestamp: data.storeTimestamp,
    ...(data.deliveryTimestamp === undefined ? {} : { deliveryTimestamp: data.deliveryTimestamp }),
    ...(data.delayTimeLevel === undefined ? {} : { delayTimeLevel: data.delayTimeLevel }),
    bornHost: data.bornHost,
    storeHost: data.storeHost,
    source: event?.source,
    time: event?.time,
    ...(event?.traceparent === undefined ? {} : { traceparent: event.traceparent }),
    ...(event?.tracestate === undefined ? {} : { tracestate: event.tracestate }),
    ...(replayName === undefined ? {} : { replayName }),
    systemProperties: system,
    userProperties: data.userProperties ?? {},
  };
}

/** RocketMQ stores several keys in the KEYS property separated by a space. */
function keysOf(keys: EnvelopeData['keys'], systemKeys: string | undefined): string[] {
  const raw = keys ?? systemKeys ?? [];
  const list = typeof raw === 'string' ? raw.split(' ') : raw;
  return [...new Set(list.map((k) => k.trim()).filter((k) => k.length > 0))];
}

/**
 * The message's properties as RocketMQ's commit log holds them: every system and user property,
 * plus `tags` and `keys` when the envelope carries them only as fields (the writer puts them in
 * `systemProperties` too, where they count once).
 */
function checkPropertiesSize(data: EnvelopeData): void {
  const system = data.systemProperties ?? {};
  const keys = typeof data.keys === 'string' ? data.keys : data.keys?.join(' ');
  const entries: Array<[string, string]> = [...Object.entries(system), ...Object.entries(data.userProperties ?? {})];
  if (data.tags && data.tags !== system.TAGS) entries.push(['TAGS', data.tags]);
  if (keys && keys !== system.KEYS) entries.push(['KEYS', keys]);
  let bytes = 0;
  let largest = { name: '', bytes: 0 };
  for (const [name, value] of entries) {
    const size = Buffer.byteLength(name) + Buffer.byteLength(value) + 2;
    bytes += size;
    if (size > largest.bytes) largest = { name, bytes: size };
  }
  if (bytes > ENVELOPE_LIMITS.propertiesBytes) {
    throw new InvalidEnvelopeError(
      `data: properties take ${bytes} bytes as RocketMQ stores them, over the broker's ${ENVELOPE_LIMITS.propertiesBytes} ` +
        `(largest: ${pathSegment(largest.name)}, ${largest.bytes} bytes)`,
      data.msgId,
    );
  }
}

function decodeBody(data: EnvelopeData): string {
  if (data.bodyEncoding !== 'base64') return data.body;
  const compact = data.body.replace(/\s+/g, '');
  if (compact.length % 4 !== 0 || !BASE64.test(compact)) {
    throw new InvalidEnvelopeError('bodyEncoding is base64 but body is not valid base64', data.msgId);
  }
  const bytes = Buffer.from(compact, 'base64');
  try {
    // ignoreBOM keeps a leading byte-order mark in the text, as the writer keeps it: bodies round-trip byte for byte.
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw new InvalidEnvelopeError('base64 body is not UTF-8 text', data.msgId);
  }
}

function validate<T extends z.ZodType>(schema: T, value: unknown): z.infer<T> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const path = issue.path.length > 0 ? issue.path.map((segment) => pathSegment(String(segment))).join('.') : '(root)';
  // Only a well-formed msgId travels on (into logs and DLQ attributes); anything else is the sender's choice.
  const msgId =
    isObject(value) && isObject(value.data) && typeof value.data.msgId === 'string' && MSG_ID.test(value.data.msgId)
      ? value.data.msgId
      : undefined;
  throw new InvalidEnvelopeError(`${path}: ${issue.message}`, msgId);
}

/** Field names print as they are; property names are the sender's choice and print as an excerpt. */
function pathSegment(segment: string): string {
  return /^[A-Za-z0-9_]{1,40}$/.test(segment) ? segment : excerpt(segment);
}

const EXCERPT_CHARS = 40;

/**
 * At most `maxChars` (by default 40) characters of untrusted text, quoted, with control, format
 * (bidi, zero-width) and line-separator characters as `\u` escapes, and how long the whole was:
 * what a reason may quote of it, however long or hostile (reasons go to logs, DLQ attributes,
 * terminals and alarms).
 */
export function excerpt(text: string, maxChars = EXCERPT_CHARS): string {
  // Twice as many UTF-16 units as characters always holds enough whole code points to cut from.
  const head = Array.from(text.slice(0, maxChars * 2))
    .slice(0, maxChars)
    .join('');
  const quoted = JSON.stringify(head).replace(
    /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu,
    (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`,
  );
  return head.length < text.length ? `${quoted}… (${text.length} characters)` : quoted;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
