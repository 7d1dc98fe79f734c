import { randomUUID } from 'node:crypto';
import { CreateSecretCommand, PutSecretValueCommand } from '@aws-sdk/client-secrets-manager';
import { ANSWER_EXCERPT_CHARS, MAX_ANSWER_BYTES } from '@rocketmq-lambda/consumers/coupons/index.ts';
import { orderEnvelope } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { describe, expect, inject, it } from 'vitest';
import { createSecretsManager, emulatorConfig } from '../../../src/aws/index.ts';
import { couponFixture } from './consumer-fixtures.ts';

const ORDER = { orderNo: 'SO202007051422310088', userId: 88372, points: 300, paidAt: '2020-07-05T14:22:31Z' };
const KEY = ORDER.orderNo;
/** The example credentials of the AWS SigV4 documentation, with a session token as a Lambda role has. */
const TEST_CREDENTIALS = {
  accessKeyId: 'AKIDEXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
  sessionToken: 'session-token-of-the-role',
};

/** Control and format characters (escapes, bidi overrides) that would reach a terminal or a log viewer raw. */
const RAW_CONTROL = /[\p{Cc}\p{Cf}]/u;

describe('the coupon call: credentials, redirects and the service’s own words (emulator + local coupon service)', () => {
  describe('bearer token from Secrets Manager', () => {
    it('sends the secret’s token, and after a 401 reads the secret again and repeats the call once with the new token', async () => {
      // Prepare: the secret exists before the consumer starts (as in a deployment), and the service admits its token
      const secretId = `coupon-token-${randomUUID()}`;
      const secrets = createSecretsManager(emulatorConfig(inject('emulatorEndpoint')));
      await secrets.send(new CreateSecretCommand({ Name: secretId, SecretString: 'token-A\n' }));
      let admitted = 'token-A';
      const f = await couponFixture(
        {},
        { access: { kind: 'bearer', token: () => admitted }, auth: { kind: 'bearer', secretId } },
      );
      // Act: one grant with the first token; then the token is rotated in the secret and at the service
      const first = await f.invoke([orderEnvelope(ORDER)]);
      await secrets.send(new PutSecretValueCommand({ SecretId: secretId, SecretString: 'token-B' }));
      admitted = 'token-B';
      const second = await f.invoke([orderEnvelope({ ...ORDER, orderNo: 'SO202007051422310099' })]);
      // Assess
      expect(first.batchItemFailures).toEqual([]);
      expect(second.batchItemFailures).toEqual([]);
      expect(f.service.received.map((r) => [r.idempotencyKey, r.authorization, r.status])).toEqual([
        [KEY, 'Bearer token-A', 200],
        ['SO202007051422310099', 'Bearer token-A', 401],
        ['SO202007051422310099', 'Bearer token-B', 200],
      ]);
      expect(f.reports.map((r) => r.settlement.outcome)).toEqual(['processed', 'processed']);
    });

    it('does not repeat the call when the secret still holds the refused token: a transient failure that names no token', async () => {
      // Prepare: the service admits a token the secret does not hold
      const secretId = `coupon-token-${randomUUID()}`;
      const f = await couponFixture(
        {},
        { access: { kind: 'bearer', token: () => 'token-C' }, auth: { kind: 'bearer', secretId } },
      );
      await createSecretsManager(f.aws).send(new CreateSecretCommand({ Name: secretId, SecretString: 'token-B' }));
      // Act
      const response = await f.invoke([orderEnvelope(ORDER)]);
      // Assess
      expect(response.batchItemFailures).toHaveLength(1);
      expect(f.reports[0]!.settlement).toMatchObject({
        outcome: 'failed',
        error: { code: 'COUPON_SERVICE_CREDENTIALS', classification: 'transient' },
      });
      expect(JSON.stringify(f.reports)).not.toContain('token-B');
      expect(f.service.requests(KEY)).toBe(1);
      expect(await f.dedupRecord(KEY)).toMatchObject({ status: 'RETRYABLE' });
    });

    it('fails transiently, without calling the service, while the secret holds no usable token, and never quotes it', async () => {
      // Prepare: a value with a line break would split the Authorization header
      const secretId = `coupon-token-${randomUUID()}`;
      const f = await couponFixture(
        {},
        { access: { kind: 'bearer', token: () => 'x' }, auth: { kind: 'bearer', secretId } },
      );
      await createSecretsManager(f.aws).send(
        new CreateSecretCommand({ Name: secretId, SecretString: 'abc\r\nX-Injected: yes' }),
      );
      // Act
      const response = await f.invoke([orderEnvelope(ORDER)]);
      // Assess
      expect(response.batchItemFailures).toHaveLength(1);
      const error = (f.reports[0]!.settlement as { error: { code: string; message: string } }).error;
      expect(error.code).toBe('COUPON_SERVICE_CREDENTIALS');
      expect(error.message).toContain(`the secret ${secretId} does not hold a bearer token`);
      expect(error.message).not.toContain('Injected');
      expect(f.service.received).toEqual([]);
    });
  });

  describe('SigV4 with the function’s credentials', () => {
    const access = {
      kind: 'sigv4',
      service: 'execute-api',
      region: 'ap-northeast-1',
      credentials: TEST_CREDENTIALS,
    } as const;

    it('signs the grant so that the service, signing it again with the same credentials, gets the same signature', async () => {
      // Prepare
      const f = await couponFixture(
        { awsCredentials: async () => TEST_CREDENTIALS },
        { access, auth: { kind: 'sigv4', service: 'execute-api', region: 'ap-northeast-1' } },
      );
      // Act
      const response = await f.invoke([orderEnvelope(ORDER)]);
      // Assess
      expect(response.batchItemFailures).toEqual([]);
      const [request] = f.service.received;
      expect(request!.status).toBe(200);
      expect(request!.authorization).toMatch(
        /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/ap-northeast-1\/execute-api\/aws4_request, SignedHeaders=[^,]*idempotency-key[^,]*, Signature=[0-9a-f]{64}$/,
      );
      expect(request!.authorization).toMatch(/SignedHeaders=[^,]*host;/);
      expect(f.reports[0]!.settlement).toEqual({ outcome: 'processed', result: f.service.couponFor(KEY) });
    });

    it('is refused (403) when signed with other credentials or for another region: transient, the message is sound', async () => {
      // Prepare
      const f = await couponFixture(
        { awsCredentials: async () => ({ ...TEST_CREDENTIALS, secretAccessKey: 'another-secret-key' }) },
        { access, auth: { kind: 'sigv4', service: 'execute-api', region: 'ap-northeast-1' } },
      );
      // Act
      const response = await f.invoke([orderEnvelope(ORDER)]);
      // Assess
      expect(response.batchItemFailures).toHaveLength(1);
      expect(f.reports[0]!.settlement).toMatchObject({
        outcome: 'failed',
        error: { code: 'COUPON_SERVICE_CREDENTIALS', classification: 'transient' },
      });
      expect(f.service.received.map((r) => r.status)).toEqual([403]);
      expect(f.service.grants(KEY)).toBe(0);
    });
  });

  it('does not follow a redirect: one request, nothing granted, a transient failure naming where it pointed', async () => {
    // Prepare: the service sends the POST elsewhere (where a follower would repeat it with its credentials)
    const f = await couponFixture();
    f.service.redirectNext(`${f.service.url}/v1/coupon-grants?moved=1`);
    // Act
    const response = await f.invoke([orderEnvelope(ORDER)]);
    const retried = await f.invoke([orderEnvelope(ORDER)]);
    // Assess
    expect(response.batchItemFailures).toHaveLength(1);
    expect(f.reports[0]!.settlement).toMatchObject({
      outcome: 'failed',
      error: { code: 'COUPON_SERVICE_REDIRECT', classification: 'transient' },
    });
    expect((f.reports[0]!.settlement as { error: { message: string } }).error.message).toContain(
      '307 (Location "http://127.0.0.1',
    );
    expect(f.reports[0]!.disposition.action).toBe('retry');
    expect(retried.batchItemFailures).toEqual([]);
    expect(f.service.received.map((r) => [r.path, r.status])).toEqual([
      ['/v1/coupon-grants', 307],
      ['/v1/coupon-grants', 200],
    ]);
    expect(f.service.grants(KEY)).toBe(1);
  });

  it('quotes a hostile 1 MB error answer only as a bounded excerpt with its escapes made inert, in the log line and the dead letter', async () => {
    // Prepare: terminal escapes, a bell, a bidi override and a megabyte of filler
    const f = await couponFixture();
    const hostile = `\u001b[2J\u001b[31mpwned\u0007\u202e${'A'.repeat(1024 * 1024)}`;
    f.service.failNext(1, 422, hostile);
    // Act
    const response = await f.invoke([orderEnvelope(ORDER)]);
    // Assess
    expect(response.batchItemFailures).toEqual([]);
    const message = (f.reports[0]!.settlement as { error: { message: string } }).error.message;
    expect(message).toMatch(
      /^coupon service answered 422 for order SO202007051422310088: "\\u001b\[2J\\u001b\[31mpwned\\u0007\\u\{202e\}A+"… \(\d+ characters\) \(the rest of the answer past 16384 bytes unread\)$/,
    );
    expect(message).not.toMatch(RAW_CONTROL);
    expect(message.length).toBeLessThan(ANSWER_EXCERPT_CHARS + 200);
    expect(message).toContain(`past ${MAX_ANSWER_BYTES} bytes`);
    const [dead] = await f.deadLetters();
    expect(dead!.attributes['failure-reason']).toBe(message);
    expect(f.service.requests(KEY)).toBe(1);
  });
});
