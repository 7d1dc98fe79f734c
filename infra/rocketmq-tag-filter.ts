import * as lambda from 'aws-cdk-lib/aws-lambda';
import { TagExpression } from '../lib/rocketmq/tag-expression.ts';

/**
 * Where a RocketMQ tag sits in an SQS body, for every wrapping `parseEnvelope` accepts.
 * The parser reads `tags` first and falls back to `systemProperties.TAGS`; Alibaba-style
 * events carry only the latter. Lambda ORs the filters of one event source mapping and
 * allows five by default (ten on request), so this list is capped by that quota:
 * the bare-`data` EventBridge form with only `systemProperties.TAGS` is the one shape left
 * out (the bridge's writer always sets `tags`); such a message would be dropped by the filter.
 */
export const TAG_LOCATIONS: readonly (readonly string[])[] = [
  // The bridge's CloudEvent as the SQS body.
  ['data', 'tags'],
  ['data', 'systemProperties', 'TAGS'],
  // EventBridge event whose `detail` is the CloudEvent.
  ['detail', 'data', 'tags'],
  ['detail', 'data', 'systemProperties', 'TAGS'],
  // EventBridge event whose `detail` is the CloudEvent's `data`.
  ['detail', 'tags'],
];

/** Lambda's default quota of filters per event source mapping. */
export const EVENT_FILTER_QUOTA = 5;

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

function nest(path: readonly string[], tags: string[]): Record<string, unknown> {
  const [head, ...rest] = path;
  return { [head!]: rest.length === 0 ? tags : nest(rest, tags) };
}
