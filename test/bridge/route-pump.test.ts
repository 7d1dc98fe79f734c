import { Logger } from '@aws-lambda-powertools/logger';
import { describe, expect, it } from 'vitest';
import { RouteMetrics } from '../../bridge/bridge-metrics.ts';
import type { ReceivedMessage } from '../../bridge/route-consumer.ts';
import type { BatchOutcome, RouteForwarder } from '../../bridge/route-forwarder.ts';
import { PumpState, RoutePump, type MessageSource } from '../../bridge/route-pump.ts';
import { receivedMessage } from './support/received-messages.ts';

const logger = new Logger({ serviceName: 'bridge-test', logLevel: 'SILENT' });

function deferred<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** A scripted RocketMQ stand-in: each receive takes the next scripted answer, or waits (a long poll). */
function scriptedSource(answers: ReceivedMessage[][]) {
  const events: string[] = [];
  const hang = deferred<ReceivedMessage[]>();
  const source: MessageSource = {
    start: async () => void events.push('start'),
    receive: () => {
      events.push('receive');
      const next = answers.shift();
      return next ? Promise.resolve(next) : hang.promise;
    },
    ack: async (messages) => messages.map(() => ({ ok: true as const })),
    stop: async () => {
      events.push('consumer stopped');
      hang.resolve([receivedMessage({ keys: ['arrived-after-stop'] })]);
    },
  };
  return { source, events };
}

describe('route pump', () => {
  it('drains on stop: the forward in flight finishes, the long poll is abandoned, then the consumer closes', async () => {
    // Prepare
    const { source, events } = scriptedSource([[receivedMessage()]]);
    const forwardGate = deferred<void>();
    const forwarded: string[][] = [];
    const forwarder = {
      forwardBatch: async (messages: readonly ReceivedMessage[]): Promise<BatchOutcome> => {
        events.push('forward started');
        await forwardGate.promise;
        forwarded.push(messages.map((m) => m.keys[0]!));
        events.push('forward finished');
        return { acked: messages.map((m) => m.msgId), deadLettered: [], notAcked: [] };
      },
    } as unknown as RouteForwarder;
    const pump = new RoutePump('G', source, forwarder, new RouteMetrics('G', 'T'), logger);
    await pump.start();
    await new Promise((r) => setTimeout(r, 10));

    // Act
    const stopped = pump.stop();
    expect(pump.state).toBe(PumpState.Stopping);
    forwardGate.resolve();
    await stopped;

    // Assess
    expect(pump.state).toBe(PumpState.Stopped);
    expect(events).toEqual(['start', 'receive', 'forward started', 'forward finished', 'consumer stopped']);
    expect(forwarded).toEqual([['SO1']]);
  });

  it('backs off and keeps going when a receive fails', async () => {
    const metrics = new RouteMetrics('G', 'T');
    let calls = 0;
    const source: MessageSource = {
      start: async () => undefined,
      receive: async () => {
        calls++;
        if (calls === 1) throw new Error('proxy unavailable');
        return calls === 2 ? [receivedMessage()] : new Promise<ReceivedMessage[]>(() => undefined);
      },
      ack: async (messages) => messages.map(() => ({ ok: true as const })),
      stop: async () => undefined,
    };
    const batches: number[] = [];
    const forwarder = {
      forwardBatch: async (m: readonly ReceivedMessage[]) => {
        batches.push(m.length);
        return { acked: [], deadLettered: [], notAcked: [] };
      },
    } as unknown as RouteForwarder;
    const pump = new RoutePump('G', source, forwarder, metrics, logger);
    await pump.start();
    await new Promise((r) => setTimeout(r, 800));
    await pump.stop();
    expect(metrics.stats.receiveFailed).toBe(1);
    expect(batches).toEqual([1]);
  });
});
