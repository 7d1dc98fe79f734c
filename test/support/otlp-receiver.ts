import { createServer } from 'node:http';
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

/**
 * An OTLP/HTTP trace receiver on loopback, where the bridge task's collector sidecar listens in AWS:
 * it accepts `POST /v1/traces` in the JSON encoding (what `@opentelemetry/exporter-trace-otlp-http` sends) and
 * keeps every span. Anything else is answered 415 and counted, so a test sees an exporter it cannot read.
 */
export async function startOtlpReceiver() {
  const spans: ReceivedSpan[] = [];
  let refused = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces' || !req.headers['content-type']?.includes('json')) {
        refused++;
        res.writeHead(415).end();
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpTraces;
      for (const rs of body.resourceSpans ?? []) {
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
    refused: () => refused,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
