import { randomBytes, randomUUID } from 'node:crypto';
import {
  CreateSecretCommand,
  GetSecretValueCommand,
  PutSecretValueCommand,
  type SecretsManagerClient,
  UpdateSecretVersionStageCommand,
} from '@aws-sdk/client-secrets-manager';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { revokeSigningKey, signingKeyVersions } from '@rocketmq-lambda/ops/operations/index.ts';
import { ops } from '@rocketmq-lambda/ops/test/integration/operations/operations-fixture.ts';
import { orderEnvelope, pointsFixture } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { queueDepth } from '@rocketmq-lambda/tools/testing/queue-reading.ts';
import { describe, expect, inject, it } from 'vitest';
import { createSecretsManager, emulatorConfig, SecretSigningKeys } from '../../../src/aws/index.ts';
import { lifetimesOf } from '../../../src/config/index.ts';
import { signEnvelope } from '../../../src/rocketmq/index.ts';

const MINUTE = 60_000;
const DAY = 86_400_000;
const newValue = () => randomBytes(48).toString('base64url').slice(0, 64);

const secretsClient = () => createSecretsManager(emulatorConfig(inject('emulatorEndpoint')));

/** A signing key secret on the emulator, and a clock the consumer, the bridge and ops share. */
async function signingSecret() {
  const secrets = secretsClient();
  const name = `rmq-test-${randomUUID().slice(0, 8)}/envelope-signing-key`;
  const first = newValue();
  await secrets.send(new CreateSecretCommand({ Name: name, SecretString: first }));
  return {
    secrets,
    name,
    key: Buffer.from(first),
    /**
     * `ops keys revoke`'s work: a version out of every ring, replaced when it is the current one. It waits for the
     * rings on `clock`, running `duringWait` first (what happens while the operator waits).
     */
    revoke: (
      versionId: string,
      clock: { at: number },
      options: { through?: SecretsManagerClient; duringWait?: () => Promise<void> } = {},
    ) =>
      revokeSigningKey({
        secrets: options.through ?? secrets,
        secretId: name,
        versionId,
        newKey: newValue,
        sleep: async (ms) => {
          await options.duringWait?.();
          clock.at += ms;
        },
      }),
    /** Puts a new value; returns it and when Secrets Manager says it was created (the ring's reference). */
    rotate: async () => {
      const value = newValue();
      await secrets.send(new PutSecretValueCommand({ SecretId: name, SecretString: value }));
      return { key: Buffer.from(value), createdAt: await createdAt(secrets, name) };
    },
  };
}

async function createdAt(secrets: SecretsManagerClient, secretId: string): Promise<number> {
  const current = await secrets.send(new GetSecretValueCommand({ SecretId: secretId, VersionStage: 'AWSCURRENT' }));
  return current.CreatedDate!.getTime();
}

const signed = (body: string, key: Uint8Array) => JSON.stringify(signEnvelope(JSON.parse(body), key));
const order = (orderNo: string) => ({ orderNo, userId: '88372', points: 300 });
/** As the bridge writes it: stored by the broker at `at`, signed with `key`. */
const bridged = (orderNo: string, key: Uint8Array, at: number) =>
  signed(orderEnvelope(order(orderNo), { bornTimestamp: at, storeTimestamp: at }), key);

/** A clock the consumer, the bridge and ops share: `at` moves only when the test moves it. */
function testClock() {
  const clock = { at: Date.now(), now: () => clock.at };
  return clock;
}

/** A points consumer whose key ring reads the secret on `clock`, with the retention the deployed function derives. */
async function consumerOn(secretName: string, clock = testClock()) {
  const { lifetimes } = lifetimesOf({});
  const keys = new SecretSigningKeys(secretsClient(), secretName, {
    now: clock.now,
    retentionMs: lifetimes.signingKeyRetentionSeconds * 1000,
  });
  return { f: await pointsFixture({ now: clock.now, envelopeKeys: keys }), keys, clock };
}

