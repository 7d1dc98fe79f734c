import type { ConsumerGroupDefinition } from '@rocketmq-lambda/runtime/config/index.ts';
import { parseEnvelope, TagExpression } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { TopicRoutes } from '../local/topic-routes.ts';
import {
  type ChaosMessage,
  type ChaosPlugin,
  type ExpectedDeadLetter,
  type GroupExpectations,
  MALFORMED_ENVELOPE,
} from './chaos-plugin.ts';
import { type ChaosWorkload, InvalidWorkloadError } from './workload.ts';

/** One group as the run judges it: every copy the bridge sends it, and what they must come to. */
export interface GroupUnderTest {
  readonly group: string;
  /** Every copy, in the order the bridge sends them (other tags and malformed envelopes included). */
  readonly received: readonly ChaosMessage[];
  readonly expectations: GroupExpectations;
  /** What the group's DLQ must hold, by body: its plug-in's poison, and every malformed envelope. */
  readonly deadLetters: ReadonlyMap<string, ExpectedDeadLetter>;
}

/**
 * Routes the workload as the bridge will (`TopicRoutes`) and hands each plug-in the copies
 * whose tag its group subscribes to; the others are filtered by the consumer (no effect, no
 * dead letter). Malformed envelopes are the run's to judge: every consumer parses the
 * envelope before anything else, so each one is an INVALID_ENVELOPE dead letter in every group.
 */
export function groupsUnderTest(
  workload: ChaosWorkload,
  definitions: readonly ConsumerGroupDefinition[],
  plugins: ReadonlyMap<string, ChaosPlugin>,
): GroupUnderTest[] {
  const routes = new TopicRoutes(definitions);
  const received = new Map<string, ChaosMessage[]>(definitions.map((d) => [d.group, []]));
  const tags = new Map<ChaosMessage, string | undefined>();
  for (const phase of workload.phases) {
    for (const message of phase.messages) {
      if ((message.fact.kind === MALFORMED_ENVELOPE) !== (message.topic === undefined)) {
        throw new InvalidWorkloadError(
          `a message of kind ${message.fact.kind} ${message.topic === undefined ? 'is not' : 'is'} an envelope: ${message.body.slice(0, 80)}`,
        );
      }
      if (message.topic !== undefined && !tags.has(message)) tags.set(message, parseEnvelope(message.body).tags);
      for (const group of routes.targetsOf(message)) received.get(group)!.push(message);
    }
  }
  return definitions.map(({ group, tagExpression }) => {
    const copies = received.get(group)!;
    const subscription = TagExpression.parse(tagExpression);
    const expectations = plugins
      .get(group)!
      .expect(copies.filter((m) => m.topic !== undefined && subscription.matches(tags.get(m))));
    const deadLetters = new Map<string, ExpectedDeadLetter>();
    for (const m of copies)
      if (m.topic === undefined) deadLetters.set(m.body, { body: m.body, code: 'INVALID_ENVELOPE' });
    for (const d of expectations.deadLetters) deadLetters.set(d.body, d);
    return { group, received: copies, expectations, deadLetters };
  });
}
