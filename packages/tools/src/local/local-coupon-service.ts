import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One coupon the stand-in granted. */
export interface GrantedCoupon {
  readonly couponId: string;
  readonly idempotencyKey: string;
  readonly request: unknown;
  readonly grantedAt: string;
}

/**
 * The coupon service as the local run needs it: a real HTTP server on loopback that
 * grants a coupon per `POST` and, like the real service's contract, answers a repeated
 * `Idempotency-Key` with the coupon it already granted instead of a second one.
 * A request without the header is refused (400): granting it would make retries unsafe.
 */
export class LocalCouponService {
  readonly grants = new Map<string, GrantedCoupon>();
  /** Requests answered from an earlier grant: the consumer retried or redelivered. */
  replays = 0;
  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<LocalCouponService> {
    let service: LocalCouponService | undefined;
    const server = createServer((req, res) => {
      service!.handle(req).then(
        ({ status, body }) => {
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(JSON.stringify(body));
        },
        () => {
          res.writeHead(500).end();
        },
      );
    });
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    service = new LocalCouponService(server, `http://127.0.0.1:${port}`);
    return service;
  }

  private async handle(req: IncomingMessage): Promise<{ status: number; body: unknown }> {
    if (req.method !== 'POST') return { status: 405, body: { error: 'only POST grants a coupon' } };
    const key = req.headers['idempotency-key'];
    if (typeof key !== 'string' || key.trim() === '')
      return { status: 400, body: { error: 'Idempotency-Key header is required' } };
    let text = '';
    for await (const chunk of req) text += chunk;
    let request: unknown;
    try {
      request = text === '' ? {} : JSON.parse(text);
    } catch {
      return { status: 400, body: { error: 'body is not JSON' } };
    }
    const existing = this.grants.get(key);
    if (existing) {
      this.replays++;
      return { status: 200, body: existing };
    }
    const coupon: GrantedCoupon = {
      couponId: `CPN-${randomUUID()}`,
      idempotencyKey: key,
      request,
      grantedAt: new Date().toISOString(),
    };
    this.grants.set(key, coupon);
    return { status: 201, body: coupon };
  }

  stop(): Promise<void> {
    return new Promise((resolve) => {
      this.server.closeAllConnections();
      this.server.close(() => resolve());
    });
  }
}
