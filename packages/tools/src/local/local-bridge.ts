import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { ConsumerGroupDefinition } from '@rocketmq-lambda/runtime/config/index.ts';
import { type MessageGroupSource, messageGroupOf } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import type { LocalSigningKey } from './local-signing-key.ts';
import type { LocalResources } from './provision.ts';
import type { QueueOccupancy } from './queue-occupancy.ts';
import { TopicRoutes } from './topic-routes.ts';
import type { TrafficMessage } from './traffic.ts';

export interface BridgeAccount {
  /** Copies put on source queues, per group (redeliveries included). */
  enqueued: Record<string, number>;
  /** Extra copies the bridge delivered (`--redeliver`). */
  redelivered: Record<string, number>;
  /**
   * Copies for a FIFO queue that SQS deduplicates (same msgId within five minutes): they never
   * reached the queue, so they are neither enqueued nor lost.
   */
  deduplicated: Record<string, number>;
  /** Messages whose topic no selected group subscribes to. */
  unrouted: number;
  /** msgIds of which the bridge injected an extra copy. */
  redeliveredMsgIds: Set<string>;
  /** Copies SQS refused (too large, characters SQS does not allow). */
  rejected: Array<{ group: string; line?: number; msgId?: string; reason: string }>;
}

/**
 * The RocketMQ → SQS bridge of the local run: each message to the source queue of every group its `TopicRoutes` name,
 * signed with the run's key as the deployed bridge signs with the stage's. The run accounts for the message as the
 * traffic gave it; only the copy on the queue carries the signature.
 */
export class LocalBridge {
  sent = 0;
  /** Copies never put on a queue because the run stopped first. */
  readonly unsent: Array<{ group: string; body: string }> = [];
  readonly account: BridgeAccount;
  private readonly routes: TopicRoutes;
  private readonly messageGroupFrom: Map<string, MessageGroupSource | undefined>;
  /** group → deduplication id → when a copy with it was last put on the group's FIFO queue. */
  private readonly fifoSends = new Map<string, Map<string, number>>();

  constructor(
    private readonly sqs: SQSClient,
    private readonly resources: LocalResources,
    groups: readonly ConsumerGroupDefinition[],
    private readonly redeliverProbability: number,
    private readonly random: () => number,
    private readonly maxQueueBacklog: number,
    private readonly occupancy: QueueOccupancy,
    private readonly deadline: number,
    private readonly signing: LocalSigningKey,
  ) {
    const zeroes = () => Object.fromEntries(groups.map((g) => [g.group, 0]));
    this.account = {
      enqueued: zeroes(),
      redelivered: zeroes(),
      deduplicated: zeroes(),
      unrouted: 0,
      rejected: [],
      redeliveredMsgIds: new Set(),
    };
    this.routes = new TopicRoutes(groups);
    this.messageGroupFrom = new Map(groups.map((g) => [g.group, g.messageGroupFrom]));
  }

  /**
   * Sends the phase's messages in order, each at its `atMs`; redelivered copies follow a few
   * messages later. False if the run's deadline passed while the bridge waited for room.
   */
  async send(messages: readonly TrafficMessage[]): Promise<boolean> {
    const phaseStart = Date.now();
    const ordered = [...messages]
      .map((m, i) => ({ m, i }))
      .sort((a, b) => (a.m.atMs ?? 0) - (b.m.atMs ?? 0) || a.i - b.i)
      .map((x) => x.m);
    const later = new Map<number, Array<{ group: string; message: TrafficMessage }>>();
    const buffers = new Map<string, TrafficMessage[]>();
    const flush = async (group?: string) => {
      for (const [g, buffer] of buffers) {
        if (group && g !== group) continue;
        if (buffer.length > 0) await this.enqueue(g, buffer.splice(0));
      }
    };
    const add = async (group: string, message: TrafficMessage) => {
      const buffer = buffers.get(group) ?? [];
      buffers.set(group, buffer);
      buffer.push(message);
      if (buffer.length === 10 || buffer.reduce((n, b) => n + b.body.length, 0) > 200_000) await flush(group);
    };
    for (let i = 0; i < ordered.length; i++) {
      if (Date.now() >= this.deadline) {
        await flush();
        this.skip(ordered.slice(i));
        for (const copies of later.values())
          for (const copy of copies) this.unsent.push({ group: copy.group, body: copy.message.body });
        return false;
      }
      const message = ordered[i]!;
      const wait = phaseStart + (message.atMs ?? 0) - Date.now();
      if (wait > 0) {
        await flush();
        await sleep(wait);
      }
      const targets = this.routes.targetsOf(message);
      if (targets.length === 0) this.account.unrouted++;
      for (const group of targets) {
        await add(group, message);
        if (this.redeliverProbability > 0 && this.random() < this.redeliverProbability) {
          const at = i + 1 + Math.floor(this.random() * 20);
          later.set(at, [
            ...(later.get(at) ?? []),
            { group, message: { ...message, label: 'bridge redelivery (same msgId)' } },
          ]);
          this.account.redelivered[group]!++;
          if (message.msgId) this.account.redeliveredMsgIds.add(message.msgId);
        }
      }
      for (const copy of later.get(i) ?? []) await add(copy.group, copy.message);
      later.delete(i);
      this.sent++;
    }
    for (const copies of later.values()) for (const copy of copies) await add(copy.group, copy.message);
    await flush();
    return true;
  }

