import { type ServiceCredentials, ServiceCredentialsError } from '@rocketmq-lambda/runtime/aws/index.ts';
import { OUTSIDE_SERVICES, type OutsideServiceName } from '@rocketmq-lambda/runtime/config/index.ts';
import { ConsumptionError } from '@rocketmq-lambda/runtime/consumer/index.ts';
import { excerpt } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import type { z } from 'zod';

/** How much of an answer is read: a result is a small JSON object; the rest of a longer answer is not even received. */
export const MAX_ANSWER_BYTES = 16 * 1024;

/** How many characters of the service's own words a log line or a dead letter's reason quotes. */
export const ANSWER_EXCERPT_CHARS = 200;

/** Statuses in the 4xx range that a later retry can still succeed on. */
const RETRYABLE_CLIENT_STATUSES = new Set([
  408, // request timeout
  409, // the same Idempotency-Key is still being processed (IETF idempotency-key draft)
  425, // too early
  429, // too many requests
]);

type StatusErrorClass = new (message: string, status?: number, options?: ErrorOptions) => ConsumptionError;

/** The classified failures of one service's calls (each service names its own codes). */
export interface ServiceCallErrors {
  /** Could not answer now (5xx, 408/409/425/429, unreachable, malformed success): transient. */
  readonly unavailable: StatusErrorClass;
  /** No answer before the timeout: transient, the retry repeats the Idempotency-Key. */
  readonly timeout: new (
    message: string,
    options?: ErrorOptions,
  ) => ConsumptionError;
  /** Any other 4xx: the same request is refused again, permanent. */
  readonly rejected: StatusErrorClass;
  /** A redirect, never followed: transient. */
  readonly redirect: StatusErrorClass;
  /** Credentials unavailable or refused (401 after one renewal, 403): transient. */
  readonly credentials: StatusErrorClass;
}

export interface ServiceCallOptions {
  /** The service in `OUTSIDE_SERVICES`: its one call's method and path. */
  service: OutsideServiceName;
  /** Base URL of the service (its `env` variable). */
  baseUrl: string;
  /** How calls prove who is calling (its `authEnv`); none for a loopback stand-in. */
  credentials?: ServiceCredentials;
  /**
   * Time kept back from the invocation's remaining time for what must follow the call:
   * the COMPLETED update (or the RETRYABLE mark) and the failure routing. A call that
   * ran to the deadline would leave a lease that only expiry can free.
   */
  reserveMs?: number;
  /** Upper bound of one call, however much time the invocation has left. */
  maxTimeoutMs?: number;
  /** Below this, the call is not made at all: it could not finish in time. */
  minTimeoutMs?: number;
  fetch?: typeof fetch;
}

/** What one call is about, in the words its errors use: `coupon` for `order SO1`. */
export interface CallSubject {
  /** Sent as the `Idempotency-Key` header: the service answers a repeated key with its first result. */
  readonly idempotencyKey: string;
  /** Time left in the invocation (`context.getRemainingTimeInMillis()`). */
  readonly remainingMs: number;
  /** What the call asks for (`coupon`), in "coupon for SO1 not requested". */
  readonly thing: string;
  /** What it is for (`order`) and its id (`SO1`). */
  readonly of: { readonly kind: string; readonly id: string };
}

export interface Answer {
  readonly status: number;
  readonly text: string;
  /** The answer was longer than MAX_ANSWER_BYTES and `text` is its beginning. */
  readonly cut: boolean;
  readonly location: string | null;
}

/**
 * The one call a lease-mode consumer makes to an outside service, with an `Idempotency-Key`, so the
 * service can deduplicate too (a second line of defence behind the lease), which also makes the one
 * repeat after a 401 safe. Failures are classified for the consumer middleware through the service's
 * own error classes: 5xx, timeouts, unreachable service, redirects (never followed) and refused
 * credentials are transient; other 4xx is permanent (except the statuses above, which say "not now").
 */
export class OutsideServiceCall {
  /** The service's name in errors: `coupon service`. */
  readonly label: string;
  private readonly reserveMs: number;
  private readonly maxTimeoutMs: number;
  private readonly minTimeoutMs: number;
  private readonly fetch: typeof fetch;
  private readonly url: URL;
  private readonly method: string;
  private readonly credentials: ServiceCredentials | undefined;

  constructor(
    options: ServiceCallOptions,
    private readonly errors: ServiceCallErrors,
  ) {
    const { call } = OUTSIDE_SERVICES[options.service];
    this.label = options.service.replace('-', ' ');
    this.reserveMs = options.reserveMs ?? 2_000;
    this.maxTimeoutMs = options.maxTimeoutMs ?? 10_000;
    this.minTimeoutMs = options.minTimeoutMs ?? 100;
    this.fetch = options.fetch ?? globalThis.fetch;
    this.credentials = options.credentials;
    this.method = call.method;
    this.url = new URL(call.path.slice(1), options.baseUrl.endsWith('/') ? options.baseUrl : `${options.baseUrl}/`);
  }

  /** The timeout for a call made now: what the invocation has left minus the reserve, capped. */
  timeoutFor(remainingMs: number): number {
    return Math.min(this.maxTimeoutMs, remainingMs - this.reserveMs);
  }

