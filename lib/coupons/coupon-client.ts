import { sqsText } from '../aws/sqs-text.ts';
import { z } from 'zod';
import { CouponGrantRejectedError, CouponServiceTimeoutError, CouponServiceUnavailableError } from './coupon-errors.ts';

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
export const COUPON_GRANT_PATH = '/v1/coupon-grants';

const grantResponseSchema = z.object({ couponId: z.string().min(1).max(128) });

/** Statuses in the 4xx range that a later retry can still succeed on. */
const RETRYABLE_CLIENT_STATUSES = new Set([
  408, // request timeout
  409, // the same Idempotency-Key is still being processed (IETF idempotency-key draft)
  425, // too early
  429, // too many requests
]);

/**
 * HTTP client of the coupon service. One grant per order: the order number travels as
 * the `Idempotency-Key` header, so the service can deduplicate too (a second line of
 * defence behind the lease). Failures are classified for the consumer middleware:
 * 5xx, timeouts and unreachable service are transient; 4xx is permanent (except the
 * statuses above, which say "not now").
 */
export class CouponClient {
  private readonly reserveMs: number;
  private readonly maxTimeoutMs: number;
  private readonly minTimeoutMs: number;
  private readonly fetch: typeof fetch;
  private readonly grantUrl: string;

  constructor(options: CouponClientOptions) {
    this.reserveMs = options.reserveMs ?? 2_000;
    this.maxTimeoutMs = options.maxTimeoutMs ?? 10_000;
    this.minTimeoutMs = options.minTimeoutMs ?? 100;
    this.fetch = options.fetch ?? globalThis.fetch;
    this.grantUrl = new URL(COUPON_GRANT_PATH.slice(1), options.baseUrl.endsWith('/') ? options.baseUrl : `${options.baseUrl}/`).toString();
  }

  /** The timeout for a call made now: what the invocation has left minus the reserve, capped. */
  timeoutFor(remainingMs: number): number {
    return Math.min(this.maxTimeoutMs, remainingMs - this.reserveMs);
  }

  /** Grants the order's coupon and returns its id. */
  async grant(request: CouponGrantRequest, options: CouponGrantOptions): Promise<string> {
    const timeoutMs = this.timeoutFor(options.remainingMs);
    if (timeoutMs < this.minTimeoutMs) {
      throw new CouponServiceTimeoutError(`only ${options.remainingMs} ms left in the invocation; coupon for ${request.orderNo} not requested`);
    }
    let response: Response;
    try {
      response = await this.fetch(this.grantUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': options.idempotencyKey },
        body: JSON.stringify(request),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) {
        throw new CouponServiceTimeoutError(`coupon service did not answer within ${timeoutMs} ms (order ${request.orderNo})`, { cause: error });
      }
      throw new CouponServiceUnavailableError(`coupon service unreachable: ${(error as Error).message}`, undefined, { cause: error });
    }
    const text = await readBody(response, request.orderNo, timeoutMs);
    if (response.ok) {
      const parsed = grantResponseSchema.safeParse(safeJson(text));
      if (!parsed.success) throw new CouponServiceUnavailableError(`coupon service answered ${response.status} without a couponId`, response.status);
      return parsed.data.couponId;
    }
    // The service's own words, bounded and cleaned: they end up in logs and in a DLQ attribute.
    const detail = `coupon service answered ${response.status} for order ${request.orderNo}: ${sqsText(text, 200)}`;
    if (response.status >= 500 || RETRYABLE_CLIENT_STATUSES.has(response.status)) throw new CouponServiceUnavailableError(detail, response.status);
    throw new CouponGrantRejectedError(detail, response.status);
  }
}

async function readBody(response: Response, orderNo: string, timeoutMs: number): Promise<string> {
  try {
    return await response.text();
  } catch (error) {
    // The timeout's signal also covers the body: a service that stalls mid-answer is a timeout.
    if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) {
      throw new CouponServiceTimeoutError(`coupon service stalled its answer past ${timeoutMs} ms (order ${orderNo})`, { cause: error });
    }
    throw new CouponServiceUnavailableError(`coupon service answer unreadable: ${(error as Error).message}`, response.status, { cause: error });
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
