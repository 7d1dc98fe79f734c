import { describe, expect, it } from 'vitest';
import { WebhookSecretError } from '../../src/errors.ts';
import { parseWebhookSecret, StaticWebhookSource, WEBHOOK_TRANSPORT_RULE } from '../../src/webhook-secret.ts';

const TOKEN = 'c0ffee00c0ffee00c0ffee00c0ffee00';
const secretJson = (webhookUrl: string) => JSON.stringify({ webhookUrl, secret: 'SECx' });

describe('webhookUrl transport', () => {
  it.each([
    ['DingTalk over https', `https://oapi.dingtalk.com/robot/send?access_token=${TOKEN}`],
    ['https in capitals', `HTTPS://oapi.dingtalk.com/robot/send?access_token=${TOKEN}`],
    ['a local stand-in on 127.0.0.1', `http://127.0.0.1:8080/robot/send?access_token=${TOKEN}`],
    ['anywhere in 127.0.0.0/8', `http://127.3.2.1:8080/robot/send?access_token=${TOKEN}`],
    ['IPv6 loopback', `http://[::1]:8080/robot/send?access_token=${TOKEN}`],
    ['IPv4-mapped loopback', `http://[::ffff:127.0.0.1]:8080/robot/send?access_token=${TOKEN}`],
    ['localhost', `http://localhost:8080/robot/send?access_token=${TOKEN}`],
  ])('accepts %s', (_name, webhookUrl) => {
    expect(parseWebhookSecret(secretJson(webhookUrl)).webhookUrl).toBe(webhookUrl);
  });

  it.each([
    ['DingTalk over http', `http://oapi.dingtalk.com/robot/send?access_token=${TOKEN}`],
    ['a private address over http', `http://10.0.0.7/robot/send?access_token=${TOKEN}`],
    ['a name that starts like loopback', `http://127.0.0.1.evil.example/robot/send?access_token=${TOKEN}`],
    ['a name that ends like localhost', `http://localhost.evil.example/robot/send?access_token=${TOKEN}`],
  ])('refuses %s, naming the rule and not the token', (_name, webhookUrl) => {
    // Act
    const fromSecret = () => parseWebhookSecret(secretJson(webhookUrl));
    const fromArguments = () => new StaticWebhookSource({ webhookUrl, secret: 'SECx' });
    // Assess: the Lambda's secret and the operator command go through the same rule
    for (const attempt of [fromSecret, fromArguments]) {
      expect(attempt).toThrow(WebhookSecretError);
      expect(attempt).toThrow(WEBHOOK_TRANSPORT_RULE);
      expect(() => attempt()).not.toThrow(TOKEN);
    }
  });

  it('still names only the path for a value zod describes itself', () => {
    expect(() => parseWebhookSecret(secretJson(`ftp://oapi.dingtalk.com/${TOKEN}`))).toThrow(/check: webhookUrl\)$/);
  });
});
