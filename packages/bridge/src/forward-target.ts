/**
 * Where a route's envelopes go: an SQS queue or an EventBridge bus. Both accept batches of ten
 * and answer entry by entry, so a target reports one result per message and the caller acks
 * exactly the ones that landed.
 */
export interface OutboundMessage {
  /** Unique within one `forward` call; results refer to it. */
  readonly id: string;
  readonly body: string;
  /** FIFO only: the RocketMQ message group (or the topic when the producer set none). */
  readonly messageGroupId?: string;
  /** FIFO only: the RocketMQ msgId, so a redelivery inside SQS's 5-minute window is dropped by SQS. */
  readonly deduplicationId?: string;
  /** The broker's store time, the event's time on EventBridge. */
  readonly time?: Date;
  /** X-Ray back end only: the forward span's context in X-Ray's format (SQS `AWSTraceHeader`, EventBridge `TraceHeader`). */
  readonly awsTraceHeader?: string;
}

export type ForwardResult =
  | { readonly id: string; readonly ok: true }
  | { readonly id: string; readonly ok: false; readonly reason: string };

export interface ForwardTarget {
  /** Bytes this message counts for against the target's per-message and per-batch limits. */
  sizeOf(message: OutboundMessage): number;
  forward(messages: readonly OutboundMessage[]): Promise<ForwardResult[]>;
}

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
