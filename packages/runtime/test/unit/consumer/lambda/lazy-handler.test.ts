import { describe, expect, it } from 'vitest';
import { InvalidConsumerConfigError } from '../../../../src/consumer/failures/errors.ts';
import { lazyHandler } from '../../../../src/consumer/lambda/define-consumer.ts';

const refuse = () => {
  throw new InvalidConsumerConfigError('IDEMPOTENCY_TTL_SECONDS is shorter than the retry window');
};

describe('lazyHandler', () => {
  it('outside Lambda, builds on the first call, so importing a handler needs no environment', async () => {
    let builds = 0;
    const handler = lazyHandler(() => {
      builds++;
      return async (n: number) => n * 2;
    }, {});
    expect(builds).toBe(0);
    expect(await handler(2)).toBe(4);
    expect(await handler(3)).toBe(6);
    expect(builds).toBe(1);
  });

  it('in Lambda, refuses a bad configuration during init, before any message is received', () => {
    expect(() => lazyHandler(refuse, { AWS_LAMBDA_FUNCTION_NAME: 'points-consumer' })).toThrow(
      InvalidConsumerConfigError,
    );
  });
});
