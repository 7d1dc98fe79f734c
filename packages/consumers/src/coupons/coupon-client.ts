import { type ServiceCredentials, ServiceCredentialsError } from '@rocketmq-lambda/runtime/aws/index.ts';
import { OUTSIDE_SERVICES } from '@rocketmq-lambda/runtime/config/index.ts';
import { ConsumptionError } from '@rocketmq-lambda/runtime/consumer/index.ts';
import { excerpt } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { z } from 'zod';
import {
  CouponGrantRejectedError,
  CouponServiceCredentialsError,
  CouponServiceRedirectError,
  CouponServiceTimeoutError,
  CouponServiceUnavailableError,
} from './coupon-errors.ts';

export interface CouponGrantRequest {
  orderNo: string;
  userId: string;
}

export interface CouponGrantOptions {
  /** Sent as the `Idempotency-Key` header: the service answers a repeated key with the first grant. */
  idempotencyKey: string;
  /** Time left in the invocation (`context.getRemainingTimeInMillis()`). */
  remainingMs: number;
}

export interface CouponClientOptions {
  /** Base URL of the coupon service (`COUPON_SERVICE_URL`). */
  baseUrl: string;
  /** How calls prove who is calling (`COUPON_SERVICE_AUTH`); none for a loopback stand-in. */
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

/** Path of the grant endpoint under the base URL. */
export const COUPON_GRANT_PATH = OUTSIDE_SERVICES['coupon-service'].call.path;
const GRANT_METHOD = OUTSIDE_SERVICES['coupon-service'].call.method;

/** How much of an answer is read: a grant is `{"couponId": …}`; the rest of a longer answer is not even received. */
export const MAX_ANSWER_BYTES = 16 * 1024;

/** How many characters of the service's own words a log line or a dead letter's reason quotes. */
export const ANSWER_EXCERPT_CHARS = 200;

const grantResponseSchema = z.object({ couponId: z.string().min(1).max(128) });

/** Statuses in the 4xx range that a later retry can still succeed on. */
const RETRYABLE_CLIENT_STATUSES = new Set([
  408, // request timeout
  409, // the same Idempotency-Key is still being processed (IETF idempotency-key draft)
  425, // too early
  429, // too many requests
]);

interface Answer {
  readonly status: number;
  readonly text: string;
  /** The answer was longer than MAX_ANSWER_BYTES and `text` is its beginning. */
  readonly cut: boolean;
  readonly location: string | null;
}

/**
 * HTTP client of the coupon service. One grant per order: the order number travels as
 * the `Idempotency-Key` header, so the service can deduplicate too (a second line of
 * defence behind the lease), which also makes the one repeat after a 401 safe. Failures
 * are classified for the consumer middleware: 5xx, timeouts, unreachable service,
 * redirects (never followed) and refused credentials are transient; other 4xx is
 * permanent (except the statuses above, which say "not now").
 */
export class CouponClient {
  private readonly reserveMs: number;
  private readonly maxTimeoutMs: number;
  private readonly minTimeoutMs: number;
  private readonly fetch: typeof fetch;
  private readonly grantUrl: URL;
  private readonly credentials: ServiceCredentials | undefined;

  constructor(options: CouponClientOptions) {
    this.reserveMs = options.reserveMs ?? 2_000;
    this.maxTimeoutMs = options.maxTimeoutMs ?? 10_000;
    this.minTimeoutMs = options.minTimeoutMs ?? 100;
    this.fetch = options.fetch ?? globalThis.fetch;
    this.credentials = options.credentials;
    this.grantUrl = new URL(
      COUPON_GRANT_PATH.slice(1),
      options.baseUrl.endsWith('/') ? options.baseUrl : `${options.baseUrl}/`,
    );
  }

  /** The timeout for a call made now: what the invocation has left minus the reserve, capped. */
  timeoutFor(remainingMs: number): number {
    return Math.min(this.maxTimeoutMs, remainingMs - this.reserveMs);
  }

  /** Grants the order's coupon and returns its id. */
  async grant(request: CouponGrantRequest, options: CouponGrantOptions): Promise<string> {
    const startedAt = performance.now();
    let answer = await this.call(request, options.idempotencyKey, options.remainingMs);
    if (answer.status === 401 && this.credentials && (await this.renewCredentials())) {
      // A rotated token: one more call with the new one, inside what is left of the same deadline.
      answer = await this.call(request, options.idempotencyKey, options.remainingMs - (performance.now() - startedAt));
    }
    return settle(answer, request.orderNo);
  }

