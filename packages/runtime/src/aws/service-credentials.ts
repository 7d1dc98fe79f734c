import { GetSecretValueCommand, type SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import { Sha256 } from '@smithy/core/checksum';
import { SignatureV4 } from '@smithy/signature-v4';
import type { AwsCredentialIdentityProvider } from '@smithy/types';
import type { ServiceAuth, SigV4Service } from '../config/index.ts';
import { type AwsConfig, createSecretsManager } from './clients.ts';
import { ExpiringRead } from './expiring-read.ts';

/** A request to an outside service, as it will be sent. */
export interface OutgoingRequest {
  readonly method: string;
  readonly url: URL;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string | Uint8Array;
}

/**
 * How calls to an outside service prove who is calling. Neither the token nor the signature ever
 * leaves through an error message: the errors below name the secret or the step, never a value.
 */
export interface ServiceCredentials {
  /** The headers that authenticate this request, to send with it. */
  authorize(request: OutgoingRequest): Promise<Record<string, string>>;
  /**
   * The service refused the credentials (401): reads them again; true when they changed, so one more call may succeed.
   */
  renew(): Promise<boolean>;
}

/** The credentials could not be had (the secret is unreadable or holds no token). */
export class ServiceCredentialsError extends Error {
  override readonly name = 'ServiceCredentialsError';
}

/** RFC 6750's b64token: all a bearer token may contain, so it can never break the header it goes into. */
const BEARER_TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

/**
 * A bearer token kept in Secrets Manager (the whole SecretString, surrounding white space
 * ignored). Read when the function starts and kept for `ttlMs`, so a warm function makes one
 * GetSecretValue per TTL, not one per message, and a rotated token is picked up within the TTL;
 * at once when the service answers 401 (`renew`).
 */
export class SecretBearerToken implements ServiceCredentials {
  private readonly token: ExpiringRead<string>;

  constructor(
    private readonly client: SecretsManagerClient,
    private readonly secretId: string,
    options: { ttlMs?: number; now?: () => number } = {},
  ) {
    this.token = new ExpiringRead(() => this.load(), options.ttlMs ?? 5 * 60_000, options.now ?? Date.now);
    // Started during the Lambda init phase, so the first message does not wait for it.
    void this.token.get().catch(() => undefined);
  }

  async authorize(): Promise<Record<string, string>> {
    return { authorization: `Bearer ${await this.token.get()}` };
  }

  async renew(): Promise<boolean> {
    const { before, after } = await this.token.reread();
    return after !== before;
  }

  private async load(): Promise<string> {
    let secretString: string | undefined;
    try {
      secretString = (await this.client.send(new GetSecretValueCommand({ SecretId: this.secretId }))).SecretString;
    } catch (error) {
      throw new ServiceCredentialsError(
        `the bearer token secret ${this.secretId} could not be read: ${(error as Error).name}`,
        { cause: error },
      );
    }
    const token = secretString?.trim() ?? '';
    if (!BEARER_TOKEN.test(token))
      throw new ServiceCredentialsError(
        `the secret ${this.secretId} does not hold a bearer token (RFC 6750 token characters only)`,
      );
    return token;
  }
}

/**
 * Signs each call with SigV4 and the caller's own credentials: for an API Gateway API
 * (`execute-api`) or a Lambda function URL (`lambda`) whose authorisation is AWS_IAM, and for
 * X-Ray's OTLP endpoint (`xray`, the bridge's span export). The signature covers the method,
 * path, body and the headers given, and expires after five minutes.
 */
export class SigV4Signer implements ServiceCredentials {
  private readonly signer: SignatureV4;

  constructor(options: {
    service: SigV4Service | 'xray';
    region: string;
    credentials: AwsCredentialIdentityProvider;
  }) {
    this.signer = new SignatureV4({
      service: options.service,
      region: options.region,
      credentials: options.credentials,
      sha256: Sha256,
    });
  }

  async authorize(request: OutgoingRequest): Promise<Record<string, string>> {
    const { url } = request;
    let signed: { headers: Record<string, string> };
    try {
      signed = await this.signer.sign({
        method: request.method,
        protocol: url.protocol,
        hostname: url.hostname,
        ...(url.port ? { port: Number(url.port) } : {}),
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        // Signed as `host`; fetch sends the same value from the URL.
        headers: { ...request.headers, host: url.host },
        body: request.body,
      });
    } catch (error) {
      throw new ServiceCredentialsError(`no AWS credentials to sign the call with: ${(error as Error).name}`, {
        cause: error,
      });
    }
    return Object.fromEntries(
      Object.entries(signed.headers).filter(([name]) => name !== 'host' && !(name in request.headers)),
    );
  }

  /**
   * The provider refreshes the role's credentials itself; a refusal of a valid signature is a policy matter that
   * reading again cannot change.
   */
  async renew(): Promise<boolean> {
    return false;
  }
}

/** The credentials an endpoint's `auth` calls for; none for `none`. */
export function serviceCredentials(
  auth: ServiceAuth,
  deps: { aws: AwsConfig; awsCredentials?: AwsCredentialIdentityProvider },
): ServiceCredentials | undefined {
  switch (auth.kind) {
    case 'none':
      return undefined;
    case 'bearer':
      return new SecretBearerToken(createSecretsManager(deps.aws), auth.secretId);
    case 'sigv4':
      return new SigV4Signer({
        service: auth.service,
        region: auth.region,
        credentials: deps.awsCredentials ?? defaultProvider(),
      });
  }
}
