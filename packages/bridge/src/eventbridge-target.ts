import { type EventBridgeClient, PutEventsCommand, type PutEventsCommandOutput } from '@aws-sdk/client-eventbridge';
import { eventBridgeEntryBytes } from '@rocketmq-lambda/runtime/aws/index.ts';
import { describeError, failAll, packBatches } from './forward-target.ts';
import { ENVELOPE_TYPE } from './received-envelope.ts';
import type { ForwardResult, ForwardTarget, OutboundMessage } from './types.ts';

/** Forwards envelopes as EventBridge events (`detail` = the CloudEvent) with `PutEvents`. */
export class EventBridgeTarget implements ForwardTarget {
  constructor(
    private readonly eventBridge: EventBridgeClient,
    private readonly eventBusName: string,
    private readonly source: string,
    private readonly maxBatchBytes: number,
  ) {}

  /** EventBridge's own entry-size rule (`eventBridgeEntryBytes`). */
  sizeOf(message: OutboundMessage): number {
    return eventBridgeEntryBytes(this.source, ENVELOPE_TYPE, message.body);
  }

  async forward(messages: readonly OutboundMessage[]): Promise<ForwardResult[]> {
    const batches = packBatches(messages, (m) => this.sizeOf(m), this.maxBatchBytes);
    const results = await Promise.all(batches.map((batch) => this.#putBatch(batch)));
    return results.flat();
  }

  async #putBatch(batch: OutboundMessage[]): Promise<ForwardResult[]> {
    let response: PutEventsCommandOutput;
    try {
      response = await this.eventBridge.send(
        new PutEventsCommand({
          Entries: batch.map((m) => ({
            EventBusName: this.eventBusName,
            Source: this.source,
            DetailType: ENVELOPE_TYPE,
            Detail: m.body,
            ...(m.time ? { Time: m.time } : {}),
            ...(m.awsTraceHeader !== undefined ? { TraceHeader: m.awsTraceHeader } : {}),
          })),
        }),
      );
    } catch (err) {
      return failAll(batch, describeError(err));
    }
    // PutEvents answers in request order; an entry with an ErrorCode was not accepted.
    return batch.map((m, index): ForwardResult => {
      const entry = response.Entries?.[index];
      if (entry?.EventId && !entry.ErrorCode) return { id: m.id, ok: true };
      return {
        id: m.id,
        ok: false,
        reason: entry?.ErrorCode
          ? `${entry.ErrorCode}: ${entry.ErrorMessage ?? ''}`.trim()
          : 'EventBridge reported no result for the entry',
      };
    });
  }
}
