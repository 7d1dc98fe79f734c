import { createHash } from 'node:crypto';
import { z } from 'zod';

/**
 * What arrives on the alarm topic, reduced to what a person needs. CloudWatch publishes the alarm
 * as a JSON string in `Sns.Message`; anything else on the topic (a console test publish, a
 * malformed message) becomes an `unrecognized` notification so it is still shown, never dropped.
 */

export type AlarmState = 'ALARM' | 'OK' | 'INSUFFICIENT_DATA';

export interface MetricDimension {
  name: string;
  value: string;
}

export interface SingleMetricTrigger {
  kind: 'metric';
  metricName: string;
  namespace: string;
  statistic: string | null;
  dimensions: MetricDimension[];
  period: number | null;
  evaluationPeriods: number | null;
  comparisonOperator: string | null;
  threshold: number | null;
}

export interface MetricMathQuery {
  id: string;
  expression: string | null;
  label: string | null;
  returnData: boolean;
  metricName: string | null;
  namespace: string | null;
  stat: string | null;
  period: number | null;
  dimensions: MetricDimension[];
}

export interface MetricMathTrigger {
  kind: 'metric-math';
  metrics: MetricMathQuery[];
  evaluationPeriods: number | null;
  comparisonOperator: string | null;
  threshold: number | null;
}

export interface CloudWatchAlarm {
  alarmName: string;
  description: string | null;
  state: AlarmState;
  previousState: AlarmState | null;
  reason: string;
  /** ISO-8601 instant; CloudWatch's `+0000` offset is normalised so `Date` can parse it. */
  stateChangeTime: string;
  regionName: string | null;
  accountId: string | null;
  alarmArn: string | null;
  trigger: SingleMetricTrigger | MetricMathTrigger | null;
}

interface NotificationBase {
  /** SNS MessageId: stable across Lambda's retries of the same delivery, so it keys deduplication. */
  id: string;
  /** When SNS accepted the message (ISO-8601). */
  receivedAt: string;
  topicArn: string | null;
}

export interface AlarmStateChange extends NotificationBase {
  kind: 'alarm';
  alarm: CloudWatchAlarm;
}

export interface UnrecognizedMessage extends NotificationBase {
  kind: 'unrecognized';
  subject: string | null;
  body: string;
  /** Why it is not a CloudWatch alarm, for the reader. */
  problem: string;
}

export type AlarmNotification = AlarmStateChange | UnrecognizedMessage;

const stateSchema = z.enum(['ALARM', 'OK', 'INSUFFICIENT_DATA']);

/** CloudWatch writes `name`/`value`; some producers capitalise them. Accept both. */
const dimensionSchema = z
  .object({
    name: z.string().optional(),
    value: z.unknown().optional(),
    Name: z.string().optional(),
    Value: z.unknown().optional(),
  })
  .transform((d) => ({ name: d.name ?? d.Name ?? '', value: String(d.value ?? d.Value ?? '') }));

const looseNumber = z
  .union([z.number(), z.string()])
  .nullish()
  .transform((v) => (v === null || v === undefined || v === '' || Number.isNaN(Number(v)) ? null : Number(v)));
const looseString = z.unknown().transform((v) => (v === null || v === undefined ? null : String(v)));

const singleMetricSchema = z.object({
  MetricName: z.string(),
  Namespace: z.string(),
  Statistic: looseString.optional(),
  ExtendedStatistic: looseString.optional(),
  Dimensions: z.array(dimensionSchema).nullish(),
  Period: looseNumber,
  EvaluationPeriods: looseNumber,
  ComparisonOperator: looseString.optional(),
  Threshold: looseNumber,
});

const metricMathSchema = z.object({
  Metrics: z.array(
    z.object({
      Id: looseString.optional(),
      Expression: looseString.optional(),
      Label: looseString.optional(),
      ReturnData: z.boolean().nullish(),
      MetricStat: z
        .object({
          Metric: z
            .object({
              MetricName: looseString.optional(),
              Namespace: looseString.optional(),
              Dimensions: z.array(dimensionSchema).nullish(),
            })
            .nullish(),
          Period: looseNumber,
          Stat: looseString.optional(),
        })
        .nullish(),
    }),
  ),
  EvaluationPeriods: looseNumber,
  ComparisonOperator: looseString.optional(),
  Threshold: looseNumber,
});

const alarmSchema = z.object({
  AlarmName: z.string().min(1),
  AlarmDescription: z.string().nullish(),
  NewStateValue: stateSchema,
  OldStateValue: stateSchema.nullish().catch(null),
  NewStateReason: z.string().nullish(),
  StateChangeTime: z.string().nullish(),
  Region: z.string().nullish(),
  AWSAccountId: looseString.optional(),
  AlarmArn: z.string().nullish(),
  Trigger: z.unknown().optional(),
});

const snsRecordSchema = z.object({
  Sns: z.object({
    MessageId: z.string().optional(),
    TopicArn: z.string().nullish(),
    Subject: z.string().nullish(),
    Message: z.string(),
    Timestamp: z.string().optional(),
  }),
});

