import { defaultProvider } from '@aws-sdk/credential-provider-node';
import { trace } from '@opentelemetry/api';
import { AWSXRayIdGenerator } from '@opentelemetry/id-generator-aws-xray';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { TRACING_BACKEND_ENV, TracingBackend } from '@rocketmq-lambda/runtime/config/index.ts';
import type { AwsCredentialIdentityProvider } from '@smithy/types';
import { type SpanExportLog, xrayOtlpEndpoint, xraySpanExporter } from './xray-span-exporter.ts';

/**
 * The bridge's registered trace export: `shutdown` flushes what is buffered (the drain calls it
 * last) and resolves whether or not the endpoint took it.
 */
export interface TraceExport {
  readonly endpoint: string;
  shutdown(): Promise<void>;
}

/** Tracing is on but the process cannot know where its spans go. */
export class TraceExportConfigError extends Error {
  override readonly name = 'TraceExportConfigError';
}

/**
 * Registers the bridge's tracer provider when the stage traces (`xray` or `adot`): forward spans
 * are batched and sent, SigV4-signed with the task role's credentials, to X-Ray's OTLP endpoint in
 * the task's region (`AWS_REGION`, which ECS sets), or to `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`
 * when given (a stand-in in tests). Both back ends take the same route here: the choice only
 * changes what the bridge writes on each forward (`AWSTraceHeader` with `xray`).
 *
 * Trace ids are X-Ray's (epoch seconds first): every forward starts a trace of the bridge's own
 * (packages/runtime/src/tracing/spans.ts), and SQS's `AWSTraceHeader` takes X-Ray's ids only.
 */
export function startTraceExport(
  backend: TracingBackend,
  env: NodeJS.ProcessEnv,
  deps: { log: SpanExportLog; credentials?: AwsCredentialIdentityProvider },
): TraceExport | undefined {
  if (backend === TracingBackend.off) return undefined;
  const region = env.AWS_REGION || env.AWS_DEFAULT_REGION;
  if (!region)
    throw new TraceExportConfigError(
      `${TRACING_BACKEND_ENV} is ${backend} but neither AWS_REGION nor AWS_DEFAULT_REGION is set: the span export's endpoint and signature need the region (ECS sets both in a task)`,
    );
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || xrayOtlpEndpoint(region);
  const exporter = xraySpanExporter({
    url: endpoint,
    region,
    credentials: deps.credentials ?? defaultProvider(),
    log: deps.log,
  });
  const provider = new BasicTracerProvider({
    idGenerator: new AWSXRayIdGenerator(),
    resource: resourceFromAttributes({ 'service.name': env.POWERTOOLS_SERVICE_NAME || 'rocketmq-bridge' }),
    spanProcessors: [new BatchSpanProcessor(exporter)],
  });
  trace.setGlobalTracerProvider(provider);
  return {
    endpoint,
    shutdown: async () => {
      // A last export that fails is logged by the exporter; it costs those spans, never the drain.
      await provider.shutdown().catch(() => undefined);
      trace.disable();
    },
  };
}
