import type { ConsumerGroupDefinition } from '../../config/resources.ts';
import type { RecordReport } from '../index.ts';
import { type ConsumerRuntimeConfig, consumerConfigFromEnv, lazyHandler, type TablesOf } from './consumer-config.ts';
import type { ConsumerHandler } from './consumer-handler.ts';

/**
 * What a handler module (`functions/<name>/handler.ts`) exports as `consumer`: its catalogue
 * entry, the factory that builds its handler from a configuration (the deployed environment's,
 * the local run's, a test's), and the Lambda entry point. The local run and the checks that
 * every catalogue entry is wired find a group's consumer through this export alone.
 */
export interface ConsumerModule<D extends ConsumerGroupDefinition = ConsumerGroupDefinition> {
  readonly definition: D;
  readonly create: (config: ConsumerRuntimeConfig<TablesOf<D>> & ConsumerObservers) => ConsumerHandler;
  /** Built during init in Lambda, so a refused configuration fails the cold start. */
  readonly handler: ConsumerHandler;
}

/** What a caller may put between a consumer and the world: observers, a clock, instrumented clients. */
export interface ConsumerObservers {
  onReport?: (report: RecordReport) => void;
  now?: () => number;
}

export function defineConsumer<D extends ConsumerGroupDefinition>(
  definition: D,
  create: (config: ConsumerRuntimeConfig<TablesOf<D>> & ConsumerObservers) => ConsumerHandler,
): ConsumerModule<D> {
  return { definition, create, handler: lazyHandler(() => create(consumerConfigFromEnv(definition))) };
}
