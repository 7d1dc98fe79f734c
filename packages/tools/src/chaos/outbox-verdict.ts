import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { LocalRunResult } from '../local/local-pipeline.ts';
import { type OutboxFigures, outboxFigures } from '../local/local-relays.ts';
import type { ChaosPlugin } from './chaos-plugin.ts';

/** The chaos run's `outbox` figures: where every committed event is, and whether effect and event came as a pair. */
export interface OutboxSummary extends OutboxFigures {
  /** Committed effects without their event, and events without their effect (or a second event for one). */
  orphaned: number;
  /** Awards the notification service was asked to tell under two event ids: users told twice. */
  downstreamDouble: number;
  /** Nothing pending at the end of a completed run, nothing orphaned, nothing told twice. */
  holds: boolean;
  violations: string[];
}

/**
 * Pairs each publishing group's effects with its outbox events: the group's plug-in names the business
 * keys whose effect calls for one event each (`announcedEffects`), the outbox table holds the events.
 */
export async function outboxVerdict(
  result: LocalRunResult,
  plugins: ReadonlyMap<string, ChaosPlugin>,
  dynamoDb: DynamoDBDocumentClient,
): Promise<OutboxSummary | undefined> {
  if (!result.outbox) return undefined;
  const { items } = result.outbox;
  const orphans: string[] = [];
  for (const group of Object.keys(result.resources.outboxTables)) {
    const plugin = plugins.get(group);
    if (!plugin?.announcedEffects) continue;
    const effects = new Set(await plugin.announcedEffects({ dynamoDb, tables: result.resources.tables }));
    const events = new Map<string, number>();
    for (const item of items.filter((i) => i.group === group))
      events.set(item.businessKey, (events.get(item.businessKey) ?? 0) + 1);
    for (const key of effects) if (!events.has(key)) orphans.push(`${group}: effect ${key} has no outbox event`);
    for (const [key, count] of events) {
      if (!effects.has(key)) orphans.push(`${group}: an outbox event of ${key} without its effect`);
      if (count > 1) orphans.push(`${group}: ${count} outbox events for ${key}`);
    }
  }
  const figures = outboxFigures(items);
  const downstreamDouble = result.notifications?.doubleNotifications ?? 0;
  const violations = [
    ...orphans,
    // A run cut short stops its relays too: what they had not relayed yet is not judged, as unsent copies are not.
    ...(figures.pending > 0 && result.completed ? [`${figures.pending} outbox event(s) still PENDING at the end`] : []),
    ...(downstreamDouble > 0 ? [`${downstreamDouble} award(s) notified under two event ids`] : []),
  ];
  const orphaned = orphans.length;
  return { ...figures, orphaned, downstreamDouble, holds: violations.length === 0, violations };
}
