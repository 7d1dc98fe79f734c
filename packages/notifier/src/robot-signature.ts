import { createHmac } from 'node:crypto';

/**
 * DingTalk's "加签" security setting: `sign = urlencode(base64(HMAC-SHA256(key = secret,
 * data = timestamp + "\n" + secret)))` with a millisecond timestamp that DingTalk accepts within
 * one hour of its own clock.
 */
export function robotSign(secret: string, timestampMs: number): string {
  return createHmac('sha256', secret).update(`${timestampMs}\n${secret}`, 'utf8').digest('base64');
}

/**
 * The URL to POST to: the webhook (which carries `access_token`) plus `timestamp` and `sign`.
 * `URLSearchParams` does the URL encoding of the base64 signature (`+`, `/`, `=`).
 */
export function signedWebhookUrl(webhookUrl: string, secret: string | undefined, timestampMs: number): URL {
  const url = new URL(webhookUrl);
  if (secret) {
    // DingTalk wants whole milliseconds; an injected clock may not deliver them.
    const timestamp = Math.floor(timestampMs);
    url.searchParams.set('timestamp', String(timestamp));
    url.searchParams.set('sign', robotSign(secret, timestamp));
  }
  return url;
}

/** Strips credentials so a URL can appear in logs and errors: only scheme, host and path remain. */
export function redactedWebhook(webhookUrl: string): string {
  try {
    const url = new URL(webhookUrl);
    return `${url.protocol}//${url.host}${url.pathname}`;
  } catch {
    return '<invalid webhook URL>';
  }
}
