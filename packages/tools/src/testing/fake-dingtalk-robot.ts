import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A stand-in for DingTalk's custom-robot endpoint on 127.0.0.1: checks `timestamp` (±1 hour) and
 * `sign` the way DingTalk documents them, enforces the keyword, the 20,000-byte limit and "more
 * than 20 messages a minute → banned for 10 minutes", and records every request. Its clock is
 * injectable so a 10-minute ban passes in milliseconds.
 */
export interface FakeRobotOptions {
  accessToken: string;
  secret?: string;
  keyword?: string;
  clock?: { now(): number };
  limitPerMinute?: number;
  banMs?: number;
}

export interface ReceivedRequest {
  at: number;
  accessToken: string | null;
  timestamp: string | null;
  sign: string | null;
  rawQuery: string;
  bytes: number;
  body: {
    msgtype?: string;
    markdown?: { title?: string; text?: string };
    at?: { atMobiles?: string[]; isAtAll?: boolean };
  } | null;
  errcode: number;
  errmsg: string;
}

type Fault = 'http-502' | 'reset' | { errcode: number; errmsg: string };

const HOUR_MS = 3_600_000;
const MINUTE_MS = 60_000;

export class FakeDingTalkRobot {
  readonly received: ReceivedRequest[] = [];
  private readonly faults: Fault[] = [];
  private bannedUntil = 0;
  private secret: string | undefined;
  private constructor(
    private readonly server: Server,
    private readonly options: Required<Omit<FakeRobotOptions, 'secret' | 'keyword'>> &
      Pick<FakeRobotOptions, 'secret' | 'keyword'>,
  ) {
    this.secret = options.secret;
  }

  /** Someone pressed "reset secret" in the DingTalk group settings. */
  rotateSecret(secret: string): void {
    this.secret = secret;
  }

  static async start(options: FakeRobotOptions): Promise<FakeDingTalkRobot> {
    const resolved = {
      clock: { now: () => Date.now() },
      limitPerMinute: 20,
      banMs: 10 * MINUTE_MS,
      ...options,
    };
    let robot!: FakeDingTalkRobot;
    const server = createServer((req, res) => void robot.handle(req, res));
    robot = new FakeDingTalkRobot(server, resolved);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return robot;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** What goes into the webhook secret: the URL with the access token, as DingTalk shows it. */
  get webhookUrl(): string {
    return `http://127.0.0.1:${this.port}/robot/send?access_token=${this.options.accessToken}`;
  }

  /** Messages DingTalk would have shown in the group. */
  get delivered(): ReceivedRequest[] {
    return this.received.filter((r) => r.errcode === 0);
  }

  /** The next requests fail this way, in order (faults the real endpoint produces now and then). */
  failNext(...faults: Fault[]): void {
    this.faults.push(...faults);
  }

  /** The most requests that arrived within any 60 s sliding window. */
  maxRequestsInAnyMinute(): number {
    const times = this.received.map((r) => r.at).sort((a, b) => a - b);
    let best = 0;
    let start = 0;
    for (let end = 0; end < times.length; end++) {
      while (times[end]! - times[start]! >= MINUTE_MS) start++;
      best = Math.max(best, end - start + 1);
    }
    return best;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks);
    const fault = this.faults.shift();
    if (fault === 'reset') {
      req.socket.destroy();
      return;
    }
    if (fault === 'http-502') {
      res.writeHead(502, { 'content-type': 'text/html' }).end('<html>Bad Gateway</html>');
      return;
    }
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const now = this.options.clock.now();
    let body: ReceivedRequest['body'] = null;
    try {
      body = JSON.parse(raw.toString('utf8')) as ReceivedRequest['body'];
    } catch {
      body = null;
    }
    const record: ReceivedRequest = {
      at: now,
      accessToken: url.searchParams.get('access_token'),
      timestamp: url.searchParams.get('timestamp'),
      sign: url.searchParams.get('sign'),
      rawQuery: url.search,
      bytes: raw.length,
      body,
      errcode: 0,
      errmsg: 'ok',
    };
    const [errcode, errmsg] = fault ? [fault.errcode, fault.errmsg] : this.verdict(record, now, raw.toString('utf8'));
    record.errcode = errcode;
    record.errmsg = errmsg;
    this.received.push(record);
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ errcode, errmsg }));
  }

  private verdict(r: ReceivedRequest, now: number, text: string): [number, string] {
    if (r.accessToken !== this.options.accessToken) return [400101, 'access_token not exist'];
    if (now < this.bannedUntil) return [410100, 'send too fast, exceed 20 times per minute'];
    // Everything that reaches the robot counts towards its minute, accepted or not.
    const lastMinute = this.received.filter((p) => p.accessToken === r.accessToken && now - p.at < MINUTE_MS).length;
    if (lastMinute >= this.options.limitPerMinute) {
      this.bannedUntil = now + this.options.banMs;
      return [410100, 'send too fast, exceed 20 times per minute'];
    }
    if (this.secret !== undefined) {
      const ts = Number(r.timestamp);
      if (!r.timestamp || !Number.isInteger(ts) || Math.abs(now - ts) > HOUR_MS) {
        return [310000, 'invalid timestamp'];
      }
      const expected = createHmac('sha256', this.secret).update(`${r.timestamp}\n${this.secret}`).digest();
      const given = Buffer.from(r.sign ?? '', 'base64');
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return [310000, 'sign not match'];
    }
    if (
      r.body?.msgtype !== 'markdown' ||
      typeof r.body.markdown?.title !== 'string' ||
      typeof r.body.markdown.text !== 'string'
    ) {
      return [400105, 'invalid msgtype or message body'];
    }
    if (Buffer.byteLength(text, 'utf8') > 20_000) return [460101, 'message too long, exceed 20000 bytes'];
    if (this.options.keyword && !`${r.body.markdown.title}\n${r.body.markdown.text}`.includes(this.options.keyword)) {
      return [310000, 'keywords not in content'];
    }
    return [0, 'ok'];
  }
}
