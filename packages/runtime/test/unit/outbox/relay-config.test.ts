import { describe, expect, it } from 'vitest';
import { consumerGroup } from '../../../src/config/index.ts';
import { defineOutboxRelay, InvalidRelayConfigError, relayConfigFromEnv } from '../../../src/outbox/index.ts';
import { classifyTargetError } from '../../../src/outbox/relay-errors.ts';

const TARGETS = {
  POINTS_TOPIC: {
    kind: 'sqs',
    queues: [{ group: 'notification-group', url: 'https://sqs/q', tagExpression: 'POINTS_AWARDED' }],
  },
};
const ENV = {
  CONSUMER_GROUP: 'point-consumer-group',
  OUTBOX_TABLE: 'dev-point-consumer-group-outbox',
  OUTBOX_TARGETS: JSON.stringify(TARGETS),
  OUTBOX_DEAD_LETTER_QUEUE_URL: 'https://sqs/dlq',
  ENVELOPE_SIGNING_SECRET: 'dev/envelope-signing-key',
};

describe('the relay configuration from its environment (its cold start)', () => {
  it('reads a complete environment', () => {
    const config = relayConfigFromEnv(ENV);
    expect(config.definition).toBe(consumerGroup('point-consumer-group'));
    expect(config.tableName).toBe(ENV.OUTBOX_TABLE);
    expect(config.targets).toEqual(TARGETS);
    expect(config.deadLetterQueueUrl).toBe(ENV.OUTBOX_DEAD_LETTER_QUEUE_URL);
    expect(config.signingSecret).toBe(ENV.ENVELOPE_SIGNING_SECRET);
  });

  it.each(Object.keys(ENV))('refuses an environment without %s, naming it', (name) => {
    const env: Record<string, string | undefined> = { ...ENV, [name]: undefined };
    expect(() => relayConfigFromEnv(env)).toThrow(
      new InvalidRelayConfigError(`environment variable ${name} is not set`),
    );
  });

  it.each([
    [
      'a group not in the catalogue',
      { CONSUMER_GROUP: 'nobody' },
      /CONSUMER_GROUP names nobody, which is not in the catalogue/,
    ],
    ['a group that publishes nothing', { CONSUMER_GROUP: 'coupon-consumer-group' }, /publishes nothing/],
    ['targets that are not JSON', { OUTBOX_TARGETS: '{' }, /OUTBOX_TARGETS is not JSON/],
    [
      'a target of no known kind',
      { OUTBOX_TARGETS: '{"POINTS_TOPIC":{"kind":"sns"}}' },
      /OUTBOX_TARGETS is not a topic/,
    ],
    [
      'no target for a declared topic',
      { OUTBOX_TARGETS: '{"OTHER":{"kind":"rocketmq","queueUrl":"q"}}' },
      /OUTBOX_TARGETS has no target for topic POINTS_TOPIC, which point-consumer-group declares it publishes/,
    ],
    [
      'a declared topic sent to another kind of target',
      { OUTBOX_TARGETS: '{"POINTS_TOPIC":{"kind":"rocketmq","queueUrl":"q"}}' },
      /OUTBOX_TARGETS sends topic POINTS_TOPIC to rocketmq, but point-consumer-group declares target sqs/,
    ],
  ])('refuses %s', (_, change, message) => {
    expect(() => relayConfigFromEnv({ ...ENV, ...change })).toThrow(message);
  });
});

describe('the generic relay function', () => {
  it('fails the cold start in Lambda, where its handler is built at init', () => {
    const env = { ...ENV, AWS_LAMBDA_FUNCTION_NAME: 'dev-point-consumer-group-outbox-relay', OUTBOX_TARGETS: '' };
    expect(() => defineOutboxRelay(env)).toThrow(/OUTBOX_TARGETS is not set/);
  });

  it('builds nothing at import elsewhere (a test, a tool)', () => {
    expect(typeof defineOutboxRelay({}).handler).toBe('function');
  });
});

describe("a target's error", () => {
  it.each([
    ['InvalidParameterValue', 'permanent'],
    ['QueueDoesNotExist', 'permanent'],
    ['InvalidArgument', 'permanent'],
    ['ThrottlingException', 'transient'],
    ['InternalFailure', 'transient'],
    ['TimeoutError', 'transient'],
    [undefined, 'transient'],
  ])('%s is %s', (name, classification) => {
    expect(classifyTargetError(name, 'x').classification).toBe(classification);
  });
});
