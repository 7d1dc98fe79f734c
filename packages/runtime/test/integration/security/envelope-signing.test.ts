import { randomBytes, randomUUID } from 'node:crypto';
import { CreateSecretCommand, GetSecretValueCommand, PutSecretValueCommand } from '@aws-sdk/client-secrets-manager';
import { consumer, POINTS } from '@rocketmq-lambda/consumers/functions/points-consumer/handler.ts';
import { lambdaContext } from '@rocketmq-lambda/tools/local/lambda-context.ts';
import { loadRegistration } from '@rocketmq-lambda/tools/local/local-consumers.ts';
import { provisionLocal } from '@rocketmq-lambda/tools/local/provision.ts';
import {
  orderEnvelope,
  pointsFixture,
  sqsRecord,
  unsignedOrderEnvelope,
} from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { describe, expect, inject, it } from 'vitest';
import { createSecretsManager, emulatorConfig, SecretSigningKeys } from '../../../src/aws/index.ts';
import {
  CONSUMER_ENV,
  CONSUMER_GROUPS,
  lifetimeEnvironment,
  lifetimesOf,
  OUTBOX_ENV,
  TABLE_ENV,
} from '../../../src/config/index.ts';
import type { RecordReport } from '../../../src/consumer/index.ts';
import { consumerConfigFromEnv } from '../../../src/consumer/internal.ts';
import {
  InvalidSigningKeyError,
  RetrySchedule,
  type SigningKeyRing,
  signEnvelope,
  signingKeyId,
} from '../../../src/rocketmq/index.ts';

const aws = () => emulatorConfig(inject('emulatorEndpoint'));

/** A signing key secret on the emulator, as the CDK app creates it (64 letters and digits). */
async function signingSecret(value = randomBytes(48).toString('base64url').slice(0, 64)) {
  const secrets = createSecretsManager(aws());
  const name = `rmq-test-${randomUUID().slice(0, 8)}/envelope-signing-key`;
  await secrets.send(new CreateSecretCommand({ Name: name, SecretString: value }));
  return {
    name,
    key: Buffer.from(value),
    rotate: async (next: string) => {
      await secrets.send(new PutSecretValueCommand({ SecretId: name, SecretString: next }));
      return Buffer.from(next);
    },
  };
}

/** When Secrets Manager says the current version was put: the time every reader dates it by. */
async function createdDate(secretId: string): Promise<number> {
  const current = await createSecretsManager(aws()).send(
    new GetSecretValueCommand({ SecretId: secretId, VersionStage: 'AWSCURRENT' }),
  );
  return current.CreatedDate!.getTime();
}

const signed = (body: string, key: Uint8Array) => JSON.stringify(signEnvelope(JSON.parse(body), key));
const ORDER = { orderNo: 'SO202007051422310088', userId: 88372, points: 300, paidAt: '2020-07-05T14:22:31Z' };