  /** Makes the call (once more after a 401 when the credentials could be renewed) and returns its answer. */
  async send(request: unknown, subject: CallSubject): Promise<Answer> {
    const startedAt = performance.now();
    let answer = await this.call(request, subject, subject.remainingMs);
    if (answer.status === 401 && this.credentials && (await this.renewCredentials())) {
      // A rotated token: one more call with the new one, inside what is left of the same deadline.
      answer = await this.call(request, subject, subject.remainingMs - (performance.now() - startedAt));
    }
    return answer;
  }

  /** The successful answer's body as `schema` reads it, or the classified failure. */
  settle<S extends z.ZodType>(answer: Answer, subject: CallSubject, schema: S, field: string): z.infer<S> {
    const { status } = answer;
    const about = `${subject.of.kind} ${subject.of.id}`;
    if (status >= 200 && status < 300) {
      const parsed = answer.cut ? undefined : schema.safeParse(safeJson(answer.text));
      if (!parsed?.success)
        throw new this.errors.unavailable(`${this.label} answered ${status} without a ${field}`, status);
      return parsed.data;
    }
    if (status >= 300 && status < 400) {
      const to =
        answer.location === null ? 'no Location' : `Location ${excerpt(answer.location, ANSWER_EXCERPT_CHARS)}`;
      throw new this.errors.redirect(
        `${this.label} answered ${status} (${to}) for ${about}; redirects are not followed`,
        status,
      );
    }
    // The service's own words, bounded and made inert: they end up in logs and in a DLQ attribute.
    const words = `${excerpt(answer.text, ANSWER_EXCERPT_CHARS)}${answer.cut ? ` (the rest of the answer past ${MAX_ANSWER_BYTES} bytes unread)` : ''}`;
    const detail = `${this.label} answered ${status} for ${about}: ${words}`;
    if (status === 401 || status === 403)
      throw new this.errors.credentials(`${detail}; the call's credentials were refused`, status);
    if (status >= 500 || RETRYABLE_CLIENT_STATUSES.has(status)) throw new this.errors.unavailable(detail, status);
    throw new this.errors.rejected(detail, status);
  }

  private async call(request: unknown, subject: CallSubject, remainingMs: number): Promise<Answer> {
    const timeoutMs = Math.floor(this.timeoutFor(remainingMs));
    const about = `${subject.of.kind} ${subject.of.id}`;
    if (timeoutMs < this.minTimeoutMs) {
      throw new this.errors.timeout(
        `only ${Math.floor(remainingMs)} ms left in the invocation; ${subject.thing} for ${subject.of.id} not requested`,
      );
    }
    const body = JSON.stringify(request);
    const headers = { 'content-type': 'application/json', 'idempotency-key': subject.idempotencyKey };
    const signal = AbortSignal.timeout(timeoutMs);
    let response: Response;
    try {
      // Reading a token (a cache miss) counts against the same deadline as the call it is for.
      const authorization = await untilAborted(
        this.authorize({ method: this.method, url: this.url, headers, body }),
        signal,
      );
      // A redirect is answered to us, not followed: the credentials would travel to wherever it points.
      response = await this.fetch(this.url, {
        method: this.method,
        headers: { ...headers, ...authorization },
        body,
        redirect: 'manual',
        signal,
      });
    } catch (error) {
      if (error instanceof ConsumptionError) throw error;
      if (isTimeout(error))
        throw new this.errors.timeout(`${this.label} did not answer within ${timeoutMs} ms (${about})`, {
          cause: error,
        });
      throw new this.errors.unavailable(`${this.label} unreachable: ${(error as Error).message}`, undefined, {
        cause: error,
      });
    }
    try {
      // The timeout's signal also covers the body: a service that stalls mid-answer is a timeout.
      return { status: response.status, ...(await readBounded(response)), location: response.headers.get('location') };
    } catch (error) {
      if (isTimeout(error))
        throw new this.errors.timeout(`${this.label} stalled its answer past ${timeoutMs} ms (${about})`, {
          cause: error,
        });
      throw new this.errors.unavailable(
        `${this.label} answer unreadable: ${(error as Error).message}`,
        response.status,
        { cause: error },
      );
    }
  }

  private async authorize(request: Parameters<ServiceCredentials['authorize']>[0]): Promise<Record<string, string>> {
    if (!this.credentials) return {};
    try {
      return await this.credentials.authorize(request);
    } catch (error) {
      throw this.credentialsUnavailable(error);
    }
  }

  private async renewCredentials(): Promise<boolean> {
    try {
      return await this.credentials!.renew();
    } catch (error) {
      throw this.credentialsUnavailable(error);
    }
  }

  private credentialsUnavailable(error: unknown): Error {
    if (!(error instanceof ServiceCredentialsError)) return error as Error;
    return new this.errors.credentials(`${this.label} credentials unavailable: ${error.message}`, undefined, {
      cause: error,
    });
  }
}

/**
 * At most MAX_ANSWER_BYTES of the answer, the rest cancelled unread: a hostile service cannot fill the function's
 * memory.
 */
async function readBounded(response: Response): Promise<{ text: string; cut: boolean }> {
  if (!response.body) return { text: '', cut: false };
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  while (size <= MAX_ANSWER_BYTES) {
    const { done, value } = await reader.read();
    if (done) return { text: Buffer.concat(chunks).toString('utf8'), cut: false };
    chunks.push(value);
    size += value.byteLength;
  }
  await reader.cancel();
  return { text: Buffer.concat(chunks).subarray(0, MAX_ANSWER_BYTES).toString('utf8'), cut: true };
}

function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(signal.reason);
    signal.addEventListener('abort', abort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', abort));
  });
}

function isTimeout(error: unknown): boolean {
  return error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError');
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
