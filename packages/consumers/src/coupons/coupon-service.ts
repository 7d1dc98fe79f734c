import { type AwsConfig, serviceCredentials } from '@rocketmq-lambda/runtime/aws/index.ts';
import { endpointRefusal, OUTSIDE_SERVICES, type ServiceEndpoint } from '@rocketmq-lambda/runtime/config/index.ts';
import { InvalidConsumerConfigError } from '@rocketmq-lambda/runtime/consumer/index.ts';
import type { AwsCredentialIdentityProvider } from '@smithy/types';
import { CouponClient } from './coupon-client.ts';

/** What the coupon client is built from: a consumer's deployment (`ConsumerWiring` has all of it). */
export interface CouponServiceConfig {
  readonly aws: AwsConfig;
  /** The outside services by name; a bare URL is one called without credentials (a local stand-in). */
  readonly services?: Partial<Record<'coupon-service', string | ServiceEndpoint>>;
  readonly awsCredentials?: AwsCredentialIdentityProvider;
  /** Time a call leaves the invocation for completing its record (default 2 s). */
  readonly outsideCallReserveMs?: number;
}

/**
 * The coupon service as configured, refused at cold start where the synth refuses it too (plain
 * http, no credentials off loopback).
 */
export function couponClientOf(config: CouponServiceConfig): CouponClient {
  const value = config.services?.['coupon-service'];
  const endpoint: ServiceEndpoint = typeof value === 'object' ? value : { url: value ?? '', auth: { kind: 'none' } };
  const refusal = endpointRefusal(endpoint);
  if (refusal) throw new InvalidConsumerConfigError(`${OUTSIDE_SERVICES['coupon-service'].env} ${refusal}`);
  return new CouponClient({
    baseUrl: endpoint.url,
    credentials: serviceCredentials(endpoint.auth, config),
    reserveMs: config.outsideCallReserveMs,
  });
}
