import { GetSecretValueCommand, type SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { describe, expect, it } from 'vitest';
import { SecretBearerToken, ServiceCredentialsError, SigV4Signer } from '../../../src/aws/service-credentials.ts';

/** A Secrets Manager whose secret the test sets, counting the reads. */
function secrets(initial: string | Error) {
  const state = { value: initial, reads: 0 };
  const client = {
    send: async (command: GetSecretValueCommand) => {
      expect(command).toBeInstanceOf(GetSecretValueCommand);
      state.reads++;
      if (state.value instanceof Error) throw state.value;
      return { SecretString: state.value };
    },
  } as unknown as SecretsManagerClient;
  return { client, state };
}

describe('a bearer token kept in Secrets Manager', () => {
  it('is read when the function starts and then once per TTL, not once per call', async () => {
    // Prepare
    const { client, state } = secrets('token-A');
    let now = 0;
    const token = new SecretBearerToken(client, 'coupon-token', { ttlMs: 60_000, now: () => now });
    // Act
    const headers = [await token.authorize(), await token.authorize()];
    now = 59_999;
    await token.authorize();
    const readsWithinTtl = state.reads;
    state.value = 'token-B';
    now = 60_000;
    const afterTtl = await token.authorize();
    // Assess
    expect(headers).toEqual([{ authorization: 'Bearer token-A' }, { authorization: 'Bearer token-A' }]);
    expect(readsWithinTtl).toBe(1);
    expect(afterTtl).toEqual({ authorization: 'Bearer token-B' });
    expect(state.reads).toBe(2);
  });

  it('renews at once, and says whether the token changed', async () => {
    // Prepare
    const { client, state } = secrets('token-A');
    const token = new SecretBearerToken(client, 'coupon-token');
    await token.authorize();
    // Act + Assess
    expect(await token.renew()).toBe(false);
    state.value = 'token-B';
    expect(await token.renew()).toBe(true);
    expect(await token.authorize()).toEqual({ authorization: 'Bearer token-B' });
    expect(state.reads).toBe(3);
  });

  it('does not keep a failed read: the next call reads again', async () => {
    // Prepare: the secret is not readable when the function starts
    const { client, state } = secrets(Object.assign(new Error('denied'), { name: 'AccessDeniedException' }));
    const token = new SecretBearerToken(client, 'coupon-token');
    // Act + Assess
    await expect(token.authorize()).rejects.toThrow(
      new ServiceCredentialsError('the bearer token secret coupon-token could not be read: AccessDeniedException'),
    );
    state.value = 'token-A';
    expect(await token.authorize()).toEqual({ authorization: 'Bearer token-A' });
  });

  it.each([
    ['empty', ''],
    ['a header injection', 'abc\r\nX-Injected: yes'],
    ['JSON', '{"token":"abc"}'],
    ['white space inside', 'abc def'],
  ])('refuses a secret that is %s without quoting it', async (_, value) => {
    const token = new SecretBearerToken(secrets(value).client, 'coupon-token');
    const refusal = await token.authorize().catch((error: Error) => error);
    expect(refusal).toBeInstanceOf(ServiceCredentialsError);
    expect((refusal as Error).message).toBe(
      'the secret coupon-token does not hold a bearer token (RFC 6750 token characters only)',
    );
  });
});

describe('SigV4 signing with the function’s credentials', () => {
  it('adds the signature headers, never host (fetch sets it from the URL), and says a refusal is not for renewal', async () => {
    // Prepare
    const signer = new SigV4Signer({
      service: 'lambda',
      region: 'ap-northeast-1',
      credentials: async () => ({ accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret', sessionToken: 'session' }),
    });
    // Act
    const headers = await signer.authorize({
      method: 'POST',
      url: new URL('https://abc.lambda-url.ap-northeast-1.on.aws/v1/coupon-grants'),
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    // Assess
    expect(Object.keys(headers).sort()).toEqual([
      'authorization',
      'x-amz-content-sha256',
      'x-amz-date',
      'x-amz-security-token',
    ]);
    expect(headers.authorization).toContain('/ap-northeast-1/lambda/aws4_request, SignedHeaders=content-type;host;');
    expect(await signer.renew()).toBe(false);
  });

  it('fails with a named error, not a signature, when there are no credentials', async () => {
    const signer = new SigV4Signer({
      service: 'execute-api',
      region: 'ap-northeast-1',
      credentials: async () => Promise.reject(new Error('no credentials in the chain')),
    });
    await expect(
      signer.authorize({ method: 'POST', url: new URL('https://x.example.com/'), headers: {}, body: '' }),
    ).rejects.toThrow(ServiceCredentialsError);
  });
});