describe('envelope signing: with ENVELOPE_SIGNING_SECRET set, the points consumer acts only on envelopes the bridge signed (emulator)', () => {
  const signedFixture = (secretName: string) =>
    pointsFixture({ envelopeKeys: new SecretSigningKeys(createSecretsManager(aws()), secretName) });

  it('reads the key ring from the function environment the CDK app writes', () => {
    const env = {
      ...Object.fromEntries(POINTS.tables.map((t) => [TABLE_ENV[t], `table-${t}`])),
      [CONSUMER_ENV.deadLetterQueueUrl]: 'http://127.0.0.1/dlq',
      [OUTBOX_ENV.table]: 'table-outbox',
      [CONSUMER_ENV.envelopeSigningSecret]:
        'arn:aws:secretsmanager:ap-northeast-1:222222222222:secret:rmq-test/envelope-signing-key-AbCdEf',
    };
    expect(consumerConfigFromEnv(POINTS, env).envelopeKeys).toBeInstanceOf(SecretSigningKeys);
    expect(() => consumerConfigFromEnv(POINTS, { ...env, [CONSUMER_ENV.envelopeSigningSecret]: '' })).toThrow(
      'ENVELOPE_SIGNING_SECRET is not set',
    );
  });

  it('a direct invocation of the handler as deployed (configured from its environment) with a forged envelope awards nothing', async () => {
    // Prepare: the points function built the way Lambda starts it, on the emulator's tables, queues and secret
    const secret = await signingSecret();
    const f = await signedFixture(secret.name);
    const queue = f.resources.queues[POINTS.group]!;
    const { lifetimes, recordTtlSeconds } = lifetimesOf(POINTS);
    const env: NodeJS.ProcessEnv = {
      AWS_ENDPOINT_URL: inject('emulatorEndpoint'),
      AWS_REGION: 'us-east-1',
      [CONSUMER_ENV.group]: POINTS.group,
      [CONSUMER_ENV.deadLetterQueueUrl]: queue.deadLetter.url,
      ...Object.fromEntries(POINTS.tables.map((t) => [TABLE_ENV[t], f.resources.tables[t]])),
      [OUTBOX_ENV.table]: f.resources.outboxTables[POINTS.group],
      ...lifetimeEnvironment(lifetimes, recordTtlSeconds),
      [CONSUMER_ENV.envelopeSigningSecret]: secret.name,
    };
    const deployed = consumer.create(consumerConfigFromEnv(POINTS, env));
    const event = (body: string) => ({ Records: [sqsRecord(body, queue.source.arn)] });
    // Act: lambda:InvokeFunction with a made-up SQS event, past every queue policy; then a genuine one
    const forged = await deployed(
      event(unsignedOrderEnvelope({ ...ORDER, orderNo: 'SO-FORGED-DIRECT', points: 1_000_000 })),
      lambdaContext('points-consumer', 30_000),
    );
    const genuine = await deployed(
      event(signed(orderEnvelope(ORDER), secret.key)),
      lambdaContext('points-consumer', 30_000),
    );
    // Assess: the forgery is dead-lettered, unread; the genuine envelope shows the handler works
    expect(forged.batchItemFailures).toEqual([]);
    expect(genuine.batchItemFailures).toEqual([]);
    expect(await f.ledger('88372')).toMatchObject([{ orderNo: ORDER.orderNo, points: 300 }]);
    expect((await f.deadLetters()).map((l) => l.attributes['failure-code'])).toEqual(['UNAUTHENTICATED_MESSAGE']);
  });

  it('awards a signed envelope, and dead-letters an unsigned one sent straight to the queue as UNAUTHENTICATED_MESSAGE without awarding', async () => {
    // Prepare
    const secret = await signingSecret();
    const f = await signedFixture(secret.name);
    // Act: the forged message names another order, so an award from it would show
    await f.send(
      signed(orderEnvelope(ORDER), secret.key),
      unsignedOrderEnvelope({ ...ORDER, orderNo: 'SO-FORGED-1', points: 1_000_000 }),
    );
    await f.drain();
    // Assess
    expect(await f.ledger('88372')).toMatchObject([{ orderNo: ORDER.orderNo, points: 300 }]);
    expect(await f.balance('88372')).toBe(300);
    const letters = await f.deadLetters();
    expect(
      letters.map((l) => [l.attributes['failure-code'], l.attributes['failure-class'], l.attributes['failure-reason']]),
    ).toEqual([['UNAUTHENTICATED_MESSAGE', 'permanent', 'the envelope is not signed']]);
    // Nothing of an unauthenticated envelope is trusted: no msgId or key is recorded for it.
    expect(letters[0]!.attributes['rocketmq-msg-id']).toBeUndefined();
  });

  it('refuses an envelope changed after signing, or signed with another key, at the first attempt', async () => {
    const secret = await signingSecret();
    const f = await signedFixture(secret.name);
    const genuine = JSON.parse(signed(orderEnvelope(ORDER), secret.key));
    const raised = { ...genuine, data: { ...genuine.data, body: JSON.stringify({ ...ORDER, points: 1_000_000 }) } };
    const otherKey = signed(orderEnvelope({ ...ORDER, orderNo: 'SO-OTHER-KEY' }), randomBytes(32));
    const response = await f.invoke([JSON.stringify(raised), otherKey]);
    expect(response.batchItemFailures).toEqual([]);
    expect(f.reports.map((r) => [r.settlement.outcome, r.attempt])).toEqual([
      ['failed', 1],
      ['failed', 1],
    ]);
    // The two records settle concurrently: their letters reach the DLQ in either order.
    const reasons = (await f.deadLetters()).map((l) => l.attributes['failure-reason']);
    expect(reasons).toHaveLength(2);
    expect(reasons).toEqual(
      expect.arrayContaining([
        "the envelope's signature matches none of the signing keys",
        expect.stringMatching(/^the envelope names signing key [\w-]{16}, which is none of the signing keys$/),
      ]),
    );
    expect(await f.ledgerMismatches()).toEqual([]);
    expect(await f.balance('88372')).toBe(0);
  });

  it('rotation: the bridge signs with the new key only once every consumer has had time to load it; both keys are accepted meanwhile', async () => {
    // Prepare: a consumer and a bridge signer that read the key before the rotation, on the test's clock
    const secret = await signingSecret();
    let now = Date.now();
    const clock = { now: () => now };
    const f = await pointsFixture({
      envelopeKeys: new SecretSigningKeys(createSecretsManager(aws()), secret.name, clock),
    });
    const bridge = new SecretSigningKeys(createSecretsManager(aws()), secret.name, clock);
    await f.invoke([signed(orderEnvelope({ ...ORDER, orderNo: 'SO-BEFORE' }), await bridge.current())]);
    // Act: rotate. The clock is set from the new version's creation time, as Secrets Manager records
    // it and every reader sees it, never from how long the emulator took: one minute after it every
    // TTL has ended but the new key is not published yet; two minutes after it, it is.
    const next = await secret.rotate(randomBytes(48).toString('base64url').slice(0, 64));
    const rotatedAt = await createdDate(secret.name);
    now = rotatedAt + 60_000;
    const stillOld = await bridge.current();
    now = rotatedAt + 120_000;
    const signingKey = await bridge.current();
    const response = await f.invoke([
      signed(orderEnvelope({ ...ORDER, orderNo: 'SO-NEW-KEY' }), signingKey),
      signed(orderEnvelope({ ...ORDER, orderNo: 'SO-OLD-KEY' }), secret.key),
    ]);
    // Assess
    expect(stillOld).toEqual(secret.key);
    expect(signingKey).toEqual(next);
    expect(response.batchItemFailures).toEqual([]);
    expect((await f.ledger('88372')).map((e) => e.orderNo).sort()).toEqual(['SO-BEFORE', 'SO-NEW-KEY', 'SO-OLD-KEY']);
    expect(await f.deadLetters()).toEqual([]);
  });

  it('a consumer that meets a key it has not loaded reads the secret again before refusing', async () => {
    const secret = await signingSecret();
    const f = await pointsFixture({
      envelopeKeys: new SecretSigningKeys(createSecretsManager(aws()), secret.name, { minReloadMs: 0 }),
    });
    await f.invoke([signed(orderEnvelope({ ...ORDER, orderNo: 'SO-BEFORE' }), secret.key)]);
    const next = await secret.rotate('r'.repeat(64));
    expect(
      (await f.invoke([signed(orderEnvelope({ ...ORDER, orderNo: 'SO-AFTER' }), next)])).batchItemFailures,
    ).toEqual([]);
    expect((await f.ledger('88372')).map((e) => e.orderNo).sort()).toEqual(['SO-AFTER', 'SO-BEFORE']);
  });

  it('accepts a signed envelope that reached the queue through EventBridge (detail re-serialised, keys reordered)', async () => {
    const secret = await signingSecret();
    const f = await signedFixture(secret.name);
    const event = JSON.parse(signed(orderEnvelope(ORDER), secret.key));
    const reordered = Object.fromEntries(Object.entries(event).reverse());
    const wrapped = JSON.stringify({
      version: '0',
      id: randomUUID(),
      'detail-type': 'mq:Topic:SendMessage',
      source: 'rocketmq.DefaultCluster',
      detail: reordered,
    });
    expect((await f.invoke([wrapped])).batchItemFailures).toEqual([]);
    expect(f.outcomes()).toEqual(['processed']);
  });

  it('fails the whole batch, for Lambda to retry, when the key cannot be read: nothing is dead-lettered for it', async () => {
    const f = await signedFixture(`rmq-test-${randomUUID().slice(0, 8)}/no-such-secret`);
    await expect(f.invoke([orderEnvelope(ORDER)])).rejects.toThrow(InvalidSigningKeyError);
    expect(await f.deadLetters()).toEqual([]);
    expect(f.reports).toEqual([]);
  });
});

