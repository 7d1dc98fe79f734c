import { trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { AWSXRayIdGenerator } from '@opentelemetry/id-generator-aws-xray';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { TracingBackend } from '../lib/config/index.ts';

/** Where the task's collector sidecar listens (infra/bridge/bridge-service.ts), OTLP's standard port and path. */
export const DEFAULT_TRACES_ENDPOINT = 'http://localhost:4318/v1/traces';

/** The bridge's registered trace export: `shutdown` flushes what is buffered (the drain calls it last). */
export interface TraceExport {
  readonly endpoint: string;
  shutdown(): Promise<void>;
}

/**
 * Registers the bridge's tracer provider when the stage traces (`xray` or `adot`): forward spans are
 * batched and sent over OTLP/HTTP to `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (default the task's
 * collector sidecar), which exports them to X-Ray. Both back ends take the same route here: the
 * choice only changes what the bridge writes on each forward (`AWSTraceHeader` with `xray`).
 *
 * Trace ids of forwards without a producer context are X-Ray's (epoch seconds first), which X-Ray
 * requires; a forward with one keeps the producer's trace id.
 */
export function startTraceExport(backend: TracingBackend, env: NodeJS.ProcessEnv): TraceExport | undefined {
  if (backend === TracingBackend.off) return undefined;
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || DEFAULT_TRACES_ENDPOINT;
  const provider = new BasicTracerProvider({
    idGenerator: new AWSXRayIdGenerator(),
    resource: resourceFromAttributes({ 'service.name': env.POWERTOOLS_SERVICE_NAME || 'rocketmq-bridge' }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: endpoint }))],
  });
  trace.setGlobalTracerProvider(provider);
  return {
    endpoint,
    shutdown: async () => {
      await provider.shutdown();
      trace.disable();
    },
  };
}