  private async call(request: CouponGrantRequest, idempotencyKey: string, remainingMs: number): Promise<Answer> {
    const timeoutMs = Math.floor(this.timeoutFor(remainingMs));
    if (timeoutMs < this.minTimeoutMs) {
      throw new CouponServiceTimeoutError(
        `only ${Math.floor(remainingMs)} ms left in the invocation; coupon for ${request.orderNo} not requested`,
      );
    }
    const body = JSON.stringify(request);
    const headers = { 'content-type': 'application/json', 'idempotency-key': idempotencyKey };
    const signal = AbortSignal.timeout(timeoutMs);
    let response: Response;
    try {
      // Reading a token (a cache miss) counts against the same deadline as the call it is for.
      const authorization = await untilAborted(
        this.authorize({ method: GRANT_METHOD, url: this.grantUrl, headers, body }),
        signal,
      );
      // A redirect is answered to us, not followed: see CouponServiceRedirectError.
      response = await this.fetch(this.grantUrl, {
        method: GRANT_METHOD,
        headers: { ...headers, ...authorization },
        body,
        redirect: 'manual',
        signal,
      });
    } catch (error) {
      if (error instanceof ConsumptionError) throw error;
      if (isTimeout(error))
        throw new CouponServiceTimeoutError(
          `coupon service did not answer within ${timeoutMs} ms (order ${request.orderNo})`,
          { cause: error },
        );
      throw new CouponServiceUnavailableError(`coupon service unreachable: ${(error as Error).message}`, undefined, {
        cause: error,
      });
    }
    try {
      // The timeout's signal also covers the body: a service that stalls mid-answer is a timeout.
      return { status: response.status, ...(await readBounded(response)), location: response.headers.get('location') };
    } catch (error) {
      if (isTimeout(error))
        throw new CouponServiceTimeoutError(
          `coupon service stalled its answer past ${timeoutMs} ms (order ${request.orderNo})`,
          { cause: error },
        );
      throw new CouponServiceUnavailableError(
        `coupon service answer unreadable: ${(error as Error).message}`,
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
      throw credentialsUnavailable(error);
    }
  }

  private async renewCredentials(): Promise<boolean> {
    try {
      return await this.credentials!.renew();
    } catch (error) {
      throw credentialsUnavailable(error);
    }
  }
}

function credentialsUnavailable(error: unknown): Error {
  if (!(error instanceof ServiceCredentialsError)) return error as Error;
  return new CouponServiceCredentialsError(`coupon service credentials unavailable: ${error.message}`, undefined, {
    cause: error,
  });
}

function settle(answer: Answer, orderNo: string): string {
  const { status } = answer;
  if (status >= 200 && status < 300) {
    const parsed = answer.cut ? undefined : grantResponseSchema.safeParse(safeJson(answer.text));
    if (!parsed?.success)
      throw new CouponServiceUnavailableError(`coupon service answered ${status} without a couponId`, status);
    return parsed.data.couponId;
  }
  if (status >= 300 && status < 400) {
    const to = answer.location === null ? 'no Location' : `Location ${excerpt(answer.location, ANSWER_EXCERPT_CHARS)}`;
    throw new CouponServiceRedirectError(
      `coupon service answered ${status} (${to}) for order ${orderNo}; redirects are not followed`,
      status,
    );
  }
  // The service's own words, bounded and made inert: they end up in logs and in a DLQ attribute.
  const words = `${excerpt(answer.text, ANSWER_EXCERPT_CHARS)}${answer.cut ? ` (the rest of the answer past ${MAX_ANSWER_BYTES} bytes unread)` : ''}`;
  const detail = `coupon service answered ${status} for order ${orderNo}: ${words}`;
  if (status === 401 || status === 403)
    throw new CouponServiceCredentialsError(`${detail}; the call's credentials were refused`, status);
  if (status >= 500 || RETRYABLE_CLIENT_STATUSES.has(status)) throw new CouponServiceUnavailableError(detail, status);
  throw new CouponGrantRejectedError(detail, status);
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
