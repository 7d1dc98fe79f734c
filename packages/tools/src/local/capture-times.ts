import { serializeEnvelope } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import type { TrafficMessage, TrafficPhase } from './traffic.ts';

/**
 * What a replay did with the times a capture carries. A consumer refuses an envelope stored longer
 * ago than its group's redrive horizon (`PAST_REDRIVE_HORIZON`): right for production, where such a
 * copy may find its dedup record expired, but a replay of captured traffic means "this traffic,
 * arriving now". So by default every store and born time (and the CloudEvent's `time`) moves by one
 * shift that makes the capture's latest time the moment its replay begins: spacing and order stay
 * as captured. `as-captured` keeps them (`--original-times`), to rehearse the horizon itself.
 */
export interface CaptureTimes {
  readonly mode: 'rebased' | 'as-captured';
  /** Added to every time (0 as captured). */
  readonly shiftMs: number;
  /** Envelopes that carried a time. */
  readonly messages: number;
  /** The capture's earliest and latest time as captured, ms since the epoch (none when no envelope carried one). */
  readonly earliest?: number;
  readonly latest?: number;
}

/**
 * The phases with their envelopes' times moved onto `now`, as `mode` says. Bodies change before the
 * local bridge signs them, so each copy's signature covers the times the consumer reads. The
 * business body (`data.body`, a `paidAt` in it) is not touched: it is the producer's content, and
 * part of what a duplicate is compared on.
 */
export function withCaptureTimes(
  phases: readonly TrafficPhase[],
  mode: CaptureTimes['mode'],
  now: number,
): { phases: TrafficPhase[]; captureTimes: CaptureTimes } {
  const timed = phases
    .flatMap((p) => p.messages)
    .map((m) => (m.rejection === undefined ? timesOf(m.body) : []))
    .filter((times) => times.length > 0);
  const all = timed.flat();
  if (all.length === 0) return { phases: [...phases], captureTimes: { mode, shiftMs: 0, messages: 0 } };
  // A loop, not Math.min(...all): a large capture's times would overflow the argument list.
  let earliest = all[0]!;
  let latest = all[0]!;
  for (const t of all) {
    if (t < earliest) earliest = t;
    if (t > latest) latest = t;
  }
  const captureTimes = { mode, messages: timed.length, earliest, latest };
  if (mode === 'as-captured') return { phases: [...phases], captureTimes: { ...captureTimes, shiftMs: 0 } };
  const shiftMs = now - latest;
  const shifted = (m: TrafficMessage): TrafficMessage =>
    m.rejection === undefined ? { ...m, body: shiftedBody(m.body, shiftMs) } : m;
  return {
    phases: phases.map((p) => ({ ...p, messages: p.messages.map(shifted) })),
    captureTimes: { ...captureTimes, shiftMs },
  };
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The time fields of an envelope, where they are: the CloudEvent (the body, or an EventBridge
 * event's `detail`) has `time` and `data` with `bornTimestamp` and `storeTimestamp`; an EventBridge
 * event whose `detail` is the data has those two there, and the event its own `time`.
 */
function timeFieldsOf(json: unknown): Array<{ holder: Json; field: string; iso: boolean }> {
  if (!isObject(json)) return [];
  const fields: Array<{ holder: Json; field: string; iso: boolean }> = [];
  const add = (holder: unknown, field: string, iso: boolean) => {
    if (!isObject(holder)) return;
    const value = holder[field];
    if (iso ? typeof value === 'string' && !Number.isNaN(Date.parse(value)) : Number.isSafeInteger(value))
      fields.push({ holder, field, iso });
  };
  let event: unknown = json;
  if ('detail-type' in json && 'detail' in json) {
    add(json, 'time', true);
    event = json.detail;
  }
  const data = isObject(event) && 'specversion' in event ? event.data : event;
  if (data !== event) add(event, 'time', true);
  add(data, 'bornTimestamp', false);
  add(data, 'storeTimestamp', false);
  return fields;
}

function timesOf(body: string): number[] {
  return timeFieldsOf(JSON.parse(body)).map(({ holder, field, iso }) =>
    iso ? Date.parse(holder[field] as string) : Number(holder[field]),
  );
}

function shiftedBody(body: string, shiftMs: number): string {
  const json: unknown = JSON.parse(body);
  const fields = timeFieldsOf(json);
  if (fields.length === 0) return body;
  for (const { holder, field, iso } of fields)
    holder[field] = iso
      ? new Date(Date.parse(holder[field] as string) + shiftMs).toISOString()
      : (holder[field] as number) + shiftMs;
  return serializeEnvelope(json as object);
}
