import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { COUPON_GRANT_PATH } from '@rocketmq-lambda/consumers/coupons/index.ts';
import { Sha256 } from '@smithy/core/checksum';
import { SignatureV4 } from '@smithy/signature-v4';
import type { AwsCredentialIdentity } from '@smithy/types';

/** What the service does with one request; requests take the scripted behaviours in order, then `grant`. */
type Behaviour =
  | { kind: 'grant' }
  /** Answer with this status and grant nothing (a 5xx outage, a 4xx refusal). */
  | { kind: 'fail'; status: number; text?: string }
  /** Grant, then keep the answer back for `ms`: a call that hangs past the caller's deadline. */
  | { kind: 'delay'; ms: number }
  /** Grant, then keep the answer back until the test releases it: success after the lease expired. */
  | { kind: 'hold'; hold: HeldAnswer }
  /** Grant nothing and answer `status` with this Location. */
  | { kind: 'redirect'; status: number; location: string };

/**
 * Who the service lets in: anyone (a local stand-in), a bearer token (the current value of
 * `token()`), or a SigV4 signature that verifies with these credentials, checked by signing the
 * request again with the same library. A refusal is 401 (bearer) or 403 (SigV4, as API Gateway).
 */
export type ServiceAccess =
  | { kind: 'none' }
  | { kind: 'bearer'; token: () => string }
  | { kind: 'sigv4'; service: string; region: string; credentials: AwsCredentialIdentity };

export interface HeldAnswer {
  /** Resolves when the held request has arrived (and its coupon was granted). */
  readonly arrived: Promise<void>;
  /** Sends the held answer. */
  release(): void;
}

export interface ReceivedRequest {
  idempotencyKey: string | undefined;
  /** The Authorization header as it arrived. */
  authorization: string | undefined;
  path: string | undefined;
  body: unknown;
  status: number;
  at: number;
}

/**
 * A real HTTP server on 127.0.0.1 standing in for the coupon service. Like the real one
 * it deduplicates on the `Idempotency-Key` header: the first request of a key grants a
 * coupon, later ones get the same coupon back. It counts both, so a test can tell
 * "called once" (requests) from "granted once" (grants).
 */