describe('a genuine envelope verifies for as long as a copy of it can come back (emulator)', () => {
  it('a letter dead-lettered, then redriven after two rotations 31 minutes apart', async () => {
    // Prepare: the bridge signs a letter with the first key; the consumer never gets to it
    const secret = await signingSecret();
    const { f, clock } = await consumerOn(secret.name);
    await f.send(bridged('SO-LETTER', secret.key, clock.at));
    // SQS's redrive policy moves it after 17 receives nobody deletes (a consumer crashing each time).
    for (let i = 0; i < 18; i++)
      await f.sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: f.resources.queues['point-consumer-group']!.source.url,
          VisibilityTimeout: 0,
        }),
      );
    expect(await queueDepth(f.sqs, f.resources.queues['point-consumer-group']!.deadLetter.url)).toEqual({
      visible: 1,
      inFlight: 0,
    });
    // Act: two rotations as the runbook allows them, 31 minutes apart; then the redrive
    const second = await secret.rotate();
    clock.at = second.createdAt + 31 * MINUTE;
    const third = await secret.rotate();
    clock.at = third.createdAt + 31 * MINUTE;
    const redrive = await ops(f, ['dlq', 'redrive', '--group', 'point-consumer-group', '--all', '--yes'], {
      now: () => new Date(clock.at),
    });
    await f.drain();
    // Assess: awarded once, nothing dead-lettered again
    expect(redrive.code).toBe(0);
    expect(f.reports.map((r) => r.settlement.outcome)).toEqual(['processed']);
    expect((await f.ledger('88372')).map((e) => e.orderNo)).toEqual(['SO-LETTER']);
    expect(await f.deadLetters()).toEqual([]);
  });

  it('a 4-day source-queue backlog signed before two rotations, and a 7-day archive replay', async () => {
    // Prepare: both signed with the first key; the consumer is stalled
    const secret = await signingSecret();
    const { f, clock } = await consumerOn(secret.name);
    const start = clock.at;
    await f.send(bridged('SO-BACKLOG', secret.key, start));
    const replayed = JSON.stringify({
      version: '0',
      id: randomUUID(),
      'detail-type': 'mq:Topic:SendMessage',
      source: 'rocketmq.DefaultCluster',
      time: new Date(start).toISOString(),
      detail: JSON.parse(bridged('SO-REPLAYED', secret.key, start)),
    });
    // Act: two rotations; 4 days later the consumer drains the backlog; on day 7 the archive is replayed
    await secret.rotate();
    await secret.rotate();
    clock.at = start + 4 * DAY;
    await f.drain();
    clock.at = start + 7 * DAY;
    await f.send(replayed);
    await f.drain();
    // Assess
    expect(f.reports.map((r) => r.settlement.outcome)).toEqual(['processed', 'processed']);
    expect((await f.ledger('88372')).map((e) => e.orderNo).sort()).toEqual(['SO-BACKLOG', 'SO-REPLAYED']);
  });

  it('a retired key stops verifying once it has been retired longer than a copy can live', async () => {
    const secret = await signingSecret();
    const { f, keys, clock } = await consumerOn(secret.name);
    const next = await secret.rotate();
    const retention = lifetimesOf({}).lifetimes.signingKeyRetentionSeconds * 1000;
    // The first key retires when the second starts signing, two minutes after it was put.
    clock.at = next.createdAt + 2 * MINUTE + retention;
    expect(await keys.accepted()).toEqual([next.key, secret.key]);
    clock.at += 1;
    await keys.reload();
    expect(await keys.accepted()).toEqual([next.key]);
    await f.invoke([bridged('SO-TOO-OLD', secret.key, clock.at)]);
    expect(f.reports.map((r) => r.disposition)).toEqual([{ action: 'dead-letter', code: 'UNAUTHENTICATED_MESSAGE' }]);
  });
});

