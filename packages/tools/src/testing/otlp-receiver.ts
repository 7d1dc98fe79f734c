import { createHash, createHmac } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One span as OTLP/HTTP's JSON encoding carries it (ids in hex), with its resource's service name. */
export interface ReceivedSpan {
  readonly serviceName: string | undefined;
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId?: string;
  readonly name: string;
  readonly links: Array<{ traceId: string; spanId: string }>;
  readonly attributes: Record<string, unknown>;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  arrayValue?: { values?: OtlpValue[] };
}
interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}
interface OtlpTraces {
  resourceSpans?: Array<{
    resource?: { attributes?: OtlpAttribute[] };
    scopeSpans?: Array<{
      spans?: Array<{
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        links?: Array<{ traceId: string; spanId: string }>;
        attributes?: OtlpAttribute[];
      }>;
    }>;
  }>;
}

const otlpValue = (v: OtlpValue): unknown =>
  v.stringValue ?? v.intValue ?? v.boolValue ?? v.arrayValue?.values?.map(otlpValue);
const attributesOf = (list: OtlpAttribute[] = []) => Object.fromEntries(list.map((a) => [a.key, otlpValue(a.value)]));

/** The credentials and scope a receiver standing in for X-Ray's OTLP endpoint expects each request signed with. */
export interface SigV4Expectation {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
  readonly region: string;
  readonly service: string;
}

/**
 * An OTLP/HTTP trace receiver on loopback, standing in for X-Ray's OTLP endpoint: it accepts
 * `POST /v1/traces` in the JSON encoding and keeps every span. Given `sigv4`, it first checks each
 * request's AWS Signature Version 4 as AWS would, and answers 403 to one that is unsigned or whose
 * signature does not verify. Anything else it cannot read is answered 415. Every refusal is kept
 * with its reason, so a test sees an exporter the endpoint would turn away.
 */
export async function startOtlpReceiver(options: { sigv4?: SigV4Expectation } = {}) {
  const spans: ReceivedSpan[] = [];
  const refusals: string[] = [];
  let verified = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const unauthorised = options.sigv4 ? sigv4Refusal(req, body, options.sigv4) : undefined;
      if (unauthorised) {
        refusals.push(unauthorised);
        res.writeHead(403, { 'content-type': 'application/json' }).end(JSON.stringify({ message: unauthorised }));
        return;
      }
      if (options.sigv4) verified++;
      if (req.method !== 'POST' || req.url !== '/v1/traces' || !req.headers['content-type']?.includes('json')) {
        refusals.push(`unreadable: ${req.method} ${req.url} ${req.headers['content-type']}`);
        res.writeHead(415).end();
        return;
      }
      for (const rs of (JSON.parse(body.toString('utf8')) as OtlpTraces).resourceSpans ?? []) {
        const serviceName = attributesOf(rs.resource?.attributes)['service.name'] as string | undefined;
        for (const ss of rs.scopeSpans ?? [])
          for (const s of ss.spans ?? [])
            spans.push({
              serviceName,
              traceId: s.traceId,
              spanId: s.spanId,
              ...(s.parentSpanId ? { parentSpanId: s.parentSpanId } : {}),
              name: s.name,
              links: (s.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
              attributes: attributesOf(s.attributes),
            });
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1/traces`,
    spans,
    /** Why each refused request was refused. */
    refusals,
    refused: () => refusals.length,
    /** Requests whose signature verified (with `sigv4`). */
    verified: () => verified,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const AUTHORIZATION =
  /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/;
const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');
const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data).digest();

/**
 * Why a request's Signature Version 4 does not verify, or undefined when it does. Recomputed here
 * from the specification (canonical request, string to sign, derived key) over the bytes and
 * headers as received, not with the library the exporter signs with, so a request whose body,
 * host, scope or credentials differ from what was signed is caught.
 */
export function sigv4Refusal(req: IncomingMessage, body: Buffer, expected: SigV4Expectation): string | undefined {
  const authorization = req.headers.authorization;
  if (authorization === undefined) return 'unsigned: no Authorization header';
  const match = AUTHORIZATION.exec(authorization);
  if (!match) return `not a SigV4 Authorization header: ${authorization.slice(0, 40)}`;
  const [, accessKeyId, date, region, service, signedHeaders, signature] = match as unknown as string[];
  if (accessKeyId !== expected.accessKeyId) return `signed by another access key: ${accessKeyId}`;
  if (region !== expected.region || service !== expected.service) return `scope ${region}/${service}`;
  const header = (name: string) => {
    const value = req.headers[name];
    return (Array.isArray(value) ? value.join(',') : value)?.trim().replace(/\s+/g, ' ');
  };
  const amzDate = header('x-amz-date') ?? '';
  if (!/^\d{8}T\d{6}Z$/.test(amzDate) || !amzDate.startsWith(date!)) return `x-amz-date ${amzDate}`;
  const signedAt = Date.parse(amzDate.replace(/^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/, '$1-$2-$3T$4:$5:$6Z'));
  if (Math.abs(Date.now() - signedAt) > 5 * 60_000) return `signed at ${amzDate}, over five minutes away`;
  const names = signedHeaders!.split(';');
  for (const required of ['host', 'x-amz-date', ...(expected.sessionToken ? ['x-amz-security-token'] : [])])
    if (!names.includes(required)) return `${required} is not signed`;
  if (expected.sessionToken && header('x-amz-security-token') !== expected.sessionToken) return 'another session token';
  const payloadHash = sha256(body);
  const declaredHash = header('x-amz-content-sha256');
  if (declaredHash !== undefined && declaredHash !== payloadHash) return 'x-amz-content-sha256 is not the body’s';
  const [path, query = ''] = (req.url ?? '/').split('?');
  if (query !== '') return 'a query string (the exporter sends none)';
  const canonicalRequest = [
    req.method,
    path,
    '',
    names.map((name) => `${name}:${header(name) ?? ''}\n`).join(''),
    signedHeaders,
    payloadHash,
  ].join('\n');
  const scope = `${date}/${region}/${service}/aws4_request`;
  const stringToSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonicalRequest)].join('\n');
  const key = hmac(hmac(hmac(hmac(`AWS4${expected.secretAccessKey}`, date!), region!), service!), 'aws4_request');
  return createHmac('sha256', key).update(stringToSign).digest('hex') === signature ? undefined : 'signature mismatch';
}
