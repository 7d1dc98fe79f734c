import { CreateSecretCommand } from '@aws-sdk/client-secrets-manager';
import { POINTS_GROUP } from '@rocketmq-lambda/consumers/functions/points-consumer/handler.ts';
import { createSecretsManager, emulatorConfig, SecretSigningKeys } from '@rocketmq-lambda/runtime/aws/index.ts';
import { signingKeySecretName } from '@rocketmq-lambda/runtime/config/index.ts';
import type { SigningKeyRing } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { pointsFixture } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { describe, expect, inject, it } from 'vitest';
import { sendTestOrder } from '../../../src/command/send-test-order.ts';

describe('npm run send-test-order: the sandbox recipe’s test message', () => {
  it('is signed with the stage’s key, so the stage’s consumer applies it, once however often it is sent', async () => {
    // Prepare: a stage's tables and queue, and its points consumer verifying with the stage's secret, as deployed
    const aws = emulatorConfig(inject('emulatorEndpoint'));
    const secrets = createSecretsManager(aws);
    let stageKeys: SecretSigningKeys | undefined;
    const keys: SigningKeyRing = {
      current: () => stageKeys!.current(),
      accepted: () => stageKeys!.accepted(),
      reload: () => stageKeys!.reload(),
    };
    const stage = await pointsFixture({ envelopeKeys: keys });
    const prefix = stage.resources.prefix;
    await secrets.send(new CreateSecretCommand({ Name: signingKeySecretName(prefix), SecretString: 'k'.repeat(64) }));
    stageKeys = new SecretSigningKeys(secrets, signingKeySecretName(prefix));
    const order = { aws, prefix, group: POINTS_GROUP, orderNo: 'SO-SANDBOX-1', userId: 'u-sandbox', points: 100 };

    // Act: sent twice, as a person trying it might
    await sendTestOrder(order);
    await sendTestOrder(order);
    await stage.drain();

    // Assess
    expect(stage.outcomes().sort()).toEqual(['duplicate', 'processed']);
    expect(await stage.balance('u-sandbox')).toBe(100);
    expect(await stage.deadLetters()).toEqual([]);
  });

  it('a message the stage’s key did not sign is dead-lettered: the reason the recipe needs this command', async () => {
    // Prepare
    const aws = emulatorConfig(inject('emulatorEndpoint'));
    const secrets = createSecretsManager(aws);
    const other = await pointsFixture();
    const prefix = other.resources.prefix;
    await secrets.send(new CreateSecretCommand({ Name: signingKeySecretName(prefix), SecretString: 'o'.repeat(64) }));

    // Act: signed with this stage's secret, consumed by a consumer holding another key
    await sendTestOrder({ aws, prefix, group: POINTS_GROUP, orderNo: 'SO-SANDBOX-2', userId: 'u-x', points: 1 });
    await other.drain();

    // Assess
    expect(other.outcomes()).toEqual(['failed']);
    expect((await other.deadLetters()).map((l) => l.attributes['failure-code'])).toEqual(['UNAUTHENTICATED_MESSAGE']);
  });
});
