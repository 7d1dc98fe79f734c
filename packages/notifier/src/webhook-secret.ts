import { createHash } from 'node:crypto';
import { GetSecretValueCommand, type SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { isLoopbackUrl } from '@rocketmq-lambda/runtime/config/index.ts';
import { z } from 'zod';
import { WebhookSecretError } from './errors.ts';

/**
 * Plain http would carry the access token and the signature across the network in clear. The
 * local stand-in robots (packages/tools/src/testing/fake-dingtalk-robot.ts) listen on 127.0.0.1 without TLS,
 * and a request to a loopback address never leaves the machine, so "local" is decided by the
 * host alone: no flag or environment variable can switch a deployed notifier to http.
 */
export const WEBHOOK_TRANSPORT_RULE =
  'webhookUrl must use https; http is accepted only for a loopback host (127.0.0.0/8, [::1], localhost), i.e. a local stand-in';

const allowedTransport = (text: string) => URL.parse(text)?.protocol === 'https:' || isLoopbackUrl(text);

/**
 * Where the robot's credentials live: one Secrets Manager secret per robot, as JSON
 * `{"webhookUrl": "https://oapi.dingtalk.com/robot/send?access_token=…", "secret": "SEC…",
 *   "keyword"?: "…", "atMobiles"?: ["138…"]}`.
 * Keeping all four together means rotating a robot is one secret update, and neither the access
 * token nor the signing secret ever sits in an environment variable.
 */
export const webhookSecretSchema = z.object({
  webhookUrl: z.url({ protocol: /^https?$/, abort: true }).refine(allowedTransport, WEBHOOK_TRANSPORT_RULE),
  /** The robot's "加签" secret (starts with `SEC`); optional only for robots secured by keyword or IP. */
  secret: z.string().min(1).optional(),
  /** The robot's custom keyword, if that security setting is on. */
  keyword: z.string().min(1).optional(),
  /** Mobile numbers to @-mention on ALARM. */
  atMobiles: z.array(z.string().regex(/^\+?[0-9-]{5,20}$/)).optional(),
});

export type WebhookConfig = z.infer<typeof webhookSecretSchema>;

export interface VersionedWebhookConfig extends WebhookConfig {
  /** Changes whenever the secret's content changes; tells a refresh that found nothing new. */
  version: string;
}

export interface WebhookConfigSource {
  /** Identifies the robot for rate limiting; never derived in a way that reveals the token. */
  readonly robotId: string;
  current(): Promise<VersionedWebhookConfig>;
  /** Drops the cache and reads again (after DingTalk rejected the signature or the token). */
  refresh(): Promise<VersionedWebhookConfig>;
}

export function parseWebhookSecret(secretString: string | undefined): WebhookConfig {
  if (!secretString) throw new WebhookSecretError('the webhook secret has no SecretString');
  let json: unknown;
  try {
    json = JSON.parse(secretString);
  } catch {
    throw new WebhookSecretError('the webhook secret is not JSON');
  }
  const parsed = webhookSecretSchema.safeParse(json);
  if (!parsed.success)
    throw new WebhookSecretError(
      `the webhook secret does not have the expected shape (check: ${describeIssues(parsed.error)})`,
    );
  return parsed.data;
}

/**
 * Paths, plus the messages of our own rules: zod's built-in messages can echo the offending
 * value, which may be the token; ours never do.
 */
function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((i) => `${i.path.join('.') || '(root)'}${i.code === 'custom' ? `: ${i.message}` : ''}`)
    .join(', ');
}

function fingerprint(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

/**
 * Reads the secret once per container and keeps it; Lambda reuses containers, so a storm costs one
 * GetSecretValue, not one per alarm. `refresh()` is how a rotated secret gets picked up: the
 * notifier calls it when DingTalk says the signature or token is wrong.
 */
export class SecretsManagerWebhookSource implements WebhookConfigSource {
  readonly robotId: string;
  private cached: Promise<VersionedWebhookConfig> | null = null;

  constructor(
    private readonly client: SecretsManagerClient,
    private readonly secretId: string,
  ) {
    this.robotId = `secret-${fingerprint(secretId)}`;
  }

  current(): Promise<VersionedWebhookConfig> {
    this.cached ??= this.load();
    // A failed read must not stay cached for the life of the container.
    this.cached.catch(() => {
      this.cached = null;
    });
    return this.cached;
  }

  refresh(): Promise<VersionedWebhookConfig> {
    this.cached = null;
    return this.current();
  }

  private async load(): Promise<VersionedWebhookConfig> {
    const out = await this.client.send(new GetSecretValueCommand({ SecretId: this.secretId }));
    const config = parseWebhookSecret(out.SecretString);
    return { ...config, version: fingerprint(out.SecretString ?? '') };
  }
}

/** Credentials given directly (the `alarm:test` command checking a robot before it is stored). */
export class StaticWebhookSource implements WebhookConfigSource {
  readonly robotId: string;
  private readonly config: VersionedWebhookConfig;

  constructor(config: WebhookConfig) {
    const parsed = webhookSecretSchema.safeParse(config);
    if (!parsed.success)
      throw new WebhookSecretError(`invalid robot settings (check: ${describeIssues(parsed.error)})`);
    const text = JSON.stringify(parsed.data);
    this.config = { ...parsed.data, version: fingerprint(text) };
    this.robotId = `webhook-${fingerprint(parsed.data.webhookUrl)}`;
  }

  async current(): Promise<VersionedWebhookConfig> {
    return this.config;
  }

  async refresh(): Promise<VersionedWebhookConfig> {
    return this.config;
  }
}
