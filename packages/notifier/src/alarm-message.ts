import { alarmConsoleUrl } from './alarm-console-link.ts';
import type { AlarmNotification, AlarmState, CloudWatchAlarm, MetricDimension } from './alarm-event.ts';
import { codePointLength, inlineText, quotedBlock, truncateText } from './markdown-text.ts';

/** The JSON body of a DingTalk markdown message. */
export interface RobotMessage {
  msgtype: 'markdown';
  markdown: { title: string; text: string };
  at: { atMobiles: string[]; isAtAll: false };
}

export interface MessageOptions {
  /** IANA zone the team reads times in, e.g. `Asia/Shanghai`. */
  timeZone: string;
  /** DingTalk "custom keyword" security: must appear in every message. */
  keyword?: string | undefined;
  /** Mobile numbers to @-mention on ALARM (never on OK). */
  atMobiles?: string[] | undefined;
  /** Region for console links when the alarm carries no ARN. */
  fallbackRegion?: string | undefined;
  /** DingTalk refuses bodies over 20,000 bytes (errcode 460101); we stay under this. */
  maxBodyBytes?: number | undefined;
}

/** Below DingTalk's 20,000 bytes so the limit holds whatever their exact accounting is. */
export const DEFAULT_MAX_BODY_BYTES = 19_000;

const STATE_MARK: Record<AlarmState, string> = {
  ALARM: '🔴 ALARM',
  OK: '🟢 OK',
  INSUFFICIENT_DATA: '⚪ INSUFFICIENT_DATA',
};

const COMPARISON: Record<string, string> = {
  GreaterThanOrEqualToThreshold: '≥',
  GreaterThanThreshold: '>',
  LessThanThreshold: '<',
  LessThanOrEqualToThreshold: '≤',
  LessThanLowerOrGreaterThanUpperThreshold: 'outside the band',
  LessThanLowerThreshold: 'below the band',
  GreaterThanUpperThreshold: 'above the band',
};

export function bodyBytes(message: RobotMessage): number {
  return Buffer.byteLength(JSON.stringify(message), 'utf8');
}

const timeFormats = new Map<string, Intl.DateTimeFormat>();

/** Time as the team reads it, with the offset so nobody has to guess the zone. */
export function formatTime(iso: string, timeZone: string): string {
  let format = timeFormats.get(timeZone);
  if (!format) {
    // Building a formatter is far costlier than using one; a summary formats dozens of times.
    format = new Intl.DateTimeFormat('en-GB', {
      timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hourCycle: 'h23',
      timeZoneName: 'shortOffset',
    });
    timeFormats.set(timeZone, format);
  }
  const parts = Object.fromEntries(format.formatToParts(new Date(iso)).map((p) => [p.type, p.value]));
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second} (${timeZone}, ${parts.timeZoneName})`;
}

/** Throws `RangeError` for a zone Intl does not know; used to validate configuration early. */
export function assertTimeZone(timeZone: string): void {
  new Intl.DateTimeFormat('en-GB', { timeZone });
}

interface Limits {
  reason: number;
  description: number;
  body: number;
  dimensions: number;
}

const UNLIMITED: Limits = { reason: Infinity, description: Infinity, body: Infinity, dimensions: Infinity };

/**
 * One detailed message for one notification. Never fails on size: the reason (then the foreign
 * body, the dimensions, the description) is shortened until the body fits.
 */
export function renderNotification(notification: AlarmNotification, options: MessageOptions): RobotMessage {
  const max = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  let limits: Limits = { ...UNLIMITED };
  for (let round = 0; round < 64; round++) {
    const message = renderWithLimits(notification, options, limits);
    const size = bodyBytes(message);
    if (size <= max) return message;
    limits = shrink(limits, notification, size, max);
  }
  return hardFit(renderWithLimits(notification, options, { reason: 0, description: 0, body: 0, dimensions: 0 }), max);
}

function renderWithLimits(n: AlarmNotification, options: MessageOptions, limits: Limits): RobotMessage {
  if (n.kind === 'unrecognized') {
    const lines = [
      `### ❓ Unrecognized message on the alarm topic`,
      `**Problem:** ${inlineText(n.problem)}`,
      `**Received:** ${formatTime(n.receivedAt, options.timeZone)}`,
      ...(n.subject ? [`**Subject:** ${inlineText(n.subject)}`] : []),
      ...(n.topicArn ? [`**Topic:** ${inlineText(n.topicArn)}`] : []),
      '',
      '**Message**',
      '',
      quotedBlock(truncateText(n.body, limits.body) || '(empty)'),
    ];
    return assemble(`Unrecognized message on the alarm topic`, lines, options, false);
  }
  const a = n.alarm;
  const lines = [
    `### ${STATE_MARK[a.state]} · ${inlineText(a.alarmName)}`,
    `**State:** ${STATE_MARK[a.state]}${a.previousState ? ` (was ${STATE_MARK[a.previousState]})` : ''}`,
    `**Time:** ${formatTime(a.stateChangeTime, options.timeZone)}`,
    ...(a.accountId || a.regionName
      ? [
          `**Where:** ${[a.accountId, a.regionName]
            .filter(Boolean)
            .map((v) => inlineText(v!))
            .join(' · ')}`,
        ]
      : []),
    '',
    a.state === 'OK' ? '**What it was about**' : '**What it means / what to do**',
    '',
    quotedBlock(a.description ? truncateText(a.description, limits.description) : 'No description on this alarm.'),
    '',
    '**Reason**',
    '',
    quotedBlock(truncateText(a.reason || '(none given)', limits.reason)),
    '',
    ...metricLines(a, limits.dimensions),
  ];
  const url = alarmConsoleUrl(a, options.fallbackRegion);
  if (url) lines.push('', `[Open the alarm in the CloudWatch console](${url})`);
  return assemble(`${STATE_MARK[a.state]}: ${plainTitle(a.alarmName)}`, lines, options, a.state === 'ALARM');
}

