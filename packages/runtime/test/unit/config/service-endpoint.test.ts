import { describe, expect, it } from 'vitest';
import { consumerGroup } from '../../../src/config/resources.ts';
import { endpointRefusal, type ServiceAuth } from '../../../src/config/service-endpoint.ts';
import { InvalidConsumerConfigError } from '../../../src/consumer/index.ts';
import { consumerConfigFromEnv } from '../../../src/consumer/internal.ts';

const NONE: ServiceAuth = { kind: 'none' };
const BEARER: ServiceAuth = { kind: 'bearer', secretId: 'rmq-prod/coupon-service-token' };

describe('which outside service endpoints a consumer may call', () => {
  it.each([
    ['https with a bearer token', 'https://coupons.example.com', BEARER],
    [
      'https with SigV4',
      'https://a1b2c3d4e5.execute-api.ap-northeast-1.amazonaws.com/prod',
      { kind: 'sigv4', service: 'execute-api', region: 'ap-northeast-1' },
    ],
    ['a loopback stand-in without credentials', 'http://127.0.0.1:8080', NONE],
    ['a loopback stand-in over IPv6', 'http://[::1]:8080/base', NONE],
    ['localhost with a token over http', 'http://localhost:8080', BEARER],
  ] as const)('accepts %s', (_, url, auth) => {
    expect(endpointRefusal({ url, auth })).toBeUndefined();
  });

  it.each([
    [
      'no credentials off loopback',
      'https://coupons.example.com',
      NONE,
      "needs credentials (auth 'bearer' or 'sigv4')",
    ],
    ['a token over plain http', 'http://coupons.example.com', BEARER, 'must use https'],
    ['a host that only starts like loopback', 'http://127.0.0.1.example.com', NONE, 'must use https'],
    [
      'credentials in the URL',
      'https://user:pass@coupons.example.com',
      BEARER,
      'must not carry credentials in the URL',
    ],
    ['another scheme', 'ftp://coupons.example.com', BEARER, 'must be an http(s) URL'],
    ['no URL', '', NONE, 'must be an http(s) URL'],
  ] as const)('refuses %s', (_, url, auth, refusal) => {
    expect(endpointRefusal({ url, auth })).toContain(refusal);
  });
});

describe('the service endpoint as the deployed environment states it', () => {
  const COUPONS = consumerGroup('coupon-consumer-group');
  const env = {
    IDEMPOTENCY_TABLE: 'unit-idempotency',
    DEAD_LETTER_QUEUE_URL: 'https://sqs.example/dlq',
    COUPON_SERVICE_URL: 'https://coupons.example.com',
    ENVELOPE_SIGNING_SECRET: 'rmq-test/envelope-signing-key',
  };

  it('reads the URL and the authentication, and takes an absent authentication for none', () => {
    expect(consumerConfigFromEnv(COUPONS, { ...env, COUPON_SERVICE_AUTH: JSON.stringify(BEARER) }).services).toEqual({
      'coupon-service': { url: 'https://coupons.example.com', auth: BEARER },
    });
    expect(consumerConfigFromEnv(COUPONS, env).services).toEqual({
      'coupon-service': { url: 'https://coupons.example.com', auth: NONE },
    });
  });

  it.each([
    ['not JSON', 'bearer', 'COUPON_SERVICE_AUTH is not JSON'],
    ['an unknown kind', '{"kind":"basic","user":"u"}', 'COUPON_SERVICE_AUTH is not a service authentication (kind)'],
    [
      'a SigV4 service that signs for nothing here',
      '{"kind":"sigv4","service":"s3","region":"ap-northeast-1"}',
      '(service)',
    ],
  ])('refuses an authentication that is %s, naming the variable', (_, value, message) => {
    expect(() => consumerConfigFromEnv(COUPONS, { ...env, COUPON_SERVICE_AUTH: value })).toThrow(
      InvalidConsumerConfigError,
    );
    expect(() => consumerConfigFromEnv(COUPONS, { ...env, COUPON_SERVICE_AUTH: value })).toThrow(message);
  });
});
