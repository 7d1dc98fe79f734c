/** What the two targets (sqs-target.ts, eventbridge-target.ts) share: packing batches and failing them whole. */
import type { ForwardResult, OutboundMessage } from './types.ts';

/** Both services cap a batch at ten entries and at the same byte limit as one message. */
export const MAX_BATCH_ENTRIES = 10;

/**
 * Greedy packing in arrival order, at most ten entries and `maxBytes` a batch. FIFO routes pack each wave of
 * group-ordered-sending.ts with it, never a batch holding two messages of one group.
 */
export function packBatches<T>(items: readonly T[], sizeOf: (item: T) => number, maxBytes: number): T[][] {
  const batches: T[][] = [];
  let current: T[] = [];
  let bytes = 0;
  for (const item of items) {
    const size = sizeOf(item);
    if (current.length > 0 && (current.length === MAX_BATCH_ENTRIES || bytes + size > maxBytes)) {
      batches.push(current);
      current = [];
      bytes = 0;
    }
    current.push(item);
    bytes += size;
  }
  if (current.length > 0) batches.push(current);
  return batches;
}

export function failAll(messages: readonly OutboundMessage[], reason: string): ForwardResult[] {
  return messages.map((m) => ({ id: m.id, ok: false, reason }));
}

export function describeError(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}
