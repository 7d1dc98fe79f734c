import { describe, expect, it } from 'vitest';
import { redactedWebhook, robotSign, signedWebhookUrl } from '../../src/robot-signature.ts';

// Reference computed independently (Python hmac/base64/urllib) for this secret and timestamp;
// it contains all three characters that need URL encoding: + / =
const SECRET = 'SEC0123456789abcdef';
const TIMESTAMP = 1764473074803;
const EXPECTED_SIGN = '+GXsKfWsMArZfWly5fWp8LrLFy/rsxMg0a+fzOrGF8U=';
const EXPECTED_ENCODED = '%2BGXsKfWsMArZfWly5fWp8LrLFy%2FrsxMg0a%2BfzOrGF8U%3D';

describe('robot signature', () => {
  it('matches the documented HMAC-SHA256(timestamp + "\\n" + secret) in base64', () => {
    // Prepare / Act
    const sign = robotSign(SECRET, TIMESTAMP);
    // Assess
    expect(sign).toBe(EXPECTED_SIGN);
  });

  it('adds timestamp and the URL-encoded sign next to the access token', () => {
    // Prepare
    const webhook = 'https://oapi.dingtalk.com/robot/send?access_token=abc123';
    // Act
    const url = signedWebhookUrl(webhook, SECRET, TIMESTAMP);
    // Assess
    expect(url.search).toBe(`?access_token=abc123&timestamp=${TIMESTAMP}&sign=${EXPECTED_ENCODED}`);
    expect(url.searchParams.get('sign')).toBe(EXPECTED_SIGN);
  });

  it('leaves the URL unsigned for robots without a signing secret', () => {
    const url = signedWebhookUrl('https://oapi.dingtalk.com/robot/send?access_token=abc123', undefined, TIMESTAMP);
    expect(url.searchParams.has('sign')).toBe(false);
  });

  it('redacts the access token for logs', () => {
    expect(redactedWebhook('https://oapi.dingtalk.com/robot/send?access_token=abc123')).toBe(
      'https://oapi.dingtalk.com/robot/send',
    );
  });
});
