/**
 * Where a stage's spans go, chosen in its settings (`tracing` in packages/infra/src/deployment-settings.ts)
 * and handed to every function and to the bridge in one environment variable:
 * - `off`: no spans are made at all (the runtime holds no tracer);
 * - `xray`: Lambda active tracing, and the bridge sets SQS's `AWSTraceHeader` so X-Ray links the
 *   bridge's forward to the consumer's invocation;
 * - `adot`: the AWS Distro for OpenTelemetry layer registers a tracer provider and exports the spans
 *   (to X-Ray or any OTLP back end the collector is configured for).
 */
export const TracingBackend = { off: 'off', xray: 'xray', adot: 'adot' } as const;
export type TracingBackend = (typeof TracingBackend)[keyof typeof TracingBackend];
/** Every choice, for the settings' schema. */
export const TRACING_BACKENDS = Object.values(TracingBackend) as [TracingBackend, ...TracingBackend[]];

export const TRACING_BACKEND_ENV = 'TRACING_BACKEND';

export class InvalidTracingBackendError extends Error {
  override readonly name = 'InvalidTracingBackendError';
}

/** The backend an environment names; `off` when it names none (the local run, tests). */
export function tracingBackendOf(env: NodeJS.ProcessEnv = process.env): TracingBackend {
  const value = env[TRACING_BACKEND_ENV];
  if (value === undefined || value === '') return TracingBackend.off;
  if (value in TracingBackend) return value as TracingBackend;
  throw new InvalidTracingBackendError(
    `environment variable ${TRACING_BACKEND_ENV} is ${JSON.stringify(value)}: expected ${Object.keys(TracingBackend).join(', ')}`,
  );
}

/** The instrumentation scope names the runtime's spans are made under. */
export const TRACER_NAMES = { consumer: 'rocketmq-lambda-consumer', bridge: 'rocketmq-bridge' } as const;
