import { randomUUID } from 'node:crypto';
import { CreateSecretCommand } from '@aws-sdk/client-secrets-manager';
import { createSecretsManager, emulatorConfig } from '@rocketmq-lambda/runtime/aws/index.ts';
import { generateSigningKey, type SigningKeyRing, StaticSigningKeys } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { inject } from 'vitest';

/**
 * A generated envelope signing key in the emulator's Secrets Manager, as the CDK app keeps one: the
 * bridge child process signs with the secret (`signing.secretId`), the consumer verifies with `ring`.
 */
export async function bridgeSigningKey(): Promise<{ secretId: string; ring: SigningKeyRing }> {
  // The secret holds text, as the CDK app's does; its bytes are the key.
  const value = Buffer.from(generateSigningKey()).toString('base64url');
  const secrets = createSecretsManager(emulatorConfig(inject('emulatorEndpoint')));
  const { ARN } = await secrets.send(
    new CreateSecretCommand({ Name: `b${randomUUID().slice(0, 8)}/envelope-signing-key`, SecretString: value }),
  );
  secrets.destroy();
  return { secretId: ARN!, ring: new StaticSigningKeys(Buffer.from(value)) };
}
