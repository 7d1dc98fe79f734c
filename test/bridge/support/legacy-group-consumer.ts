import { format } from 'node:util';
import { Consumer } from 'ali-ons';

const SILENT = { info() {}, warn() {}, error() {}, debug() {} };
const NO_ADDRESS_SERVER = { request: () => Promise.reject(new Error('name server given')) };

/**
 * A consumer of `group` as its previous (legacy) consumers ran it on 4.x: ali-ons in clustering
 * mode, whose failed messages the client sends back to `%RETRY%<group>`. `onSentBack` runs once per
 * send-back the client logs. Subscribe it, and close it to commit its offsets.
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
