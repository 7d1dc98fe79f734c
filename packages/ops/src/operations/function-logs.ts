import {
  type CloudWatchLogsClient,
  FilterLogEventsCommand,
  ResourceNotFoundException,
} from '@aws-sdk/client-cloudwatch-logs';
import { excerpt } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { UsageError } from './errors.ts';
import { isMsgId, orderNoOfKey } from './order-keys.ts';

/**
 * One record's line as the consumer runtime logs it (packages/runtime/src/consumer/lambda/consumer-telemetry.ts),
 * with the fields Powertools adds. Only what `ops trace` reads is typed; a line keeps the rest.
 */
export interface ConsumerLogLine {
  /** The CloudWatch event's time (epoch ms): when the function wrote the line. */
  readonly at: number;
  readonly logGroup: string;
  readonly message: string;
  readonly group?: string;
  readonly msgId?: string;
  readonly key?: string;
  readonly sqsMessageId?: string;
  readonly messageGroupId?: string;
  readonly attempt?: number;
  /** Set on a copy `ops dlq redrive` sent back (lines written before it existed have none). */
  readonly redriveCount?: number;
  readonly outcome?: string;
  readonly disposition?: string;
  readonly reason?: string;
  readonly winnerMsgId?: string;
  readonly errorCode?: string;
  readonly errorClass?: string;
  readonly retryInSeconds?: number;
  /** W3C trace id (32 hex) of the record's span, when tracing is on. */
  readonly traceId?: string;
  /** What Powertools adds when Lambda runs with X-Ray active (`Root=1-…` of `_X_AMZN_TRACE_ID`). */
  readonly xrayTraceId?: string;
  readonly requestId?: string;
}

/** What to look for: the business key (an order number, and `<orderNo>#<kind>` keys) and msgIds. */
export interface LogSubject {
  readonly orderNo?: string;
  readonly msgIds?: readonly string[];
}

// What the consumer accepts as an order number (packages/runtime/src/consumer/json-payload.ts `identifier`), or a msgId.
const TRACE_SUBJECT = /^[\x21-\x7E]{1,64}$/;

/** Refuses what no consumer accepts as an order number and is no msgId either. */
export function checkTraceSubject(value: string): string {
  if (!TRACE_SUBJECT.test(value) && !isMsgId(value))
    throw new UsageError(
      `trace wants an order number (printable ASCII without spaces, at most 64) or a msgId, got ${excerpt(value)}`,
    );
  return value;
}

/**
 * A value as a quoted string of a JSON filter pattern: backslash and double quote escaped with a
 * backslash, as CloudWatch Logs reads them and as aws-cdk-lib's `FilterPattern.stringValue` writes
 * them, so a value from the command line, a log line or a dead letter can only ever be compared,
 * never end the string. `*` stays CloudWatch's wildcard (it has no escape for it): a value holding
 * one selects more lines, which `isAbout` drops.
 */
export function patternString(value: string): string {
  return `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/**
 * The CloudWatch Logs JSON filter pattern selecting a subject's lines: the key equal to the order
 * number or starting with `<orderNo>#` (the order-status group's `<orderNo>#<kind>`), the msgId,
 * or the msgId a duplicate names as the one that applied. CloudWatch caps a pattern at 1,024
 * characters, hence the cap on msgIds; the caller re-checks every line it gets anyway.
 */
export function logFilterPattern(subject: LogSubject): string {
  const terms: string[] = [];
  if (subject.orderNo)
    terms.push(`($.key = ${patternString(subject.orderNo)})`, `($.key = ${patternString(`${subject.orderNo}#*`)})`);
  for (const msgId of subject.msgIds ?? [])
    terms.push(`($.msgId = ${patternString(msgId)})`, `($.winnerMsgId = ${patternString(msgId)})`);
  let pattern = '';
  for (const term of terms) {
    const next = pattern ? `${pattern} || ${term}` : term;
    if (next.length + 4 > 1024) break;
    pattern = next;
  }
  if (!pattern) throw new UsageError('trace wants an order number or a msgId');
  return `{ ${pattern} }`;
}

/** Whether a parsed line is about the subject: the same test as the pattern, on the parsed fields. */
export function isAbout(line: ConsumerLogLine, subject: LogSubject): boolean {
  const { orderNo } = subject;
  if (orderNo && line.key !== undefined && orderNoOfKey(line.key) === orderNo) return true;
  const ids = new Set((subject.msgIds ?? []).map((id) => id.toUpperCase()));
  return (
    (line.msgId !== undefined && ids.has(line.msgId.toUpperCase())) ||
    (line.winnerMsgId !== undefined && ids.has(line.winnerMsgId.toUpperCase()))
  );
}

export interface LogRead {
  readonly lines: ConsumerLogLine[];
  /** Log groups that do not exist (the function never ran, or the name is not this deployment's). */
  readonly missingGroups: string[];
}

/**
 * Reads the subject's lines of each log group with `FilterLogEvents`, every page. The service
 * selects with the pattern; the lines are parsed and re-checked here, so a line that only looks
 * alike (or a stock moto, which applies no JSON pattern: docs/emulator.md) never enters a story.
 */
export async function readConsumerLogLines(options: {
  logs: CloudWatchLogsClient;
  logGroups: readonly string[];
  subject: LogSubject;
  startTime?: number;
}): Promise<LogRead> {
  const pattern = logFilterPattern(options.subject);
  const lines: ConsumerLogLine[] = [];
  const missingGroups: string[] = [];
  for (const logGroup of options.logGroups) {
    let nextToken: string | undefined;
    try {
      do {
        const page = await options.logs.send(
          new FilterLogEventsCommand({
            logGroupName: logGroup,
            filterPattern: pattern,
            startTime: options.startTime,
            nextToken,
          }),
        );
        for (const event of page.events ?? []) {
          const line = parseLine(event.message ?? '', event.timestamp ?? 0, logGroup);
          if (line && isAbout(line, options.subject)) lines.push(line);
        }
        nextToken = page.nextToken;
      } while (nextToken);
    } catch (error) {
      if (!(error instanceof ResourceNotFoundException)) throw error;
      missingGroups.push(logGroup);
    }
  }
  lines.sort((a, b) => a.at - b.at);
  return { lines, missingGroups };
}

const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
const num = (v: unknown) => (typeof v === 'number' ? v : undefined);

/** A JSON log line, or `undefined` for any other line (Lambda's own START/END/REPORT, plain text). */
export function parseLine(message: string, at: number, logGroup: string): ConsumerLogLine | undefined {
  let f: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(message);
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return undefined;
    f = parsed as Record<string, unknown>;
  } catch {
    return undefined;
  }
  return {
    at,
    logGroup,
    message: str(f.message) ?? '',
    group: str(f.group),
    msgId: str(f.msgId),
    key: str(f.key),
    sqsMessageId: str(f.sqsMessageId),
    messageGroupId: str(f.messageGroupId),
    attempt: num(f.attempt),
    redriveCount: num(f.redriveCount),
    outcome: str(f.outcome),
    disposition: str(f.disposition),
    reason: str(f.reason),
    winnerMsgId: str(f.winnerMsgId),
    errorCode: str(f.errorCode),
    errorClass: str(f.errorClass),
    retryInSeconds: num(f.retryInSeconds),
    traceId: str(f.traceId),
    xrayTraceId: str(f.xray_trace_id),
    requestId: str(f.function_request_id),
  };
}
