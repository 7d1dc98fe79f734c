import {
  type Endpoints,
  type MessageQueue,
  MessageView,
  SimpleConsumer,
  type SimpleConsumerOptions,
  StatusChecker,
} from 'rocketmq-client-nodejs';
// Generated CommonJS, whose exports Node's ESM loader cannot list: values come through the default import.
import definitionPb, {
  type Message as MessagePB,
  type Settings as SettingsPB,
  type Status,
} from 'rocketmq-client-nodejs/proto/apache/rocketmq/v2/definition_pb.js';
import servicePb, { type ReceiveMessageRequest } from 'rocketmq-client-nodejs/proto/apache/rocketmq/v2/service_pb.js';
import { describeError } from './forward-target.ts';
import { groupRetryRefusal } from './group-retry-policy.ts';
import type { AckResult, ReceivedMessage } from './types.ts';

/**
 * A SimpleConsumer that also keeps the broker facts the client's `MessageView` drops (store host,
 * store time, queue id, broker name). They are in the gRPC response, so the one receive call is
 * re-implemented here (the library's own loop, plus a side table keyed by the view) instead of
 * parsing them back out of the receipt handle's undocumented text format.
 */
export class RouteConsumer extends SimpleConsumer {
  readonly #facts = new WeakMap<MessageView, Omit<ReceivedMessage, 'handle'>>();
  readonly #invisibleDurationMs: number;
  readonly #batchSize: number;
  /** The group's `retryMaxTimes + 1`, from the settings the proxy sends at start and every 5 minutes. */
  #maxDeliveryAttempts: number | undefined;

  constructor(options: SimpleConsumerOptions & { invisibleDurationMs: number; batchSize: number }) {
    super(options);
    this.#invisibleDurationMs = options.invisibleDurationMs;
    this.#batchSize = options.batchSize;
  }

  /**
   * Why the group's retry limit could park a message the bridge failed to forward in `%DLQ%<group>`
   * (see group-retry-policy.ts), or `undefined`; known once `startup()` resolved.
   */
  retryPolicyRefusal(): string | undefined {
    return groupRetryRefusal(this.consumerGroup, this.#maxDeliveryAttempts, this.#invisibleDurationMs);
  }

  override onSettingsCommand(endpoints: Endpoints, settings: SettingsPB): void {
    this.#maxDeliveryAttempts = settings.hasBackoffPolicy() ? settings.getBackoffPolicy()!.getMaxAttempts() : undefined;
    // At start the refusal stops the route (route-source.ts); later, a limit lowered on a running group is said here.
    const refusal = this.isRunning() ? this.retryPolicyRefusal() : undefined;
    if (refusal) this.logger.error('%s', refusal);
    super.onSettingsCommand(endpoints, settings);
  }

  /**
   * Acks in one request per topic and proxy endpoint: an `AckMessageRequest` carries many
   * entries, and the proxy answers each entry with its own status (`MULTIPLE_RESULTS` overall when
   * they differ). The library's `ack` sends one request per message.
   */
  async ackReceived(messages: readonly ReceivedMessage[]): Promise<AckResult[]> {
    const results: AckResult[] = [];
    const requests = new Map<string, { view: MessageView; index: number }[]>();
    messages.forEach((message, index) => {
      if (!(message.handle instanceof MessageView)) {
        results[index] = {
          ok: false,
          reason: describeError(new ForeignMessageError('RocketMQ 5 consumer', message.msgId)),
        };
        return;
      }
      const key = `${message.handle.endpoints.facade} ${message.handle.topic}`;
      requests.set(key, [...(requests.get(key) ?? []), { view: message.handle, index }]);
    });
    await Promise.all(
      [...requests.values()].map(async (entries) => {
        const outcomes = await this.#ackInOneRequest(entries.map((e) => e.view));
        entries.forEach((entry, i) => {
          results[entry.index] = outcomes[i]!;
        });
      }),
    );
    return results;
  }

  async #ackInOneRequest(views: readonly MessageView[]): Promise<AckResult[]> {
    const first = views[0]!;
    const request = new servicePb.AckMessageRequest()
      .setGroup(new definitionPb.Resource().setName(this.consumerGroup))
      .setTopic(new definitionPb.Resource().setName(first.topic));
    for (const view of views) request.addEntries().setMessageId(view.messageId).setReceiptHandle(view.receiptHandle);
    let entries: Map<string, Status.AsObject | undefined>;
    try {
      const response = (
        await this.rpcClientManager.ackMessage(first.endpoints, request, this.requestTimeout)
      ).toObject();
      if (response.status?.code !== definitionPb.Code.MULTIPLE_RESULTS) StatusChecker.check(response.status);
      entries = new Map(response.entriesList.map((entry) => [entry.messageId, entry.status]));
    } catch (err) {
      return views.map(() => ({ ok: false, reason: describeError(err) }));
    }
    return views.map((view): AckResult => {
      const status = entries.get(view.messageId);
      if (status?.code === definitionPb.Code.OK) return { ok: true };
      return {
        ok: false,
        reason: status ? `${status.code}: ${status.message}` : 'the proxy answered nothing for the entry',
      };
    });
  }

