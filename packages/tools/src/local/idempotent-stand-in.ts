import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * An outside service as the local run and the tests need it: a real HTTP server on loopback that
 * makes one result per `POST` and, like the real services' contract, answers a repeated
 * `Idempotency-Key` with the result it already made instead of a second one. A request without
 * the header is refused (400): acting on it would make retries unsafe. It counts every call per
 * key, so a run can tell "called twice" (a retry the key absorbed) from "made twice".
 */
export abstract class IdempotentStandIn<R> {
  /** The first result of each key: what the service did, once per key. */
  readonly results = new Map<string, R>();
  /** Requests per key that reached the service (the first and every replay). */
  readonly calls = new Map<string, number>();
  /** Requests answered from an earlier result: the consumer retried or redelivered. */
  replays = 0;
  /** Outages scripted by `failNext`, in the order the next requests meet them. */
  private readonly outages: Array<{ readonly afterActing: boolean }> = [];
  #server: Server | undefined;
  #url = '';

  /** What the service does for a key it has not seen. */
  protected abstract make(idempotencyKey: string, request: unknown): R;

  /** What one POST must have to be served (undefined: fine), besides the key and a JSON body. */
  protected refusalOf(_request: unknown): string | undefined {
    return undefined;
  }

  /**
   * The next `times` requests are answered 503. `afterActing`: the service acts first and only the answer
   * is lost (a timeout after the effect), so the caller's retry must get that first result back.
   */
  failNext(times = 1, options: { afterActing?: boolean } = {}): void {
    for (let i = 0; i < times; i++) this.outages.push({ afterActing: options.afterActing ?? false });
  }

  get url(): string {
    return this.#url;
  }

  /** Starts listening on an ephemeral loopback port. */
  protected async listen(): Promise<this> {
    const server = createServer((req, res) => {
      this.handle(req).then(
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
    this.#server = server;
    this.#url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return this;
  }

  private async handle(req: IncomingMessage): Promise<{ status: number; body: unknown }> {
    if (req.method !== 'POST') return { status: 405, body: { error: 'only POST is served' } };
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
    const refusal = this.refusalOf(request);
    if (refusal) return { status: 400, body: { error: refusal } };
    this.calls.set(key, (this.calls.get(key) ?? 0) + 1);
    const outage = this.outages.shift();
    if (outage?.afterActing && !this.results.has(key)) this.results.set(key, this.make(key, request));
    if (outage) return { status: 503, body: { error: 'scripted outage' } };
    const existing = this.results.get(key);
    if (existing) {
      this.replays++;
      return { status: 200, body: existing };
    }
    const result = this.make(key, request);
    this.results.set(key, result);
    return { status: 201, body: result };
  }

  stop(): Promise<void> {
    return new Promise((resolve) => {
      if (!this.#server) return resolve();
      this.#server.closeAllConnections();
      this.#server.close(() => resolve());
    });
  }
}
