import { format } from 'node:util';
import { Consumer, type MessageQueue } from 'ali-ons';
import type { BrokerProbe } from './broker-probe.ts';

const SILENT = { info() {}, warn() {}, error() {}, debug() {} };
const NO_ADDRESS_SERVER = { request: () => Promise.reject(new Error('name server given')) };

/**
 * A consumer of `group` as its previous (legacy) consumers ran it on 4.x: ali-ons in clustering
 * mode, whose failed messages the client sends back to `%RETRY%<group>`. `onSentBack` runs once per
 * send-back the client logs. Subscribe it, and close it with `closeLegacyConsumer`.
 */
export function legacyGroupConsumer(namesrvAddr: string, group: string, onSentBack: () => void): Consumer {
  const consumer = new Consumer({
    nameSrv: namesrvAddr,
    httpclient: NO_ADDRESS_SERVER,
    consumerGroup: group,
    logger: {
      ...SILENT,
      info: (...args: unknown[]) => {
        if (format(...args).includes('consumerSendMessageBack success')) onSentBack();
      },
    },
  });
  consumer.on('error', () => undefined);
  return consumer;
}

/** ali-ons' consumer state read here: the queues it holds and the offsets it has consumed up to. */
interface ConsumerInternals {
  readonly _processQueueTable: Map<string, { readonly messageQueue: MessageQueue }>;
  readonly _offsetStore: { readonly offsetTable: Map<string, number> };
}

/**
 * Closes a legacy consumer, and makes sure the broker keeps the offsets it had consumed up to, as
 * it would for a legacy consumer that had run for a while. On closing ali-ons commits every
 * queue's offset one-way and all at once; for a group that never committed on the topic before,
 * those are first commits, and the 4.7.1 broker may keep only one of several first commits it
 * handles at once (see `BrokerProbe.commitOffsets`). A consumer that went on running would commit
 * again 5 s later; this one is gone, so the offsets are sent again until the broker has them.
 * Otherwise a queue whose commit was lost starts over at its first message for the group's next
 * consumer, and a message the legacy consumer sent back arrives a second time as its original.
 */
export async function closeLegacyConsumer(consumer: Consumer, probe: BrokerProbe, brokerAddr: string): Promise<void> {
  const internals = consumer as unknown as ConsumerInternals;
  const consumed = new Map<string, Record<number, number>>();
  for (const [key, { messageQueue }] of internals._processQueueTable) {
    const offset = internals._offsetStore.offsetTable.get(key);
    // ali-ons commits an offset of 0 as -1, "none": nothing was consumed there.
    if (offset === undefined || offset <= 0) continue;
    consumed.set(messageQueue.topic, { ...consumed.get(messageQueue.topic), [messageQueue.queueId]: offset });
  }
  await consumer.close();
  for (const [topic, offsets] of consumed)
    await probe.commitOffsets(brokerAddr, consumer.consumerGroup, topic, offsets);
}
