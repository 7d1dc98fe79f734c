import { ExportResultCode } from '@opentelemetry/core';
import {
  createOtlpNetworkExportDelegate,
  ExporterMetrics,
  type ExportResponse,
  getSharedConfigurationDefaults,
  type IExporterTransport,
  OTLPExporterBase,
  OTLPExporterError,
} from '@opentelemetry/otlp-exporter-base';
import { JsonTraceSerializer, TraceExporterMetricsHelper } from '@opentelemetry/otlp-transformer';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { SigV4Signer } from '@rocketmq-lambda/runtime/aws/index.ts';
import type { AwsCredentialIdentityProvider } from '@smithy/types';

/**
 * X-Ray's OTLP endpoint for traces in a region (CloudWatch, "OTLP endpoints"): OTLP 1.x over
 * HTTP, JSON or protobuf, SigV4 as the `xray` service, authorised as `xray:PutTraceSegments`.
 * It takes spans only once the account has turned Transaction Search on (docs/deploy.md).
 */
export function xrayOtlpEndpoint(region: string): string {
  return `https://xray.${region}.amazonaws.com/v1/traces`;
}

/** Where a failed export is said. */
export interface SpanExportLog {
  warn(message: string, attributes: Record<string, unknown>): void;
}

/** How much of a refusing endpoint's answer a log line keeps (X-Ray says why in a short JSON message). */
const ANSWER_CHARS = 300;

/**
 * One OTLP/HTTP request, SigV4-signed. The OTLP exporter's own HTTP transport takes its headers
 * before it has the body, and a SigV4 signature covers the body's hash, so the library's
 * exporter cannot sign; this is the transport the library lets a caller supply, while
 * serialising, concurrency and the export timeout stay the library's. No retry: a refused or
 * failed request costs that batch's spans, never a forward.
 */
class SigV4OtlpTransport implements IExporterTransport {
  constructor(
    private readonly url: URL,
    private readonly signer: SigV4Signer,
  ) {}

  async send(data: Uint8Array, timeoutMillis: number): Promise<ExportResponse> {
    const headers = { 'content-type': 'application/json' };
    try {
      const signed = await this.signer.authorize({ method: 'POST', url: this.url, headers, body: data });
      const response = await fetch(this.url, {
        method: 'POST',
        headers: { ...headers, ...signed },
        body: data,
        signal: AbortSignal.timeout(timeoutMillis),
      });
      const answer = new Uint8Array(await response.arrayBuffer());
      if (response.ok) return answer.length > 0 ? { status: 'success', data: answer } : { status: 'success' };
      const said = new TextDecoder().decode(answer).slice(0, ANSWER_CHARS);
      return {
        status: 'failure',
        error: new OTLPExporterError(`the OTLP endpoint answered ${response.status}: ${said}`, response.status),
      };
    } catch (error) {
      return { status: 'failure', error: error instanceof Error ? error : new Error(String(error)) };
    }
  }

  shutdown(): void {}
}

export interface XraySpanExporterOptions {
  readonly url: string;
  /** The signature's region: the task's, whose endpoint `url` is (or a stand-in's, in tests). */
  readonly region: string;
  readonly credentials: AwsCredentialIdentityProvider;
  readonly log: SpanExportLog;
}

/**
 * The bridge's span exporter: the OpenTelemetry OTLP exporter (JSON encoding) over a transport
 * that signs each request with the task role's credentials, so the bridge needs no collector
 * beside it. A failed export is logged with the endpoint's answer; its spans are lost.
 */
export function xraySpanExporter(options: XraySpanExporterOptions): SpanExporter {
  const transport = new SigV4OtlpTransport(
    new URL(options.url),
    new SigV4Signer({ service: 'xray', region: options.region, credentials: options.credentials }),
  );
  const exporter = new OTLPExporterBase<ReadableSpan[]>(
    createOtlpNetworkExportDelegate(
      // Uncompressed: the signature covers the bytes sent.
      { ...getSharedConfigurationDefaults(), compression: 'none' },
      JsonTraceSerializer,
      new ExporterMetrics({
        componentType: 'otlp_http_span_exporter',
        metricsHelper: TraceExporterMetricsHelper,
        url: options.url,
        meterProvider: undefined,
        responseAttributesFromError: () => ({}),
      }),
      transport,
    ),
  );
  return {
    export: (spans, done) =>
      exporter.export(spans, (result) => {
        if (result.code !== ExportResultCode.SUCCESS)
          options.log.warn('span export failed; these spans are lost', {
            spans: spans.length,
            endpoint: options.url,
            error: result.error?.message ?? 'unknown',
          });
        done(result);
      }),
    forceFlush: () => exporter.forceFlush(),
    shutdown: () => exporter.shutdown(),
  };
}
