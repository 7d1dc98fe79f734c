/**
 * The consumer runtime: what a team uses to run a RocketMQ consumer group on Lambda with
 * exactly-once effects. One way in, `defineConsumer`:
 *
 *   export const consumer = defineConsumer(entry, { parsePayload, keyOf, business });   // the entry names the strategy
 *   export const handler = consumer.handler;
 *
 * A team writes a `ConsumerSpec` (how to read a message, its key, its business); the deployment
 * gives a `ConsumerConfig` (from the environment in Lambda, from the local run or a test
 * elsewhere); the engine holds the rest. Import from here; production wings never import more
 * (packages/tools/test/unit/house-rules/wing-boundaries.test.ts holds them to it). Operations,
 * tools and tests that need the engine's parts take them from `./internal.ts`.
 */

export type { OutgoingMessage } from '../config/index.ts';
export {
  ConsumptionError,
  IllegalTransitionError,
  InvalidConsumerConfigError,
  InvalidPayloadError,
  NotYetApplicableError,
  PermanentFailureError,
  TransientFailureError,
} from './failures/errors.ts';
export type { TransitionRequest } from './idempotency/state-transition.ts';
export type { DeclaredWrite, TransactionalResult } from './idempotency/transactional.ts';
export { identifier, parseJsonPayload, userIdSchema } from './json-payload.ts';
export {
  type ConsumerConfig,
  type ConsumerModule,
  type ConsumerSpec,
  type ConsumerWiring,
  defineConsumer,
} from './lambda/define-consumer.ts';
export type { ConsumerHandler } from './lambda/middleware.ts';
export { messageGroups } from './runners/message-groups.ts';
export type { ConsumerMessage, Invocation, RecordReport, Settlement } from './settlement.ts';
