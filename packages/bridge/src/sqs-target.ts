import { SendMessageBatchCommand, type SendMessageBatchCommandOutput, type SQSClient } from '@aws-sdk/client-sqs';
import { describeError, failAll, packBatches } from './forward-target.ts';
import { sendInGroupOrder } from './group-ordered-sending.ts';
import type { ForwardResult, ForwardTarget, OutboundMessage } from './types.ts';

/**
 * The bridge's SQS client settings, for its hot call.
 *
 * `md5: false`: the SDK otherwise computes the MD5 of every body sent and compares it with the one
 * SQS returns, about 10–35 µs of CPU per message. What it guards against is a body changed between
 * the SDK and SQS: on the wire TLS already refuses a changed byte, and a result is still checked
 * entry by entry (`Successful`/`Failed` by id, below), so a message SQS did not take is never
 * acked. The risk left is a body SQS stored differently from what it was sent without saying so;
 * the envelope's signature (consumers that require it refuse a changed envelope) covers that where
 * signing is on.
 *
 * `cacheMiddleware: true`: the SDK resolves a command's middleware stack on every `send` unless
 * told to keep the first resolution per command class. The bridge adds no middleware to a command
 * or, after its first send, to the client, so the kept stack is the one it would resolve again.
 * 8–13 µs of CPU per message, 7–11 % of the call (`npm run bench:sqs-call`).
 */
export const BRIDGE_SQS_CLIENT_SETTINGS = { md5: false, cacheMiddleware: true } as const;

/** Forwards envelopes as SQS message bodies with `SendMessageBatch`. */
export class SqsTarget implements ForwardTarget {
  constructor(
    private readonly sqs: SQSClient,
    private readonly queueUrl: string,
    private readonly maxBatchBytes: number,
    /** FIFO queues: in waves of one message per group, so nothing of a group lands after its failed message. */
    private readonly fifo = false,
  ) {}

  sizeOf(message: OutboundMessage): number {
    return Buffer.byteLength(message.body, 'utf8');
  }

  async forward(messages: readonly OutboundMessage[]): Promise<ForwardResult[]> {
    const sizeOf = (m: OutboundMessage) => this.sizeOf(m);
    const send = (batch: OutboundMessage[]) => this.#sendBatch(batch);
    if (this.fifo) return sendInGroupOrder(messages, send, sizeOf, this.maxBatchBytes);
    return (await Promise.all(packBatches(messages, sizeOf, this.maxBatchBytes).map(send))).flat();
  }

  async #sendBatch(batch: OutboundMessage[]): Promise<ForwardResult[]> {
    // Entry ids must be unique per request and match [A-Za-z0-9_-]{1,80}; the position is enough.
    const entries = batch.map((m, index) => ({
      Id: `e${index}`,
      MessageBody: m.body,
      ...(m.messageGroupId !== undefined ? { MessageGroupId: m.messageGroupId } : {}),
      ...(m.deduplicationId !== undefined ? { MessageDeduplicationId: m.deduplicationId } : {}),
      ...(m.awsTraceHeader !== undefined
        ? { MessageSystemAttributes: { AWSTraceHeader: { DataType: 'String', StringValue: m.awsTraceHeader } } }
        : {}),
    }));
    let response: SendMessageBatchCommandOutput;
    try {
      response = await this.sqs.send(new SendMessageBatchCommand({ QueueUrl: this.queueUrl, Entries: entries }));
    } catch (err) {
      return failAll(batch, describeError(err));
    }
    const succeeded = new Set((response.Successful ?? []).map((s) => s.Id));
    const failed = new Map(
      (response.Failed ?? []).map((f) => [f.Id, `${f.Code ?? 'Failed'}: ${f.Message ?? ''}`.trim()]),
    );
    return batch.map((m, index): ForwardResult => {
      const id = `e${index}`;
      if (succeeded.has(id)) return { id: m.id, ok: true };
      return { id: m.id, ok: false, reason: failed.get(id) ?? 'SQS reported no result for the entry' };
    });
  }
}
