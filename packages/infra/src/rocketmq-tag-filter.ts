import { TagExpression } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import * as lambda from 'aws-cdk-lib/aws-lambda';

/**
 * Where a RocketMQ tag sits in the bridge's `data` (the CloudEvent's, or an EventBridge event's
 * `detail` when that is the bare `data`). The parser reads `tags` first and falls back to
 * `systemProperties.TAGS`; Alibaba-style events carry only the latter.
 */
const DATA_TAG_PATHS: readonly (readonly string[])[] = [['tags'], ['systemProperties', 'TAGS']];

/** Lambda's default quota of filters per event source mapping. */
export const EVENT_FILTER_QUOTA = 5;

/**
 * Where a RocketMQ tag sits in an SQS body, for every wrapping `parseEnvelope` accepts: the
 * bridge's CloudEvent as the body, an EventBridge event whose `detail` is the CloudEvent, and one
 * whose `detail` is its `data`. Lambda ORs the filters of one event source mapping and allows
 * five by default (ten on request), so this list is capped by that quota: the bare-`data`
 * EventBridge form with only `systemProperties.TAGS` is the one shape left out (the bridge's
 * writer always sets `tags`); such a message is dropped by the filter, and alarms.
 */
export const TAG_LOCATIONS: readonly (readonly string[])[] = [
  ...DATA_TAG_PATHS.map((path) => ['data', ...path]),
  ...DATA_TAG_PATHS.map((path) => ['detail', 'data', ...path]),
  ...DATA_TAG_PATHS.map((path) => ['detail', ...path]),
].slice(0, EVENT_FILTER_QUOTA);

/**
 * The event filter patterns (as objects) that let through exactly the messages whose tag the
 * expression selects; none for `*`, which must see every message, tagged or not.
 */
export function tagFilterPatterns(tagExpression: string): Record<string, unknown>[] {
  const expression = TagExpression.parse(tagExpression);
  if (expression.matchesAll) return [];
  const tags = expression.tagList;
  return TAG_LOCATIONS.map((path) => ({ body: nest(path, tags) }));
}

/** The same patterns as the `filters` of an SQS event source. */
export function tagEventFilters(tagExpression: string): Array<Record<string, string>> {
  return tagFilterPatterns(tagExpression).map((pattern) => lambda.FilterCriteria.filter(pattern));
}

/**
 * What an EventBridge rule matches in `detail` to route a group's topic to its queue: with the
 * tag, in every place the parser reads it, unless the expression is `*`. Messages of other tags
 * then never reach the queue, so the event source's filter has nothing to drop in normal traffic
 * and each message it does drop (unreadable, untagged, or sent around the routes) is an anomaly.
 */
export function tagRoutePatterns(topic: string, tagExpression: string): Record<string, unknown>[] {
  const expression = TagExpression.parse(tagExpression);
  if (expression.matchesAll) return [{ data: { topic: [topic] } }, { topic: [topic] }];
  const tags = expression.tagList;
  return [
    // `detail` is the CloudEvent, or the CloudEvent's `data`.
    ...DATA_TAG_PATHS.map((path) => ({ data: { topic: [topic], ...nest(path, tags) } })),
    ...DATA_TAG_PATHS.map((path) => ({ topic: [topic], ...nest(path, tags) })),
  ];
}

function nest(path: readonly string[], tags: string[]): Record<string, unknown> {
  const [head, ...rest] = path;
  return { [head!]: rest.length === 0 ? tags : nest(rest, tags) };
}
