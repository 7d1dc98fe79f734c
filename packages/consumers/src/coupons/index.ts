/**
 * The coupon service a lease-mode consumer calls: its HTTP client, its classified failures, and the
 * client as a consumer's deployment configures it.
 * Other folders import this package through this file only (packages/tools/test/unit/house-rules/wing-boundaries.test.ts).
 */
export { ANSWER_EXCERPT_CHARS, COUPON_GRANT_PATH, MAX_ANSWER_BYTES } from './coupon-client.ts';
export { couponClientOf } from './coupon-service.ts';