export async function startFakeCouponService(access: ServiceAccess = { kind: 'none' }) {
  const state: ServiceState = { script: [], couponsByKey: new Map(), received: [], pending: new Set(), issued: 0 };
  const { script, couponsByKey, received, pending } = state;
  const server = createServer((req, res) => {
    handle(state, access, req, res).catch(() => answer(res, 500, { message: 'fake service failed' }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    /** Every request, in arrival order. */
    received,
    /** Requests that reached the grant endpoint with this key (the side-effect calls). */
    requests: (key: string) => received.filter((r) => r.idempotencyKey === key).length,
    /** Coupons actually granted for this key (0 or 1: the service deduplicates). */
    grants: (key: string) => (couponsByKey.has(key) ? 1 : 0),
    couponFor: (key: string) => couponsByKey.get(key),
    /**
     * The next `times` requests fail with `status` (default 503) and grant nothing; `text` replaces the JSON error
     * body.
     */
    failNext(times = 1, status = 503, text?: string) {
      for (let i = 0; i < times; i++) script.push({ kind: 'fail', status, text });
    },
    /**
     * The next request grants nothing and is answered `status` (default 307, "repeat the POST there") with this
     * Location.
     */
    redirectNext(location: string, status = 307) {
      script.push({ kind: 'redirect', status, location });
    },
    /** The next request is granted but answered only after `ms`. */
    delayNext(ms: number) {
      script.push({ kind: 'delay', ms });
    },
    /** The next request is granted but answered only when the returned handle is released. */
    holdNext(): HeldAnswer {
      const hold = new HeldAnswerImpl();
      pending.add(() => hold.release());
      script.push({ kind: 'hold', hold });
      return hold;
    },
    async close() {
      for (const release of pending) release();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export type FakeCouponService = Awaited<ReturnType<typeof startFakeCouponService>>;

/** The service's memory: the behaviours still scripted, the coupons by key, every request, the answers held back. */
interface ServiceState {
  readonly script: Behaviour[];
  readonly couponsByKey: Map<string, string>;
  readonly received: ReceivedRequest[];
  /** Releases every answer kept back (a delay, a hold), so that closing does not wait for them. */
  readonly pending: Set<() => void>;
  issued: number;
}

function answer(res: ServerResponse, status: number, body: unknown): void {
  if (res.destroyed) return;
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/** One request: its credentials, its shape, then the next scripted behaviour (a grant when none is left). */
async function handle(state: ServiceState, access: ServiceAccess, req: IncomingMessage, res: ServerResponse) {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const key = req.headers['idempotency-key'] as string | undefined;
  const text = Buffer.concat(chunks).toString('utf8');
  let body: { orderNo?: unknown; userId?: unknown } | undefined;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const record = (status: number) =>
    state.received.push({
      idempotencyKey: key,
      authorization: req.headers.authorization,
      path: req.url,
      body,
      status,
      at: Date.now(),
    });
  const reply = (status: number, json: unknown) => {
    record(status);
    answer(res, status, json);
  };
  const refusal = await refusalOf(access, req, text);
  if (refusal) return reply(refusal, { message: 'credentials refused' });
  if (req.method !== 'POST' || req.url !== COUPON_GRANT_PATH) return reply(404, { message: 'not found' });
  if (!key || typeof body?.orderNo !== 'string' || body.userId === undefined)
    return reply(400, { message: 'Idempotency-Key, orderNo and userId are required' });

  const behaviour = state.script.shift() ?? { kind: 'grant' };
  if (behaviour.kind === 'redirect' || behaviour.kind === 'fail') {
    record(behaviour.status);
    return answerUngranted(behaviour, res);
  }
  const couponId = grant(state, key);
  record(200);
  if (behaviour.kind === 'delay') await wait(behaviour.ms, state.pending);
  if (behaviour.kind === 'hold') {
    (behaviour.hold as HeldAnswerImpl).arrive();
    await (behaviour.hold as HeldAnswerImpl).released;
  }
  answer(res, 200, { couponId });
}

/** A scripted redirect or failure: nothing granted. */
function answerUngranted(behaviour: Extract<Behaviour, { kind: 'redirect' | 'fail' }>, res: ServerResponse): void {
  if (behaviour.kind === 'redirect') res.writeHead(behaviour.status, { location: behaviour.location }).end();
  else if (behaviour.text === undefined) answer(res, behaviour.status, { message: `scripted ${behaviour.status}` });
  else res.writeHead(behaviour.status, { 'content-type': 'text/plain; charset=utf-8' }).end(behaviour.text);
}

/** The key's coupon: the one granted before, or a new one (the real service deduplicates on the key too). */
function grant(state: ServiceState, key: string): string {
  let couponId = state.couponsByKey.get(key);
  if (!couponId) {
    couponId = `CP${String(++state.issued).padStart(6, '0')}`;
    state.couponsByKey.set(key, couponId);
  }
  return couponId;
}

/** The status that refuses the request's credentials, or undefined when they are accepted. */
async function refusalOf(access: ServiceAccess, req: IncomingMessage, body: string): Promise<number | undefined> {
  if (access.kind === 'none') return undefined;
  if (access.kind === 'bearer') return req.headers.authorization === `Bearer ${access.token()}` ? undefined : 401;
  return (await sigV4Verifies(access, req, body)) ? undefined : 403;
}

/**
 * Signs the request again, as received, with the expected credentials and the request's own time: the signatures must
 * be equal.
 */
async function sigV4Verifies(
  access: Extract<ServiceAccess, { kind: 'sigv4' }>,
  req: IncomingMessage,
  body: string,
): Promise<boolean> {
  const authorization = req.headers.authorization ?? '';
  const signedHeaders = /SignedHeaders=([^,]+)/.exec(authorization)?.[1]?.split(';');
  const amzDate = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(header(req.headers, 'x-amz-date'));
  if (!signedHeaders?.includes('host') || !amzDate) return false;
  const [, y, mo, d, h, mi, sec] = amzDate;
  const url = new URL(req.url ?? '/', `http://${req.headers.host}`);
  const signer = new SignatureV4({
    service: access.service,
    region: access.region,
    credentials: access.credentials,
    sha256: Sha256,
  });
  const again = await signer.sign(
    {
      method: req.method ?? 'GET',
      protocol: 'http:',
      hostname: url.hostname,
      port: Number(url.port),
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers: Object.fromEntries(signedHeaders.map((name) => [name, header(req.headers, name)])),
      body,
    },
    { signingDate: new Date(`${y}-${mo}-${d}T${h}:${mi}:${sec}Z`) },
  );
  return again.headers.authorization === authorization;
}

function header(headers: IncomingHttpHeaders, name: string): string {
  const value = headers[name];
  return Array.isArray(value) ? value.join(',') : (value ?? '');
}

class HeldAnswerImpl implements HeldAnswer {
  arrive!: () => void;
  release!: () => void;
  readonly arrived = new Promise<void>((resolve) => (this.arrive = resolve));
  readonly released = new Promise<void>((resolve) => (this.release = resolve));
}

function wait(ms: number, pending: Set<() => void>): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      pending.delete(done);
      resolve();
    }
    pending.add(done);
  });
}
