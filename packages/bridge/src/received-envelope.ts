import { buildEnvelope, type Envelope, ROCKETMQ_EVENT_TYPE } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import type { ReceivedMessage } from './types.ts';

export { type Envelope, serializeEnvelope } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
export const ENVELOPE_TYPE = ROCKETMQ_EVENT_TYPE;

/**
 * The envelope of a message this bridge received, from either protocol: the broker's facts
 * mapped onto the project's one envelope writer (`packages/runtime/src/rocketmq/envelope-writer.ts`), which the
 * consumers' parser reads. `reconsumeTimes` counts consumer failures only, never the bridge's own
 * redeliveries (see `ReceivedMessage.reconsumeTimes`).
 */
export function envelopeOf(
  message: ReceivedMessage,
  clusterName: string,
  now: () => Date = () => new Date(),
  hop: { traceparent: string; tracestate?: string } | undefined = undefined,
): Envelope {
  return buildEnvelope(
    {
      topic: message.topic,
      msgId: message.msgId,
      offsetMsgId: message.offsetMsgId,
      tags: message.tag,
      keys: message.keys,
      body: message.body,
      userProperties: message.userProperties,
      bornHost: message.bornHost,
      bornTimestamp: message.bornTimestamp,
      storeHost: message.storeHost,
      storeTimestamp: message.storeTimestamp,
      deliveryTimestamp: message.deliveryTimestamp,
      delayTimeLevel: message.delayTimeLevel,
      queueId: message.queueId,
      queueOffset: message.queueOffset,
      brokerName: message.brokerName,
      messageGroup: message.messageGroup,
      reconsumeTimes: message.reconsumeTimes,
      cluster: clusterName,
      traceContext: message.traceContext,
      ...hop,
    },
    () => now().getTime(),
  );
}
