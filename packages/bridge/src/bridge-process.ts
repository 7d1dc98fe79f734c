import { Logger } from '@aws-lambda-powertools/logger';
import {
  configFromEnv,
  createEventBridge,
  createSecretsManager,
  createSqs,
  SecretSigningKeys,
} from '@rocketmq-lambda/runtime/aws/index.ts';
import { tracingBackendOf } from '@rocketmq-lambda/runtime/config/index.ts';
import { Bridge } from './bridge.ts';
import { loadBridgeConfig } from './bridge-config.ts';
import { bridgeTracingOf } from './bridge-tracing.ts';
import { HealthServer } from './health-server.ts';
import { BRIDGE_SQS_CLIENT_SETTINGS } from './sqs-target.ts';
import { startTraceExport } from './trace-export.ts';
import type { BeforeAckHook } from './types.ts';

/**
 * The bridge as a process: configuration from `BRIDGE_CONFIG`, AWS from the task role (or the
 * emulator with `AWS_ENDPOINT_URL`), RocketMQ ACL from `ROCKETMQ_ACCESS_KEY`/`ROCKETMQ_SECRET_KEY`.
 * SIGTERM (ECS stop, Ctrl-C) drains: stop receiving, finish in-flight forwards and acks, exit 0.
 */
export async function runBridgeProcess(
  options: { env?: NodeJS.ProcessEnv; beforeAck?: BeforeAckHook } = {},
): Promise<void> {
  const env = options.env ?? process.env;
  const logger = new Logger({ serviceName: 'rocketmq-bridge' });
  const config = loadBridgeConfig(env);
  const aws = configFromEnv(env);
  const accessKey = env.ROCKETMQ_ACCESS_KEY;
  const accessSecret = env.ROCKETMQ_SECRET_KEY;
  if (!config.sslEnabled) {
    logger.warn(
      'TLS to RocketMQ is off (sslEnabled: false): credentials and message bodies cross the network in clear; acceptable only for a local broker or a private link',
      {
        protocol: config.protocol,
      },
    );
  }
  if (!config.signing)
    logger.warn(
      'envelopes are not signed (no signing in the configuration): consumers that require signatures will dead-letter them',
    );
  const backend = tracingBackendOf(env);
  const traceExport = startTraceExport(backend, env, { log: logger });
  if (traceExport) logger.info('exporting forward spans', { tracing: backend, endpoint: traceExport.endpoint });
  const tracing = bridgeTracingOf(backend);
  const bridge = new Bridge(config, {
    ...(config.signing
      ? { signingKeys: new SecretSigningKeys(createSecretsManager(aws), config.signing.secretId) }
      : {}),
    sqs: createSqs(aws, BRIDGE_SQS_CLIENT_SETTINGS),
    eventBridge: createEventBridge(aws),
    logger,
    ...(tracing ? { tracing } : {}),
    ...(accessKey && accessSecret ? { credentials: { accessKey, accessSecret } } : {}),
    ...(options.beforeAck ? { beforeAck: options.beforeAck } : {}),
  });
  const health = new HealthServer(() => bridge.status());

  let stopping: Promise<void> | undefined;
  const shutdown = (signal: string) => {
    stopping ??= (async () => {
      logger.info('draining', { signal });
      await bridge.stop();
      await health.close();
      // The last forwards' spans are still in the batch: flushed before exit, or they are lost.
      await traceExport?.shutdown();
    })();
    return stopping;
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      shutdown(signal).then(
        () => process.exit(0),
        (err: unknown) => {
          logger.error('shutdown failed', { error: String(err) });
          process.exit(1);
        },
      );
    });
  }

  const port = await health.listen(config.health.port, config.health.host);
  logger.info('health endpoint listening', { host: config.health.host, port });
  await bridge.start();
}
