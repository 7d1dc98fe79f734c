import { setTimeout as sleep } from 'node:timers/promises';
import { Logger } from '@aws-lambda-powertools/logger';
import { SQSClient } from '@aws-sdk/client-sqs';
import { parseEnvelope } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { describe, expect, it, vi } from 'vitest';
import { Bridge } from '../src/bridge.ts';
import { type BridgeRoute, parseBridgeConfig } from '../src/bridge-config.ts';
import { RouteMetrics } from '../src/bridge-metrics.ts';
import { DeadLetterQueue } from '../src/dead-letter-queue.ts';
import { type BatchOutcome, RouteForwarder } from '../src/route-forwarder.ts';
import { PumpState, RoutePump } from '../src/route-pump.ts';
import type { ForwardTarget, MessageSource, OutboundMessage, ReceivedMessage } from '../src/types.ts';
import { receivedMessage } from './support/received-messages.ts';

/**
 * The pump without a broker: scripted sources and forwarders, so each test can hold a receive or a
 * forward open and look at what else is in flight at that moment.
 */
const logger = new Logger({ serviceName: 'bridge-test', logLevel: 'SILENT' });

/**
 * A RocketMQ stand-in: each receive takes the next scripted answer, or long-polls until stop. It
 * counts receives outstanding and records what happened, in order.
 */
function scriptedSource(answers: ReceivedMessage[][] = []) {
  const events: string[] = [];
  const polls = new Set<PromiseWithResolvers<ReceivedMessage[]>>();
  let receives = 0;
  let outstanding = 0;
  let maxOutstanding = 0;
  const source: MessageSource = {
    start: async () => void events.push('start'),
    receive: async () => {
      receives += 1;
      const next = answers.shift();
      if (next) return next;
      outstanding += 1;
      maxOutstanding = Math.max(maxOutstanding, outstanding);
      const poll = Promise.withResolvers<ReceivedMessage[]>();
      polls.add(poll);
      try {
        return await poll.promise;
      } finally {
        outstanding -= 1;
      }
    },
    ack: async (messages) => {
      events.push(...messages.map((m) => `acked ${m.keys[0]}`));
      return messages.map(() => ({ ok: true as const }));
    },
    stop: async () => {
      events.push('consumer stopped');
      // A long poll that answers after stop: the pump must not forward what it returns.
      for (const poll of polls) poll.resolve([receivedMessage({ keys: ['arrived-after-stop'] })]);
    },
  };
  return {
    source,
    events,
    receives: () => receives,
    maxOutstanding: () => maxOutstanding,
  };
}

/** A forwarder that holds every batch until the test opens its gate, and records how many it held at once. */
function gatedForwarder(events: string[]) {
  const gates: (() => void)[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const forwarder = {
    forwardBatch: async (messages: readonly ReceivedMessage[]): Promise<BatchOutcome> => {
      inFlight += 1;
      maxInFlight = Math.max(maxInFlight, inFlight);
      const names = messages.map((m) => m.keys[0]).join(',');
      events.push(`forward started ${names}`);
      await new Promise<void>((resolve) => gates.push(resolve));
      events.push(`forward finished ${names}`);
      inFlight -= 1;
      return { acked: messages.map((m) => m.msgId), deadLettered: [], notAcked: [] };
    },
  } as unknown as RouteForwarder;
  return {
    forwarder,
    waiting: () => gates.length,
    maxInFlight: () => maxInFlight,
    openAll: () => {
      for (const open of gates.splice(0)) open();
    },
  };
}

function pumpOf(
  source: MessageSource,
  forwarder: RouteForwarder,
  batchesInFlight: number,
  metrics = new RouteMetrics('G', 'T'),
) {
  return new RoutePump({ group: 'G', source, forwarder, metrics, logger, batchesInFlight });
}

const batchOf = (name: string) => [receivedMessage({ keys: [name] })];

async function until(condition: () => boolean, timeoutMs = 2_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await sleep(5);
  }
}

