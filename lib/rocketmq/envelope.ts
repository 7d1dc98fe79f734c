import { z } from 'zod';
import { ROCKETMQ_EVENT_TYPE } from '../config/telemetry-names.ts';

/**
 * The bridge envelope: one RocketMQ message as a CloudEvents 1.0 object with
 * `type: "mq:Topic:SendMessage"`, the shape RocketMQ events already have on
 * EventBridge-style integrations, extended with typed fields. It arrives either as the
 * SQS body itself or wrapped in an EventBridge event (`detail` = the CloudEvent or its
 * `data`). `parseEnvelope` accepts all three and returns one normalised message.
 * The JSON Schema of the wire format is `docs/envelope.schema.json`.
 */
export { ROCKETMQ_EVENT_TYPE };

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
  readonly bornHost?: string;
  readonly storeHost?: string;
  readonly source?: string;
  readonly time?: string;
  readonly systemProperties: Readonly<Record<string, string>>;
  readonly userProperties: Readonly<Record<string, string>>;
}

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

const MSG_ID = /^[0-9A-Fa-f]{32,56}$/;
const stringMap = z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]).transform(String));
const nonNegativeInt = z.number().int().nonnegative();

const dataSchema = z.object({
  topic: z.string().min(1).max(255),
  msgId: z.string().regex(MSG_ID, 'msgId must be 32 to 56 hex characters'),
  offsetMsgId: z.string().optional(),
  tags: z.string().nullish(),
  keys: z.union([z.array(z.string()), z.string()]).nullish(),
  queueId: nonNegativeInt.optional(),
  queueOffset: nonNegativeInt.optional(),
  brokerName: z.string().optional(),
  bornTimestamp: nonNegativeInt.optional(),
  storeTimestamp: nonNegativeInt.optional(),
  bornHost: z.string().optional(),
  storeHost: z.string().optional(),
  reconsumeTimes: nonNegativeInt.optional(),
  systemProperties: stringMap.optional(),
  userProperties: stringMap.optional(),
  bodyEncoding: z.enum(['utf8', 'base64']).optional(),
  body: z.string(),
});

const cloudEventSchema = z.object({
  specversion: z.literal('1.0'),
  id: z.string().min(1),
  type: z.literal(ROCKETMQ_EVENT_TYPE),
  source: z.string().optional(),
  subject: z.string().optional(),
  time: z.string().optional(),
  datacontenttype: z.string().optional(),
  data: dataSchema,
});

type CloudEvent = z.infer<typeof cloudEventSchema>;

/** The envelope as written (the schema's input type): what `buildEnvelope` returns, so writer and parser cannot drift. */
export type Envelope = z.input<typeof cloudEventSchema>;

/** The envelope's JSON Schema, generated from the parser's own schema so the two cannot drift. */
export function envelopeJsonSchema(): Record<string, unknown> {
  return {
    ...z.toJSONSchema(cloudEventSchema.describe('RocketMQ bridge envelope: one RocketMQ message as a CloudEvents 1.0 object'), { io: 'input' }),
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

/** Accepts the CloudEvent itself, or an EventBridge event whose `detail` is the CloudEvent or its `data`. */
function unwrap(json: unknown): { event?: CloudEvent; data: EnvelopeData } {
  if (isObject(json) && 'detail-type' in json && 'detail' in json) {
    const detail = json.detail;
    if (isObject(detail) && 'specversion' in detail) {
      const event = validate(cloudEventSchema, detail);
      return { event, data: event.data };
    }
    return { data: validate(dataSchema, detail) };
  }
  const event = validate(cloudEventSchema, json);
  return { event, data: event.data };
}

function normalise({ event, data }: { event?: CloudEvent; data: EnvelopeData }): RocketMQMessage {
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
    bornHost: data.bornHost,
    storeHost: data.storeHost,
    source: event?.source,
    time: event?.time,
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

function decodeBody(data: EnvelopeData): string {
  if (data.bodyEncoding !== 'base64') return data.body;
  const compact = data.body.replace(/\s+/g, '');
  if (compact.length % 4 !== 0 || !BASE64.test(compact)) {
    throw new InvalidEnvelopeError('bodyEncoding is base64 but body is not valid base64', data.msgId);
  }
  const bytes = Buffer.from(compact, 'base64');
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new InvalidEnvelopeError('base64 body is not UTF-8 text', data.msgId);
  }
}

function validate<T extends z.ZodType>(schema: T, value: unknown): z.infer<T> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const path = issue.path.length > 0 ? issue.path.join('.') : '(root)';
  const msgId = isObject(value) && isObject(value.data) && typeof value.data.msgId === 'string' ? value.data.msgId : undefined;
  throw new InvalidEnvelopeError(`${path}: ${issue.message}`, msgId);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