describe('revoking a compromised key (emulator)', () => {
  it('takes it out of every ring by the time the revoke returns, and the bridge signs with its replacement at once', async () => {
    // Prepare: a consumer and a bridge that hold the first key
    const secret = await signingSecret();
    const { f, clock } = await consumerOn(secret.name);
    const bridge = new SecretSigningKeys(secretsClient(), secret.name, clock);
    await f.invoke([bridged('SO-BEFORE', await bridge.current(), clock.at)]);
    const [first] = await signingKeyVersions(secret.secrets, secret.name);
    // Act: the key leaked; revoke it without waiting for anything
    const result = await secret.revoke(first!.versionId, clock);
    const signingKey = await bridge.current();
    await f.invoke([bridged('SO-FORGED', secret.key, clock.at), bridged('SO-AFTER', signingKey, clock.at)]);
    // Assess: the replacement signs with no publication delay; the revoked key verifies nothing more
    expect(result.revoked).toBe(first!.versionId);
    expect(result.replacedBy).toBeDefined();
    expect(Buffer.from(signingKey).equals(secret.key)).toBe(false);
    expect((await f.deadLetters()).map((l) => l.attributes['failure-code'])).toEqual(['UNAUTHENTICATED_MESSAGE']);
    expect((await f.ledger('88372')).map((e) => e.orderNo).sort()).toEqual(['SO-AFTER', 'SO-BEFORE']);
    expect(
      (await signingKeyVersions(secret.secrets, secret.name)).find((v) => v.versionId === first!.versionId),
    ).toMatchObject({ revoked: true });
  });

  it('a consumer that read its keys seconds before the revocation accepts the replacement at once', async () => {
    // Prepare: the consumer reads its ring with a genuine order 10 s before the key leaks
    const secret = await signingSecret();
    const { f, clock } = await consumerOn(secret.name);
    await f.invoke([bridged('SO-BEFORE', secret.key, clock.at)]);
    const [first] = await signingKeyVersions(secret.secrets, secret.name);
    clock.at += 10_000;
    // Act: while the revoke waits, a bridge signs with the replacement and the consumer gets it within its throttle
    let response: Awaited<ReturnType<typeof f.invoke>> | undefined;
    await secret.revoke(first!.versionId, clock, {
      duringWait: async () => {
        const bridge = new SecretSigningKeys(secretsClient(), secret.name, clock);
        clock.at += 1_000;
        response = await f.invoke([bridged('SO-AFTER', await bridge.current(), clock.at)]);
      },
    });
    // Assess: the genuine order is awarded, nothing is dead-lettered
    expect(response?.batchItemFailures).toEqual([]);
    expect(await f.deadLetters()).toEqual([]);
    expect((await f.ledger('88372')).map((e) => e.orderNo).sort()).toEqual(['SO-AFTER', 'SO-BEFORE']);
  });

  it('a ring that reads the secret between the replacement and the label never signs with the revoked key', async () => {
    // Prepare: ops' client, which lets a bridge read the secret right after each call it makes
    const secret = await signingSecret();
    const clock = testClock();
    const [first] = await signingKeyVersions(secret.secrets, secret.name);
    const revoking = secretsClient();
    const signedWith: Array<{ after: string; key: Uint8Array }> = [];
    revoking.middlewareStack.add(
      (next, context) => async (args) => {
        const result = await next(args);
        const bridge = new SecretSigningKeys(secretsClient(), secret.name, { now: clock.now, prefetch: false });
        signedWith.push({ after: context.commandName!, key: await bridge.current() });
        return result;
      },
      { step: 'initialize' },
    );
    // Act
    await secret.revoke(first!.versionId, clock, { through: revoking });
    // Assess: once the replacement exists, no bridge that reads the secret signs with the leaked key
    const afterPut = signedWith.slice(signedWith.findIndex((s) => s.after === 'PutSecretValueCommand'));
    expect(afterPut.length).toBeGreaterThan(0);
    for (const { after, key } of afterPut)
      expect({ after, leaked: Buffer.from(key).equals(secret.key) }).toEqual({ after, leaked: false });
  });

  it('no bridge signs with the revoked key once the revoke has returned, however recently it read the secret', async () => {
    // Prepare: a bridge that read the secret a second before the revocation
    const secret = await signingSecret();
    const clock = testClock();
    const bridge = new SecretSigningKeys(secretsClient(), secret.name, clock);
    expect(await bridge.current()).toEqual(secret.key);
    const [first] = await signingKeyVersions(secret.secrets, secret.name);
    clock.at += 1_000;
    // Act: the revoke waits on the shared clock
    await secret.revoke(first!.versionId, clock);
    // Assess
    expect(Buffer.from(await bridge.current()).equals(secret.key)).toBe(false);
  });

  it('a version revoked after it retired is refused at once, though still within its retention', async () => {
    const secret = await signingSecret();
    const { keys, clock } = await consumerOn(secret.name);
    const [first] = await signingKeyVersions(secret.secrets, secret.name);
    const next = await secret.rotate();
    clock.at = next.createdAt + 10 * MINUTE;
    expect(await keys.accepted()).toEqual([next.key, secret.key]);
    const result = await secret.revoke(first!.versionId, clock);
    expect(result.replacedBy).toBeUndefined();
    expect(await keys.accepted()).toEqual([next.key]);
  });

  it('a ring whose current key is revoked refuses to work until a new key is put', async () => {
    const secret = await signingSecret();
    const [first] = await signingKeyVersions(secret.secrets, secret.name);
    await secret.secrets.send(
      new UpdateSecretVersionStageCommand({
        SecretId: secret.name,
        VersionStage: `revoked-${first!.versionId}`,
        MoveToVersionId: first!.versionId,
      }),
    );
    const keys = new SecretSigningKeys(secret.secrets, secret.name);
    await expect(keys.current()).rejects.toThrow('is revoked: put a new value');
  });
});