function metricLines(a: CloudWatchAlarm, dimensionLimit: number): string[] {
  const t = a.trigger;
  if (!t) return [];
  const condition = conditionText(t.comparisonOperator, t.threshold, t.evaluationPeriods);
  if (t.kind === 'metric') {
    const period = t.period ? `${t.statistic ?? 'value'} over ${t.period} s` : (t.statistic ?? '');
    return [
      `**Metric:** ${inlineText(`${t.namespace} / ${t.metricName}`)}${period ? ` (${inlineText(period)})` : ''}${condition}`,
      ...dimensionLines(t.dimensions, dimensionLimit),
    ];
  }
  const lines = [`**Metric math:**${condition}`];
  let budget = dimensionLimit;
  for (const m of t.metrics) {
    const what = m.expression
      ? `${m.id} = ${m.expression}`
      : `${m.id} = ${m.namespace ?? '?'} / ${m.metricName ?? '?'}${m.stat ? ` (${m.stat}${m.period ? ` over ${m.period} s` : ''})` : ''}`;
    const dims = m.dimensions.map((d) => `${d.name}=${d.value}`).join(', ');
    const line = truncateText(
      `${what}${dims ? ` [${dims}]` : ''}${m.label ? ` “${m.label}”` : ''}`,
      Math.max(40, budget),
    );
    budget = Math.max(0, budget - codePointLength(line));
    lines.push(`- ${m.returnData ? '**' : ''}${inlineText(line)}${m.returnData ? '**' : ''}`);
  }
  return lines;
}

function dimensionLines(dimensions: MetricDimension[], limit: number): string[] {
  if (dimensions.length === 0) return [];
  const text = truncateText(dimensions.map((d) => `${d.name} = ${d.value}`).join('\n'), limit);
  return ['**Dimensions:**', ...text.split('\n').map((line) => `- ${inlineText(line)}`)];
}

function conditionText(operator: string | null, threshold: number | null, evaluationPeriods: number | null): string {
  if (!operator && threshold === null) return '';
  // Our own wording for known operators; anything else came from the payload and is made inert.
  const op = operator ? (COMPARISON[operator] ?? inlineText(operator)) : '';
  const periods = evaluationPeriods ? ` for ${evaluationPeriods} period${evaluationPeriods === 1 ? '' : 's'}` : '';
  return ` — alarms when ${`${op} ${threshold ?? ''}`.trim()}${periods}`;
}

function shrink(limits: Limits, n: AlarmNotification, size: number, max: number): Limits {
  const ratio = Math.max(0.1, (max / size) * 0.9);
  const current = (key: keyof Limits, actual: number) => Math.min(limits[key], actual);
  const next = { ...limits };
  // Order = what the reader can best do without: the reason is repeated in the console.
  if (n.kind === 'unrecognized') {
    next.body = Math.floor(current('body', codePointLength(n.body)) * ratio);
    return next;
  }
  const a = n.alarm;
  const reason = current('reason', codePointLength(a.reason));
  if (reason > 200) return { ...next, reason: Math.max(200, Math.floor(reason * ratio)) };
  const dims = current('dimensions', dimensionChars(a));
  if (dims > 500) return { ...next, dimensions: Math.max(500, Math.floor(dims * ratio)) };
  const description = current('description', codePointLength(a.description ?? ''));
  if (description > 200) return { ...next, description: Math.max(200, Math.floor(description * ratio)) };
  return {
    reason: Math.floor(reason / 2),
    dimensions: Math.floor(dims / 2),
    description: Math.floor(description / 2),
    body: 0,
  };
}

function dimensionChars(a: CloudWatchAlarm): number {
  const t = a.trigger;
  if (!t) return 0;
  const dims = t.kind === 'metric' ? t.dimensions : t.metrics.flatMap((m) => m.dimensions);
  return dims.reduce((sum, d) => sum + codePointLength(d.name) + codePointLength(d.value) + 4, 0) + 200;
}