  /** Records messages the run will not send (it gave up before their phase). */
  skip(messages: readonly TrafficMessage[]): void {
    for (const message of messages)
      for (const group of this.routes.targetsOf(message)) this.unsent.push({ group, body: message.body });
  }

  private async enqueue(group: string, batch: TrafficMessage[]) {
    const fifo = this.resources.queues[group]!.fifo;
    const messages = fifo ? this.withoutDeduplicated(group, batch) : batch;
    if (messages.length === 0) return;
    // Past the deadline the run stops anyway; the copies still go out, so `sent` stays true to what SQS holds.
    while (this.occupancy.inQueue(group) >= this.maxQueueBacklog && Date.now() < this.deadline) await sleep(5);
    const { Successful = [], Failed = [] } = await this.sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: this.resources.queues[group]!.source.url,
        Entries: messages.map((m, i) => ({
          Id: String(i),
          MessageBody: this.signing.sign(m.body),
          // No DelaySeconds: SQS allows none per message on a FIFO queue, and the bridge sets none anyway.
          // As the bridge derives it for the group's FIFO route (catalogue `messageGroupFrom`).
          ...(fifo
            ? {
                MessageGroupId: m.orderingFacts
                  ? messageGroupOf(m.orderingFacts, this.messageGroupFrom.get(group))
                  : UNREADABLE_GROUP,
                MessageDeduplicationId: deduplicationIdOf(m),
              }
            : {}),
        })),
      }),
    );
    for (const f of Failed) {
      const m = messages[Number(f.Id)]!;
      this.account.rejected.push({
        group,
        line: m.line,
        msgId: m.msgId,
        reason: `${f.Code ?? 'error'}: ${f.Message ?? 'SQS refused the message'}`,
      });
    }
    this.occupancy.sent(
      group,
      Successful.map((s) => ({ messageId: s.MessageId!, body: messages[Number(s.Id)]!.body })),
    );
    this.account.enqueued[group]! += messages.length - Failed.length;
  }

  /**
   * Drops the copies SQS FIFO would deduplicate: a deduplication id sent to the group within
   * five minutes. The bridge decides this itself rather than reading SQS's answer: the emulator
   * answers a deduplicated send with a fresh MessageId that no receive will ever return (the
   * run would wait for it forever; docs/local-run.md).
   */
  private withoutDeduplicated(group: string, batch: readonly TrafficMessage[]): TrafficMessage[] {
    const sends = this.fifoSends.get(group) ?? this.fifoSends.set(group, new Map()).get(group)!;
    const now = Date.now();
    return batch.filter((m) => {
      const id = deduplicationIdOf(m);
      const last = sends.get(id);
      if (last !== undefined && now - last < FIFO_DEDUPLICATION_WINDOW_MS) {
        this.account.deduplicated[group]!++;
        return false;
      }
      sends.set(id, now);
      return true;
    });
  }
}

/** SQS FIFO drops a message whose deduplication id it accepted in the last five minutes. */
const FIFO_DEDUPLICATION_WINDOW_MS = 5 * 60_000;

/** A body that is not an envelope has no key to order by: its own message group, so it holds back no real one. */
const UNREADABLE_GROUP = 'unreadable';

/**
 * The RocketMQ msgId, as the real bridge sets it; a body that is not an envelope has none, so its content stands in.
 */
function deduplicationIdOf(message: TrafficMessage): string {
  return message.msgId ?? createHash('sha256').update(message.body).digest('hex');
}
