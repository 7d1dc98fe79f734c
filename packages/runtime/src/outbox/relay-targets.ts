import { type EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { EVENTBRIDGE_MAX_ENTRY_BYTES, eventBridgeEntryBytes } from '../aws/index.ts';
import { BRIDGE_EVENT_SOURCE_PREFIX, type OutboxItem, type RelayTargets } from '../config/index.ts';
import { ROCKETMQ_EVENT_TYPE, TagExpression } from '../rocketmq/index.ts';
import {
  classifyTargetError,
  NoRelayTargetError,
  type RelayError,
  TargetRefusedError,
  TargetUnavailableError,
} from './relay-errors.ts';
import { relayClusterOf } from './relayed-envelope.ts';

export type RelayTarget = RelayTargets[string];

/** What sending needs: the clients, and the stage's targets by topic (`OUTBOX_TARGETS`). */
export interface RelaySenderOptions {
  readonly sqs: SQSClient;
  readonly eventBridge: EventBridgeClient;
  readonly targets: RelayTargets;
}

/** What one item's send cost. */
export interface RelaySend {
  /** How many requests the send took (queues written, PutEvents calls). */
  readonly requests: number;
}

/**
 * Sends one signed envelope to its topic's target, as the bridge would have delivered it:
 * - `sqs`: a copy on every subscribing queue whose tag expression takes the tag (a FIFO queue with
 *   MessageGroupId = the message group, else the business key, and MessageDeduplicationId = the event id);
 * - `eventbridge`: one PutEvents entry on the bus, source `rocketmq.outbox-<group>` (the groups' rules
 *   take sources starting with `rocketmq.`), detail-type the envelope's type, time the commit;
 * - `rocketmq`: the bridge's outbound queue, which produces it to RocketMQ.
 * Throws a `RelayError`: a copy that did not land fails the whole send (copies that did are sent again
 * with the record, and dedup on the event id absorbs them).
 */
export class RelaySender {
  /** Each subscribing queue's tag expression, parsed once rather than for every item. */
  readonly #filters = new Map<string, TagExpression>();

  constructor(private readonly options: RelaySenderOptions) {}

  async send(item: OutboxItem, body: string): Promise<RelaySend> {
    const target = this.options.targets[item.topic];
    if (target === undefined)
      throw new NoRelayTargetError(`topic ${item.topic} has no target in OUTBOX_TARGETS for this relay`);
    switch (target.kind) {
      case 'sqs':
        return this.#sendToQueues(item, body, target.queues);
      case 'eventbridge':
        return this.#putEvent(item, body, target.eventBusName);
      case 'rocketmq':
        await this.#sendMessage(item, body, target.queueUrl);
        return { requests: 1 };
    }
  }

  async #sendToQueues(
    item: OutboxItem,
    body: string,
    queues: Extract<RelayTarget, { kind: 'sqs' }>['queues'],
  ): Promise<RelaySend> {
    const subscribed = queues.filter((q) => this.#filterOf(q.tagExpression).matches(item.tag));
    const sent = await Promise.allSettled(subscribed.map((q) => this.#sendMessage(item, body, q.url)));
    const failures = sent.flatMap((s) => (s.status === 'rejected' ? [s.reason as RelayError] : []));
    // One queue that will take it later is worth a retry of all (the others dedup the copy); only when
    // every failed copy was refused is the message refused.
    const transient = failures.find((f) => f.classification === 'transient');
    if (transient) throw transient;
    if (failures.length > 0) throw failures[0];
    return { requests: subscribed.length };
  }

  #filterOf(expression: string): TagExpression {
    const known = this.#filters.get(expression);
    if (known) return known;
    const filter = TagExpression.parse(expression);
    this.#filters.set(expression, filter);
    return filter;
  }

  async #sendMessage(item: OutboxItem, body: string, queueUrl: string): Promise<void> {
    const fifo = queueUrl.endsWith('.fifo');
    try {
      await this.options.sqs.send(
        new SendMessageCommand({
          QueueUrl: queueUrl,
          MessageBody: body,
          ...(fifo
            ? { MessageGroupId: item.messageGroup ?? item.businessKey, MessageDeduplicationId: item.eventId }
            : {}),
        }),
      );
    } catch (error) {
      const e = error as { name?: string; message?: string };
      throw classifyTargetError(e.name, `${e.message ?? String(error)} (${queueUrl})`, error);
    }
  }

  async #putEvent(item: OutboxItem, body: string, eventBusName: string): Promise<RelaySend> {
    const source = `${BRIDGE_EVENT_SOURCE_PREFIX}${relayClusterOf(item.group)}`;
    const size = eventBridgeEntryBytes(source, ROCKETMQ_EVENT_TYPE, body);
    if (size > EVENTBRIDGE_MAX_ENTRY_BYTES)
      throw new TargetRefusedError(
        `the event is ${size} bytes; EventBridge takes at most ${EVENTBRIDGE_MAX_ENTRY_BYTES} per entry`,
      );
    let entry: { EventId?: string; ErrorCode?: string; ErrorMessage?: string } | undefined;
    try {
      const response = await this.options.eventBridge.send(
        new PutEventsCommand({
          Entries: [
            {
              EventBusName: eventBusName,
              Source: source,
              DetailType: ROCKETMQ_EVENT_TYPE,
              Detail: body,
              Time: new Date(item.committedAt),
            },
          ],
        }),
      );
      entry = response.Entries?.[0];
    } catch (error) {
      const e = error as { name?: string; message?: string };
      throw classifyTargetError(e.name, e.message ?? String(error), error);
    }
    if (entry?.EventId && !entry.ErrorCode) return { requests: 1 };
    if (entry?.ErrorCode) throw classifyTargetError(entry.ErrorCode, entry.ErrorMessage ?? '');
    throw new TargetUnavailableError('EventBridge reported no result for the entry');
  }
}