describe('route pump', () => {
  it('keeps at most batchesInFlight batches received and not yet acked, then takes the next ones as they finish', async () => {
    // Prepare: far more batches ready than may be in flight.
    const { source, events, receives } = scriptedSource(['B1', 'B2', 'B3', 'B4', 'B5', 'B6', 'B7'].map(batchOf));
    const gated = gatedForwarder(events);
    const pump = pumpOf(source, gated.forwarder, 3);

    // Act
    await pump.start();
    await until(() => gated.waiting() === 3);
    await sleep(20);

    // Assess: three forwards held, no fourth receive while they are; each finished batch makes room for one more.
    expect(gated.waiting()).toBe(3);
    expect(receives()).toBe(3);
    gated.openAll();
    await until(() => gated.waiting() === 3 && receives() === 6);
    gated.openAll();
    await until(() => events.includes('forward started B7'));
    gated.openAll();
    await until(() => events.filter((e) => e.startsWith('forward finished')).length === 7);
    expect(gated.maxInFlight()).toBe(3);
    await pump.stop();
  });

  it('acks each message only after its own forward succeeded, while other batches are still being forwarded', async () => {
    // Prepare: the real forwarder over a target that answers each batch when the test says so.
    const events: string[] = [];
    const pending = new Map<string, () => void>();
    const target: ForwardTarget = {
      sizeOf: (m) => m.body.length,
      forward: async (messages: readonly OutboundMessage[]) => {
        const name = parseEnvelope(messages[0]!.body).keys[0]!;
        events.push(`forward started ${name}`);
        await new Promise<void>((resolve) => pending.set(name, resolve));
        events.push(`forward finished ${name}`);
        return messages.map((m) => ({ id: m.id, ok: true as const }));
      },
    };
    const { source } = scriptedSource(['B1', 'B2', 'B3'].map(batchOf));
    const route: BridgeRoute = parseBridgeConfig({
      proxyEndpoint: '127.0.0.1:8081',
      routes: [{ group: 'G', topic: 'ORDER_TOPIC', target: { kind: 'sqs', queueUrl: 'q' }, dlqUrl: 'd' }],
    }).routes[0]!;
    const forwarder = new RouteForwarder({
      route,
      clusterName: 'test',
      target,
      maxMessageBytes: 262_144,
      metrics: new RouteMetrics('G', 'T'),
      logger,
      deadLetters: new DeadLetterQueue(new SQSClient({ region: 'us-east-1' }), 'unused'),
      ack: async (messages) => {
        events.push(...messages.map((m) => `acked ${m.keys[0]}`));
        return messages.map(() => ({ ok: true as const }));
      },
    });
    const pump = pumpOf(source, forwarder, 3);

    // Act: all three forwards start; they finish in reverse order.
    await pump.start();
    await until(() => pending.size === 3);
    for (const name of ['B3', 'B2', 'B1']) {
      pending.get(name)!();
      await until(() => events.includes(`acked ${name}`));
    }
    await pump.stop();

    // Assess
    expect(events.slice(3)).toEqual([
      'forward finished B3',
      'acked B3',
      'forward finished B2',
      'acked B2',
      'forward finished B1',
      'acked B1',
    ]);
    expect(events.slice(0, 3).sort()).toEqual(['forward started B1', 'forward started B2', 'forward started B3']);
  });

  it('drains on stop: every forward in flight finishes and is acked, the long polls are abandoned, then the consumer closes', async () => {
    // Prepare: two batches being forwarded, two lanes long-polling.
    const { source, events } = scriptedSource(['B1', 'B2'].map(batchOf));
    const gated = gatedForwarder(events);
    const pump = pumpOf(source, gated.forwarder, 4);
    await pump.start();
    await until(() => gated.waiting() === 2);

    // Act
    const stopped = pump.stop();
    await sleep(20);
    const stateWhileForwarding = pump.state;
    const eventsWhileForwarding = [...events];
    gated.openAll();
    await stopped;

    // Assess: nothing closed while forwards were open; what the abandoned polls return is never forwarded.
    expect(stateWhileForwarding).toBe(PumpState.Stopping);
    expect(eventsWhileForwarding).not.toContain('consumer stopped');
    expect(pump.state).toBe(PumpState.Stopped);
    expect(events.at(-1)).toBe('consumer stopped');
    expect(events.filter((e) => e.startsWith('forward finished')).sort()).toEqual([
      'forward finished B1',
      'forward finished B2',
    ]);
    await sleep(20);
    expect(events.join()).not.toContain('arrived-after-stop');
  });

  it('keeps FIFO routes to one batch in flight and pipelines the others (Bridge wiring)', async () => {
    // Prepare: a standard and a FIFO route; every receive long-polls, so the lanes show as outstanding receives.
    const config = parseBridgeConfig({
      proxyEndpoint: '127.0.0.1:8081',
      maxBatchesInFlight: 4,
      routes: [
        { group: 'standard', topic: 'T', target: { kind: 'sqs', queueUrl: 'q' }, dlqUrl: 'd' },
        { group: 'ordered', topic: 'F', fifo: true, target: { kind: 'sqs', queueUrl: 'q.fifo' }, dlqUrl: 'd.fifo' },
      ],
    });
    const sources = new Map(config.routes.map((r) => [r.group, scriptedSource()]));
    const bridge = new Bridge(config, {
      sqs: new SQSClient({ region: 'us-east-1' }),
      logger,
      sourceFor: (r) => sources.get(r.group)!.source,
    });

    // Act
    await bridge.start();
    await until(() => sources.get('standard')!.maxOutstanding() === 4);
    await sleep(20);
    await bridge.stop();

    // Assess
    expect(sources.get('standard')!.maxOutstanding()).toBe(4);
    expect(sources.get('ordered')!.maxOutstanding()).toBe(1);
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
    const pump = pumpOf(source, forwarder, 1, metrics);
    await pump.start();
    await sleep(800);
    await pump.stop();
    expect(metrics.stats.receiveFailed).toBe(1);
    expect(batches).toEqual([1]);
  });

  it("pauses the whole route once when every lane's receive fails, and doubles the pause once per outage round", async () => {
    // Prepare: the proxy is down for good; four lanes.
    const metrics = new RouteMetrics('G', 'T');
    const receivedAt: number[] = [];
    const source: MessageSource = {
      start: async () => undefined,
      receive: async () => {
        receivedAt.push(Date.now());
        throw new Error('proxy unavailable');
      },
      ack: async () => [],
      stop: async () => undefined,
    };
    const warn = vi.spyOn(logger, 'warn');
    const pump = pumpOf(source, gatedForwarder([]).forwarder, 4, metrics);

    // Act: rounds at 0, 0.5 s (after one 0.5 s pause) and 1.5 s (after one 1 s pause).
    const started = Date.now();
    await pump.start();
    await sleep(1_200);
    await pump.stop();
    const pauses = warn.mock.calls.map(([, extra]) => (extra as { backoffMs: number }).backoffMs);
    warn.mockRestore();

    // Assess: every failed receive counts, but the route logged and waited one pause per round.
    expect(receivedAt.map((at) => Math.round((at - started) / 500))).toEqual([0, 0, 0, 0, 1, 1, 1, 1]);
    expect(metrics.stats.receiveFailed).toBe(8);
    expect(pauses).toEqual([500, 1_000]);
  });
});