describe('the signing key in Secrets Manager (emulator)', () => {
  it('accepts AWSCURRENT and AWSPREVIOUS after a rotation, and reloads at most once per interval', async () => {
    const secret = await signingSecret();
    const start = Date.now();
    let now = start;
    const keys = new SecretSigningKeys(createSecretsManager(aws()), secret.name, {
      minReloadMs: 30_000,
      activationDelayMs: 0,
      now: () => now,
    });
    expect(await keys.accepted()).toEqual([secret.key]);
    const next = await secret.rotate('n'.repeat(64));
    now = start + 10_000;
    expect(await keys.reload()).toBe(false);
    expect(await keys.current()).toEqual(secret.key);
    now = start + 30_000;
    expect(await keys.reload()).toBe(true);
    expect(await keys.current()).toEqual(next);
    expect(await keys.accepted()).toEqual([next, secret.key]);
    expect(await keys.reload()).toBe(false);
  });

  it('reads again at once for a key an envelope names and it lacks, at most once a second, and once per forged id', async () => {
    // Prepare: a ring read at `start`, counting its ListSecretVersionIds calls; sleeping moves the clock
    const secret = await signingSecret();
    const client = createSecretsManager(aws());
    let lists = 0;
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'ListSecretVersionIdsCommand') lists++;
        return next(args);
      },
      { step: 'initialize' },
    );
    const start = Date.now();
    let now = start;
    const slept: number[] = [];
    const keys = new SecretSigningKeys(client, secret.name, {
      now: () => now,
      sleep: async (ms) => {
        slept.push(ms);
        now += ms;
      },
    });
    const forged = (n: number) => signingKeyId(Buffer.from(String(n).repeat(32)));
    expect(await keys.accepted()).toEqual([secret.key]);
    const next = await secret.rotate('n'.repeat(64));
    // Act + Assess: 200 ms later, well within minReloadMs, an envelope names the new key
    now += 200;
    expect(await keys.reload({ unknownKeyIds: [signingKeyId(next)] })).toBe(true);
    expect(await keys.accepted()).toContainEqual(next);
    expect({ lists, slept }).toEqual({ lists: 2, slept: [800] });
    // A forged id: one read, then refused without reading again
    now += 5_000;
    expect(await keys.reload({ unknownKeyIds: [forged(1)] })).toBe(false);
    expect(await keys.reload({ unknownKeyIds: [forged(1)] })).toBe(false);
    expect(lists).toBe(3);
    // A flood of new forged ids at once: one read, a second after the last; it answers them all
    const flood = Array.from({ length: 20 }, (_, i) => keys.reload({ unknownKeyIds: [forged(i + 2)] }));
    expect(await Promise.all(flood)).toEqual(Array(20).fill(false));
    expect({ lists, slept }).toEqual({ lists: 4, slept: [800, 1_000] });
  });

  it('refuses a key shorter than 32 bytes, naming the secret', async () => {
    const secret = await signingSecret('short-key');
    const keys = new SecretSigningKeys(createSecretsManager(aws()), secret.name);
    await expect(keys.current()).rejects.toThrow(
      new RegExp(
        `^the envelope signing key ${secret.name} \\(version [0-9a-f-]{36}\\) has 9 bytes; at least 32 are needed$`,
      ),
    );
  });
});

