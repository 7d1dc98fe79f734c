import { bodyBytes, type RobotMessage } from './alarm-message.ts';
import type { Clock } from './clock.ts';
import { RobotRejectedError, RobotThrottledError, RobotUnavailableError } from './errors.ts';
import { signedWebhookUrl } from './robot-signature.ts';
import type { WebhookConfig } from './webhook-secret.ts';

/** DingTalk's answer; failures also come as HTTP 200 with `errcode` ≠ 0. */
export interface RobotAnswer {
  errcode: number;
  errmsg: string;
}

export type AnswerClass = 'ok' | 'throttled' | 'configuration' | 'content' | 'transient';

/**
 * What an errcode means for us. Configuration and content errors are final: resending the same
 * message with the same credentials gets the same answer. Unknown codes count as transient so an
 * undocumented hiccup costs a bounded number of retries rather than the alarm.
 */
export function classifyErrcode(errcode: number): AnswerClass {
  if (errcode === 0) return 'ok';
  if (errcode === 410100 || errcode === 130101) return 'throttled';
  // 310000: sign/keyword/timestamp/IP whitelist; 300xxx: legacy token errors; 400xxx: token, robot, msgtype.
  if (errcode === 310000 || (errcode >= 300000 && errcode < 310000) || (errcode >= 400000 && errcode < 410000)) {
    return 'configuration';
  }
  // 430xxx: content rejected by moderation; 460101: body over 20,000 bytes.
  if ((errcode >= 430000 && errcode < 440000) || (errcode >= 460000 && errcode < 470000)) return 'content';
  return 'transient';
}

export interface RobotClientOptions {
  clock: Clock;
  /** Per request; a slow DingTalk must not eat the whole invocation. */
  timeoutMs?: number;
  fetch?: typeof fetch;
}

/** One signed POST of one message; classification into named errors; no retries (the dispatcher owns those). */
export class RobotClient {
  private readonly timeoutMs: number;
  private readonly fetchImpl: typeof fetch;

  constructor(private readonly options: RobotClientOptions) {
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.fetchImpl = options.fetch ?? fetch;
  }

  /** Resolves with the answer when `errcode` is 0; otherwise throws the matching named error. */
  async send(config: WebhookConfig, message: RobotMessage): Promise<RobotAnswer> {
    const url = signedWebhookUrl(config.webhookUrl, config.secret, this.options.clock.now());
    let response: Response;
    try {
      response = await this.fetchImpl(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json; charset=utf-8' },
        body: JSON.stringify(message),
        signal: AbortSignal.timeout(this.timeoutMs),
        // The URL carries the access token and the signature: a redirect would hand both to its target.
        redirect: 'manual',
      });
    } catch (err) {
      // Only the error's kind: the URL carries access_token, sign and timestamp.
      throw new RobotUnavailableError(`DingTalk could not be reached: ${describeNetworkError(err)}`);
    }
    const raw = await response.text().catch(() => '');
    if (response.status >= 300 && response.status < 400) {
      // Transient, as the coupon call's: a maintenance redirect passes; a lasting one fails the bounded retries.
      throw new RobotUnavailableError(`DingTalk answered HTTP ${response.status} (a redirect, not followed)`);
    }
    if (response.status === 429) throw new RobotThrottledError(429, `HTTP 429`);
    if (response.status >= 500) throw new RobotUnavailableError(`DingTalk answered HTTP ${response.status}`);
    if (response.status >= 400) {
      throw new RobotRejectedError(response.status, `HTTP ${response.status}`, 'configuration');
    }
    const answer = parseAnswer(raw);
    if (!answer) throw new RobotUnavailableError(`DingTalk answered HTTP ${response.status} without an errcode`);
    switch (classifyErrcode(answer.errcode)) {
      case 'ok':
        return answer;
      case 'throttled':
        throw new RobotThrottledError(answer.errcode, answer.errmsg);
      case 'configuration':
        throw new RobotRejectedError(answer.errcode, answer.errmsg, 'configuration');
      case 'content':
        throw new RobotRejectedError(answer.errcode, `${answer.errmsg} (body ${bodyBytes(message)} bytes)`, 'content');
      case 'transient':
        throw new RobotUnavailableError(
          `DingTalk answered errcode ${answer.errcode}: ${answer.errmsg}`,
          answer.errcode,
          answer.errmsg,
        );
    }
  }
}

function parseAnswer(raw: string): RobotAnswer | null {
  try {
    const json = JSON.parse(raw) as { errcode?: unknown; errmsg?: unknown };
    if (typeof json.errcode !== 'number') return null;
    return { errcode: json.errcode, errmsg: typeof json.errmsg === 'string' ? json.errmsg : '' };
  } catch {
    return null;
  }
}

function describeNetworkError(err: unknown): string {
  if (!(err instanceof Error)) return 'unknown error';
  if (err.name === 'TimeoutError' || err.name === 'AbortError') return 'request timed out';
  // fetch wraps the socket error (sometimes an AggregateError of several addresses) in `cause`.
  const codes = new Set<string>();
  const visit = (e: unknown, depth: number) => {
    if (!e || typeof e !== 'object' || depth > 4) return;
    const { code, cause, errors } = e as { code?: unknown; cause?: unknown; errors?: unknown };
    if (typeof code === 'string') codes.add(code);
    visit(cause, depth + 1);
    if (Array.isArray(errors)) for (const inner of errors) visit(inner, depth + 1);
  };
  visit(err.cause, 0);
  if (codes.size > 0) return [...codes].join(', ');
  const cause = err.cause instanceof Error ? err.cause.message : '';
  // Socket messages name host and port at most; drop anything that looks like a query string anyway.
  return cause ? cause.replace(/\?\S*/g, '') : err.name;
}