const snsEventSchema = z.object({ Records: z.array(z.unknown()).min(1) });

/** One notification per SNS record; never throws, whatever the event looks like. */
export function parseSnsEvent(event: unknown, now: Date = new Date()): AlarmNotification[] {
  const envelope = snsEventSchema.safeParse(event);
  if (!envelope.success) {
    return [unrecognized(safeStringify(event), 'the event is not an SNS event', null, null, null, now)];
  }
  return envelope.data.Records.map((record) => parseSnsRecord(record, now));
}

export function parseSnsRecord(record: unknown, now: Date = new Date()): AlarmNotification {
  const parsed = snsRecordSchema.safeParse(record);
  if (!parsed.success) {
    return unrecognized(safeStringify(record), 'the record has no SNS message', null, null, null, now);
  }
  const sns = parsed.data.Sns;
  const base = {
    id: sns.MessageId ?? contentId(sns.Message),
    receivedAt: toIsoInstant(sns.Timestamp) ?? now.toISOString(),
    topicArn: sns.TopicArn ?? null,
  };
  let json: unknown;
  try {
    json = JSON.parse(sns.Message);
  } catch {
    return {
      ...base,
      kind: 'unrecognized',
      subject: sns.Subject ?? null,
      body: sns.Message,
      problem: 'the message is not JSON',
    };
  }
  const alarm = alarmSchema.safeParse(json);
  if (!alarm.success) {
    const fields = [...new Set(alarm.error.issues.map((i) => i.path.join('.') || '(root)'))].join(', ');
    return {
      ...base,
      kind: 'unrecognized',
      subject: sns.Subject ?? null,
      body: sns.Message,
      problem: `the message is not a CloudWatch alarm notification (check: ${fields})`,
    };
  }
  const a = alarm.data;
  return {
    ...base,
    kind: 'alarm',
    alarm: {
      alarmName: a.AlarmName,
      description: a.AlarmDescription?.trim() ? a.AlarmDescription : null,
      state: a.NewStateValue,
      previousState: a.OldStateValue ?? null,
      reason: a.NewStateReason ?? '',
      stateChangeTime: toIsoInstant(a.StateChangeTime) ?? base.receivedAt,
      regionName: a.Region ?? null,
      accountId: a.AWSAccountId ?? null,
      alarmArn: a.AlarmArn ?? null,
      trigger: parseTrigger(a.Trigger),
    },
  };
}

/** A trigger we cannot read only costs the metric section, not the whole alarm. */
function parseTrigger(trigger: unknown): CloudWatchAlarm['trigger'] {
  if (trigger && typeof trigger === 'object' && Array.isArray((trigger as { Metrics?: unknown }).Metrics)) {
    const math = metricMathSchema.safeParse(trigger);
    if (!math.success) return null;
    return {
      kind: 'metric-math',
      metrics: math.data.Metrics.map((m) => ({
        id: m.Id ?? '',
        expression: m.Expression ?? null,
        label: m.Label ?? null,
        returnData: m.ReturnData ?? false,
        metricName: m.MetricStat?.Metric?.MetricName ?? null,
        namespace: m.MetricStat?.Metric?.Namespace ?? null,
        stat: m.MetricStat?.Stat ?? null,
        period: m.MetricStat?.Period ?? null,
        dimensions: m.MetricStat?.Metric?.Dimensions ?? [],
      })),
      evaluationPeriods: math.data.EvaluationPeriods,
      comparisonOperator: math.data.ComparisonOperator ?? null,
      threshold: math.data.Threshold,
    };
  }
  const single = singleMetricSchema.safeParse(trigger);
  if (!single.success) return null;
  const t = single.data;
  return {
    kind: 'metric',
    metricName: t.MetricName,
    namespace: t.Namespace,
    statistic: t.Statistic ?? t.ExtendedStatistic ?? null,
    dimensions: t.Dimensions ?? [],
    period: t.Period,
    evaluationPeriods: t.EvaluationPeriods,
    comparisonOperator: t.ComparisonOperator ?? null,
    threshold: t.Threshold,
  };
}

/** CloudWatch writes `2026-11-30T03:24:34.803+0000`; `Date` wants `+00:00`. */
export function toIsoInstant(value: string | null | undefined): string | null {
  if (!value) return null;
  const normalised = value.trim().replace(/([+-]\d{2})(\d{2})$/, '$1:$2');
  const ms = Date.parse(normalised);
  return Number.isNaN(ms) ? null : new Date(ms).toISOString();
}

function unrecognized(
  body: string,
  problem: string,
  subject: string | null,
  topicArn: string | null,
  id: string | null,
  now: Date,
): UnrecognizedMessage {
  return {
    kind: 'unrecognized',
    id: id ?? contentId(body),
    receivedAt: now.toISOString(),
    topicArn,
    subject,
    body,
    problem,
  };
}

/** Deterministic id for input without an SNS MessageId, so retries of it still deduplicate. */
function contentId(body: string): string {
  return `content-${createHash('sha256').update(body).digest('hex').slice(0, 32)}`;
}

function safeStringify(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