/** Last resort if even minimal limits do not fit (absurdly long alarm names): cut the text itself. */
function hardFit(message: RobotMessage, max: number): RobotMessage {
  let text = message.markdown.text;
  while (bodyBytes({ ...message, markdown: { ...message.markdown, text } }) > max && text.length > 0) {
    text = Array.from(text)
      .slice(0, Math.floor(codePointLength(text) * 0.8))
      .join('');
  }
  return { ...message, markdown: { ...message.markdown, text: `${text}\n\n… [truncated]` } };
}

/** Titles are plain text in the conversation list; still no newlines or markup. */
function plainTitle(text: string): string {
  return truncateText(inlineText(text), 100);
}

function assemble(title: string, lines: string[], options: MessageOptions, mention: boolean): RobotMessage {
  const mobiles = mention ? (options.atMobiles ?? []) : [];
  const footer: string[] = [];
  // DingTalk renders an @-mention only when `@<mobile>` is also in the text.
  if (mobiles.length > 0) footer.push('', mobiles.map((m) => `@${m}`).join(' '));
  // Keyword security rejects a message that lacks the keyword; it is operator configuration, so verbatim.
  if (options.keyword) footer.push('', options.keyword);
  return {
    msgtype: 'markdown',
    markdown: {
      title: options.keyword && !title.includes(options.keyword) ? `${options.keyword} ${title}` : title,
      text: [...lines, ...footer].join('\n'),
    },
    at: { atMobiles: mobiles, isAtAll: false },
  };
}

export interface SummaryRendering {
  message: RobotMessage;
  /** Ids of the notifications that fit; the rest must go into a later message. */
  included: string[];
}

/**
 * One message for many notifications during an alarm storm. Takes notifications in the given
 * order while they fit; at least one is always included (shortened if need be).
 */
export function renderSummary(notifications: AlarmNotification[], options: MessageOptions): SummaryRendering {
  if (notifications.length === 0) throw new RangeError('renderSummary needs at least one notification');
  if (notifications.length === 1) {
    return { message: renderNotification(notifications[0]!, options), included: [notifications[0]!.id] };
  }
  const max = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const entries = notifications.map((n, i) => summaryEntry(n, i + 1, options));
  const included: AlarmNotification[] = [];
  let best: RobotMessage | null = null;
  for (const [i, n] of notifications.entries()) {
    const candidate = summaryMessage([...included, n], entries.slice(0, i + 1), options);
    if (bodyBytes(candidate) > max) break;
    included.push(n);
    best = candidate;
  }
  if (!best || included.length === 1) {
    const first = notifications[0]!;
    return { message: renderNotification(first, options), included: [first.id] };
  }
  return { message: best, included: included.map((n) => n.id) };
}

function summaryMessage(
  notifications: AlarmNotification[],
  entries: string[][],
  options: MessageOptions,
): RobotMessage {
  const counts = new Map<string, number>();
  for (const n of notifications) {
    const key = n.kind === 'alarm' ? n.alarm.state : 'UNRECOGNIZED';
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  const tally = [...counts].map(([state, count]) => `${count} ${state}`).join(', ');
  const heading = `🚨 ${notifications.length} alarm notifications (${tally})`;
  const lines = [
    `### ${heading}`,
    'Grouped into one message because alarms are arriving faster than the robot may post (20 a minute).',
    '',
  ];
  for (const entry of entries) lines.push(...entry);
  const anyAlarm = notifications.some((n) => n.kind === 'alarm' && n.alarm.state === 'ALARM');
  return assemble(heading, lines, options, anyAlarm);
}

function summaryEntry(n: AlarmNotification, index: number, options: MessageOptions): string[] {
  if (n.kind === 'unrecognized') {
    return [
      `**${index}.** ❓ **Unrecognized message** · ${formatTime(n.receivedAt, options.timeZone)}`,
      '',
      quotedBlock(truncateText(n.subject ? `${n.subject}: ${n.body}` : n.body, 200)),
      '',
    ];
  }
  const a = n.alarm;
  const url = alarmConsoleUrl(a, options.fallbackRegion);
  const dims =
    a.trigger?.kind === 'metric' && a.trigger.dimensions.length > 0
      ? ` · ${inlineText(truncateText(a.trigger.dimensions.map((d) => `${d.name}=${d.value}`).join(', '), 150))}`
      : '';
  return [
    `**${index}.** **${STATE_MARK[a.state]}** ${inlineText(truncateText(a.alarmName, 255))}${dims} · ${formatTime(a.stateChangeTime, options.timeZone)}${url ? ` · [console](${url})` : ''}`,
    '',
    quotedBlock(truncateText(a.reason || '(no reason given)', 200)),
    '',
  ];
}