describe('every group of the catalogue refuses an unsigned envelope when its function holds a signing key (emulator)', () => {
  const KEY = Buffer.from('g'.repeat(32));
  const ring: SigningKeyRing = { current: async () => KEY, accepted: async () => [KEY], reload: async () => false };

  it.each(CONSUMER_GROUPS.map((g) => [g.group, g]))('%s', async (_name, definition) => {
    // Prepare: the group's own handler module, as the local run and Lambda build it
    const resources = await provisionLocal(inject('emulatorEndpoint'), `s${randomUUID().slice(0, 8)}`, {
      groups: [definition.group],
    });
    const reports: RecordReport[] = [];
    const registration = await loadRegistration(definition);
    const handler = registration.create({
      aws: aws(),
      tables: resources.tables,
      outboxTable: resources.outboxTables[definition.group],
      deadLetterQueueUrl: resources.queues[definition.group]!.deadLetter.url,
      schedule: RetrySchedule.parse(undefined),
      envelopeKeys: ring,
      onReport: (r) => reports.push(r),
      couponServiceUrl: 'http://127.0.0.1:9',
      notificationServiceUrl: 'http://127.0.0.1:9',
    });
    const envelope = (signed: boolean) => {
      const body = unsignedOrderEnvelope({ orderNo: `SO-${randomUUID().slice(0, 8)}` }, { topic: definition.topic });
      return sqsRecord(
        signed ? JSON.stringify(signEnvelope(JSON.parse(body), KEY)) : body,
        resources.queues[definition.group]!.source.arn,
      );
    };
    const [unsigned, signedRecord] = [envelope(false), envelope(true)];
    // Act
    await handler({ Records: [unsigned, signedRecord] }, lambdaContext(definition.group, 30_000));
    // Assess: the unsigned one is refused as such; the signed one goes on to the group's own checks
    const codeOf = (record: { messageId: string }) => {
      const settlement = reports.find((r) => r.sqsMessageId === record.messageId)!.settlement;
      return settlement.outcome === 'failed' ? settlement.error.code : settlement.outcome;
    };
    expect(codeOf(unsigned)).toBe('UNAUTHENTICATED_MESSAGE');
    expect(codeOf(signedRecord)).not.toBe('UNAUTHENTICATED_MESSAGE');
  });
});