  /** Long-polls once; an empty array means nothing arrived within the await duration. */
  async receiveMessages(): Promise<ReceivedMessage[]> {
    const views = await this.receive(this.#batchSize, this.#invisibleDurationMs);
    return views.map((view) => ({ handle: view, ...this.#facts.get(view)! }));
  }

  protected override async receiveMessage(
    request: ReceiveMessageRequest,
    mq: MessageQueue,
    awaitDuration: number,
  ): Promise<MessageView[]> {
    const responses = await this.rpcClientManager.receiveMessage(
      mq.broker.endpoints,
      request,
      this.requestTimeout + awaitDuration,
    );
    let status: Status.AsObject | undefined;
    let transportDeliveryTimestamp: Date | undefined;
    const messages: MessagePB[] = [];
    for (const response of responses) {
      if (response.hasStatus()) status = response.getStatus()!.toObject();
      else if (response.hasMessage()) messages.push(response.getMessage()!);
      else if (response.hasDeliveryTimestamp()) transportDeliveryTimestamp = response.getDeliveryTimestamp()!.toDate();
    }
    StatusChecker.check(status);
    return messages.map((message) => {
      const view = new MessageView(message, mq, transportDeliveryTimestamp);
      this.#facts.set(view, factsOf(view, message, mq));
      return view;
    });
  }
}

/** A message handed to a source that did not receive it: a wiring mistake, never retried. */
export class ForeignMessageError extends Error {
  override readonly name = 'ForeignMessageError';
  constructor(source: string, msgId: string) {
    super(`${source} cannot ack message ${msgId}: another source received it`);
  }
}

function factsOf(view: MessageView, message: MessagePB, mq: MessageQueue): Omit<ReceivedMessage, 'handle'> {
  const system = message.getSystemProperties()!;
  return {
    msgId: view.messageId,
    topic: view.topic,
    tag: view.tag || undefined,
    keys: view.keys,
    messageGroup: view.messageGroup || undefined,
    body: view.body,
    userProperties: Object.fromEntries(view.properties),
    bornHost: view.bornHost,
    bornTimestamp: view.bornTimestamp?.getTime(),
    storeHost: system.getStoreHost() || undefined,
    storeTimestamp: system.getStoreTimestamp()?.toDate().getTime(),
    ...(view.deliveryTimestamp ? { deliveryTimestamp: view.deliveryTimestamp.getTime() } : {}),
    queueId: system.getQueueId(),
    queueOffset: view.offset,
    brokerName: mq.broker.name || undefined,
    reconsumeTimes: 0,
    ...(system.getTraceContext() ? { traceContext: system.getTraceContext() } : {}),
  };
}
