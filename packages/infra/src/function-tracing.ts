import { TRACING_BACKEND_ENV, TracingBackend } from '@rocketmq-lambda/runtime/config/index.ts';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type { Construct } from 'constructs';

/** A stage's tracing back end (`tracing` in the stage settings), with the ADOT layer it needs for `adot`. */
export interface StageTracing {
  readonly backend: TracingBackend;
  /** `adot` only: the AWS Distro for OpenTelemetry Lambda layer for Node.js on arm64, in the stage's region. */
  readonly adotLayerArn?: string;
}

/**
 * The ADOT layer's wrapper: it registers the OpenTelemetry SDK (a tracer provider, the AWS SDK
 * instrumentation) before the handler loads, so the runtime's `@opentelemetry/api` spans are exported.
 */
export const ADOT_EXEC_WRAPPER = '/opt/otel-handler';

export interface FunctionTracingProps {
  readonly tracing?: lambda.Tracing;
  readonly layers?: lambda.ILayerVersion[];
  readonly environment: Record<string, string>;
}

/**
 * What a function needs for its stage's back end: nothing for `off`; Lambda active tracing for
 * `xray` (Lambda then records each invocation and links it to the SQS message's `AWSTraceHeader`,
 * which the bridge sets); for `adot`, active tracing as well (the layer's collector exports to X-Ray
 * by default, under the invocation's segment) plus the layer and its wrapper. The function is told
 * its back end in `TRACING_BACKEND`, so it makes spans only when one is on.
 */
export function functionTracingProps(scope: Construct, tracing: StageTracing | undefined): FunctionTracingProps {
  const backend = tracing?.backend ?? TracingBackend.off;
  if (backend === TracingBackend.off) return { environment: {} };
  const environment = { [TRACING_BACKEND_ENV]: backend };
  if (backend === TracingBackend.xray) return { tracing: lambda.Tracing.ACTIVE, environment };
  const layer = lambda.LayerVersion.fromLayerVersionArn(scope, 'AdotLayer', tracing!.adotLayerArn!);
  return {
    tracing: lambda.Tracing.ACTIVE,
    layers: [layer],
    environment: { ...environment, AWS_LAMBDA_EXEC_WRAPPER: ADOT_EXEC_WRAPPER },
  };
}

/**
 * What `xray` leaves out, said at synth: Lambda records each invocation (linked to the bridge's
 * forward through `AWSTraceHeader`), but nothing in the function exports the runtime's per-record spans.
 */
export function xrayTracingNote(tracing: StageTracing | undefined): string | undefined {
  if (tracing?.backend !== TracingBackend.xray) return undefined;
  return 'tracing: xray records each invocation and links it to the bridge\'s forward; the per-record spans (record, dedup, commit, route) are exported only with tracing: adot (docs/architecture.md, "Trace context")';
}

/**
 * Why a traced function's role holds a wildcard, for cdk-nag: active tracing grants
 * `xray:PutTraceSegments` and `xray:PutTelemetryRecords` on `*`, which have no resource-level permissions.
 */
export function tracingWildcardReason(tracing: StageTracing | undefined): string | undefined {
  if ((tracing?.backend ?? TracingBackend.off) === TracingBackend.off) return undefined;
  return 'Lambda active tracing: xray:PutTraceSegments and xray:PutTelemetryRecords have no resource-level permissions.';
}
