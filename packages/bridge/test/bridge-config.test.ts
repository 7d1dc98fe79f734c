import { describe, expect, it } from 'vitest';
import {
  batchesInFlightOf,
  InvalidBridgeConfigError,
  loadBridgeConfig,
  parseBridgeConfig,
  rocketmqGroupOf,
} from '../src/bridge-config.ts';

const route = {
  group: 'G',
  topic: 'T',
  target: { kind: 'sqs', queueUrl: 'https://sqs/q' },
  dlqUrl: 'https://sqs/q-dlq',
};

describe('bridge configuration', () => {
  it('fills the documented defaults', () => {
    const config = loadBridgeConfig({ BRIDGE_CONFIG: JSON.stringify({ proxyEndpoint: 'p:8081', routes: [route] }) });
    expect(config).toMatchObject({
      clusterName: 'DefaultCluster',
      receiveBatchSize: 20,
      invisibleDurationMs: 60_000,
      awaitDurationMs: 20_000,
      maxBatchesInFlight: 4,
      maxMessageBytes: 262_144,
      health: { host: '127.0.0.1', port: 8080 },
      routes: [{ tagExpression: '*', fifo: false }],
    });
  });

  it.each([
    [
      'a FIFO route on a standard queue',
      { ...route, fifo: true, dlqUrl: 'https://sqs/d.fifo' },
      /needs an SQS FIFO queue/,
    ],
    [
      'a FIFO route with a standard DLQ',
      { ...route, fifo: true, target: { kind: 'sqs', queueUrl: 'https://sqs/q.fifo' } },
      /DLQ must be FIFO/,
    ],
    [
      'a FIFO route to EventBridge, which delivers out of order',
      { ...route, fifo: true, target: { kind: 'eventbridge', eventBusName: 'bus' }, dlqUrl: 'https://sqs/d.fifo' },
      /route G: a FIFO route must forward to an SQS FIFO queue, but its target is EventBridge/,
    ],
    ['an invisible duration under 10 s', { ...route }, /invisibleDurationMs/, { invisibleDurationMs: 5_000 }],
    ['no routes', undefined, /routes/],
    ['no batch in flight', { ...route }, /maxBatchesInFlight/, { maxBatchesInFlight: 0 }],
  ] as [string, object | undefined, RegExp, object?][])('rejects %s', (_what, r, message, extra = {}) => {
    expect(() => parseBridgeConfig({ proxyEndpoint: 'p:8081', routes: r ? [r] : [], ...extra })).toThrow(message);
  });

  it('chooses the protocol per cluster: the RocketMQ 5 proxy by default, RocketMQ 4 name servers on request', () => {
    expect(parseBridgeConfig({ proxyEndpoint: 'p:8081', routes: [route] }).protocol).toBe('rocketmq5');
    const v4 = parseBridgeConfig({
      protocol: 'rocketmq4',
      nameServer: 'ns1:9876;ns2:9876',
      sslEnabled: false,
      routes: [route],
    });
    expect(v4).toMatchObject({ protocol: 'rocketmq4', nameServer: 'ns1:9876;ns2:9876' });
  });

  it('talks TLS to the proxy unless told otherwise, and refuses RocketMQ 4 (no TLS in its client) without an explicit opt-out', () => {
    expect(parseBridgeConfig({ proxyEndpoint: 'p:8081', routes: [route] }).sslEnabled).toBe(true);
    expect(parseBridgeConfig({ proxyEndpoint: 'p:8081', sslEnabled: false, routes: [route] }).sslEnabled).toBe(false);
    expect(() => parseBridgeConfig({ protocol: 'rocketmq4', nameServer: 'ns:9876', routes: [route] })).toThrow(
      /rocketmq4 speaks the remoting protocol without TLS.*set sslEnabled: false/,
    );
  });

  it('signs envelopes only when a signing secret is configured', () => {
    expect(parseBridgeConfig({ proxyEndpoint: 'p:8081', routes: [route] }).signing).toBeUndefined();
    expect(
      parseBridgeConfig({
        proxyEndpoint: 'p:8081',
        signing: { secretId: 'rmq-prod/envelope-signing-key' },
        routes: [route],
      }).signing,
    ).toEqual({
      secretId: 'rmq-prod/envelope-signing-key',
    });
    expect(() => parseBridgeConfig({ proxyEndpoint: 'p:8081', signing: { secretId: '' }, routes: [route] })).toThrow(
      /signing/,
    );
  });

  it.each([
    ['rocketmq5 without a proxy endpoint', { routes: [route] }, /rocketmq5 needs proxyEndpoint/],
    [
      'rocketmq4 without name servers',
      { protocol: 'rocketmq4', proxyEndpoint: 'p:8081', routes: [route] },
      /rocketmq4 needs nameServer/,
    ],
  ] as [string, object, RegExp][])('rejects %s', (_what, config, message) => {
    expect(() => parseBridgeConfig(config)).toThrow(message);
  });

  it('keeps one batch in flight on FIFO routes, whatever maxBatchesInFlight says', () => {
    const fifo = {
      ...route,
      group: 'F',
      fifo: true,
      target: { kind: 'sqs', queueUrl: 'https://sqs/f.fifo' },
      dlqUrl: 'https://sqs/f-dlq.fifo',
    };
    const config = parseBridgeConfig({ proxyEndpoint: 'p:8081', maxBatchesInFlight: 8, routes: [route, fifo] });
    expect(config.routes.map((r) => batchesInFlightOf(config, r))).toEqual([8, 1]);
    // RocketMQ 4 too: one slice of one queue at a time is what keeps that queue's order there.
    const v4 = parseBridgeConfig({
      protocol: 'rocketmq4',
      nameServer: 'ns:9876',
      sslEnabled: false,
      maxBatchesInFlight: 8,
      routes: [route, fifo],
    });
    expect(v4.routes.map((r) => batchesInFlightOf(v4, r))).toEqual([8, 1]);
  });

  it('consumes as the route’s own RocketMQ group when it names one, and takes a group over only on RocketMQ 4', () => {
    const v4 = { protocol: 'rocketmq4', nameServer: 'ns:9876', sslEnabled: false };
    const config = parseBridgeConfig({
      ...v4,
      routes: [
        { ...route, rocketmqGroup: 'LEGACY_G', takeOver: {} },
        { ...route, group: 'H' },
      ],
    });
    expect(config.routes.map((r) => [rocketmqGroupOf(r), r.takeOver])).toEqual([
      ['LEGACY_G', { startWithoutOffset: 'refuse' }],
      ['H', undefined],
    ]);
    expect(() =>
      parseBridgeConfig({
        ...v4,
        routes: [
          { ...route, rocketmqGroup: 'H' },
          { ...route, group: 'H' },
        ],
      }),
    ).toThrow('routes G and H both consume as RocketMQ group H: give each route its own group (rocketmqGroup)');
    expect(() => parseBridgeConfig({ proxyEndpoint: 'p:8081', routes: [{ ...route, takeOver: {} }] })).toThrow(
      'route G: takeOver is built for protocol rocketmq4 (a 4.x group moving to the bridge), but the protocol is rocketmq5',
    );
    expect(() =>
      parseBridgeConfig({ ...v4, routes: [{ ...route, takeOver: { startWithoutOffset: 'last' } }] }),
    ).toThrow(InvalidBridgeConfigError);
    const at = { timestamp: '2026-12-01T08:00:00+08:00' };
    const atInstant = parseBridgeConfig({ ...v4, routes: [{ ...route, takeOver: { startWithoutOffset: at } }] });
    expect(atInstant.routes[0]!.takeOver).toEqual({ startWithoutOffset: at });
    for (const timestamp of ['2026-12-01 08:00', '20261201080000', '2026-12-01T08:00:00'])
      expect(() =>
        parseBridgeConfig({ ...v4, routes: [{ ...route, takeOver: { startWithoutOffset: { timestamp } } }] }),
      ).toThrow(InvalidBridgeConfigError);
  });

  it('runs the outbound route only with the signing key, on a queue and DLQ of one kind', () => {
    const outbound = { queueUrl: 'https://sqs/out', dlqUrl: 'https://sqs/out-dlq' };
    const base = { proxyEndpoint: 'p:8081', routes: [route] };
    const signing = { secretId: 'arn:secret' };
    expect(parseBridgeConfig({ ...base, signing, outbound }).outbound).toEqual({
      ...outbound,
      receiveBatchSize: 10,
      waitTimeSeconds: 20,
    });
    expect(parseBridgeConfig(base).outbound).toBeUndefined();
    expect(() => parseBridgeConfig({ ...base, outbound })).toThrow(/outbound is set but signing is not/);
    expect(() =>
      parseBridgeConfig({ ...base, signing, outbound: { ...outbound, queueUrl: 'https://sqs/out.fifo' } }),
    ).toThrow(/FIFO exactly when the outbound queue is/);
    expect(() => parseBridgeConfig({ ...base, signing, outbound: { ...outbound, receiveBatchSize: 11 } })).toThrow(
      InvalidBridgeConfigError,
    );
  });

  it('says what is missing when there is no configuration at all', () => {
    expect(() => loadBridgeConfig({})).toThrow(InvalidBridgeConfigError);
  });
});
