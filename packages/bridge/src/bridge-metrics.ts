import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { BRIDGE_METRICS_NAMESPACE, BridgeMetric } from '@rocketmq-lambda/runtime/config/index.ts';

/** What one route has done since the bridge started; served by the health endpoint. */
export interface RouteStats {
  forwarded: number;
  forwardFailed: number;
  deadLettered: number;
  ackFailed: number;
  receiveFailed: number;
  /** Store-to-forward delay of the newest forwarded message: how far behind the topic the bridge runs. */
  lagMs: number | undefined;
  lastReceiveAt: string | undefined;
}

/**
 * Counters per route, flushed as CloudWatch embedded-metric-format lines on stdout (on Fargate the
 * awslogs driver ships them and CloudWatch extracts the metrics; no PutMetricData permission needed).
 * RocketMQ 5's gRPC API has no consumer-lag call, so lag is measured on the messages themselves.
 *
 * Aggregated here between flushes, one value per metric per flush: Powertools Metrics keeps every
 * `addMetric` value and serialises a line whenever a metric holds 100 of them, which per batch
 * meant a line every 100 batches. The alarms read counts as `Sum` and lag as `Maximum`
 * (packages/infra/src/bridge/bridge-alarms.ts), so a sum and a maximum per flush keep what they see.
 */
export class RouteMetrics {
  readonly stats: RouteStats = {
    forwarded: 0,
    forwardFailed: 0,
    deadLettered: 0,
    ackFailed: 0,
    receiveFailed: 0,
    lagMs: undefined,
    lastReceiveAt: undefined,
  };
  readonly #emf: Metrics;
  /** Counts since the last flush, by metric name. */
  readonly #counts = new Map<string, number>();
  /** The largest lag since the last flush. */
  #maxLagMs: number | undefined;

  constructor(group: string, topic: string) {
    this.#emf = new Metrics({
      namespace: BRIDGE_METRICS_NAMESPACE,
      serviceName: 'rocketmq-bridge',
      defaultDimensions: { ConsumerGroup: group, Topic: topic },
    });
  }

  received(count: number, now = new Date()): void {
    this.stats.lastReceiveAt = now.toISOString();
    this.#add(BridgeMetric.received, count);
  }

  forwarded(count: number, lagMs: number | undefined): void {
    this.stats.forwarded += count;
    this.#add(BridgeMetric.forwarded, count);
    if (lagMs !== undefined) {
      this.stats.lagMs = lagMs;
      this.#maxLagMs = Math.max(lagMs, this.#maxLagMs ?? lagMs);
    }
  }

  forwardFailed(count: number): void {
    this.stats.forwardFailed += count;
    this.#add(BridgeMetric.forwardFailed, count);
  }

  deadLettered(count: number): void {
    this.stats.deadLettered += count;
    this.#add(BridgeMetric.deadLettered, count);
  }

  ackFailed(count: number): void {
    this.stats.ackFailed += count;
    this.#add(BridgeMetric.ackFailed, count);
  }

  receiveFailed(): void {
    this.stats.receiveFailed += 1;
    this.#add(BridgeMetric.receiveFailed, 1);
  }

  flush(): void {
    if (this.#counts.size === 0 && this.#maxLagMs === undefined) return;
    for (const [name, count] of this.#counts) this.#emf.addMetric(name, MetricUnit.Count, count);
    if (this.#maxLagMs !== undefined)
      this.#emf.addMetric(BridgeMetric.forwardLag, MetricUnit.Milliseconds, this.#maxLagMs);
    this.#counts.clear();
    this.#maxLagMs = undefined;
    this.#emf.publishStoredMetrics();
  }

  #add(name: string, count: number): void {
    if (count === 0) return;
    this.#counts.set(name, (this.#counts.get(name) ?? 0) + count);
  }
}
