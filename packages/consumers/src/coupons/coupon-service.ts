import { type OutsideServiceConfig, serviceEndpointOf } from '../outside-service/index.ts';
import { CouponClient } from './coupon-client.ts';

/** What the coupon client is built from: a consumer's deployment (`ConsumerWiring` has all of it). */
export type CouponServiceConfig = OutsideServiceConfig;

/**
 * The coupon service as configured, refused at cold start where the synth refuses it too (plain
 * http, no credentials off loopback).
 */
export function couponClientOf(config: CouponServiceConfig): CouponClient {
  return new CouponClient(serviceEndpointOf('coupon-service', config));
}
