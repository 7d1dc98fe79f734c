/**
 * The bridge's parts, for the benches and the other wings' tests that drive them in one process: a
 * `Bridge` over a scripted source, one route's forwarder against the emulator, the dead-letter notices
 * the ops command reads back. Production code of another wing never imports this file (the house rules
 * refuse it); it takes the bridge through `index.ts`.
 */
export { Bridge, type BridgeDependencies } from './bridge.ts';
export { RouteMetrics } from './bridge-metrics.ts';
export { DeadLetterQueue, DeadLetterReason } from './dead-letter-queue.ts';
export { OUTBOUND_REFUSAL_KIND, OutboundRefusalReason, OutboundRoute } from './outbound-route.ts';
export { RouteForwarder } from './route-forwarder.ts';
export { createRouteSource } from './route-source.ts';
export { BRIDGE_SQS_CLIENT_SETTINGS, SqsTarget } from './sqs-target.ts';
