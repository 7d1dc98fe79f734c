import { randomBytes, randomUUID } from 'node:crypto';
import { CreateSecretCommand } from '@aws-sdk/client-secrets-manager';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { describe, expect, inject, it } from 'vitest';
import { createSecretsManager, emulatorConfig, SecretSigningKeys } from '../../../lib/aws/index.ts';
import { signEnvelope } from '../../../lib/rocketmq/index.ts';
import { orderEnvelope, pointsFixture } from '../../support/points-fixture.ts';
import { ops } from './operations-fixture.ts';

const MINUTE = 60_000;
const GROUP = ['--group', 'point-consumer-group'];

/**
 * The runbook's compromise procedure on the emulator: a deployment whose signing key leaks while a
 * genuine message waits in the queue; the key is revoked, a forgery signed with it arrives, and the
 * genuine letter is re-signed after review.
 */
async function compromisedDeployment() {
  const secrets = createSecretsManager(emulatorConfig(inject('emulatorEndpoint')));
  const clock = { at: Date.now(), now: () => clock.at };
  const secretId = `k${randomUUID().slice(0, 8)}/envelope-signing-key`;
  const leaked = Buffer.from(randomBytes(48).toString('base64url').slice(0, 64));
  await secrets.send(new CreateSecretCommand({ Name: secretId, SecretString: leaked.toString() }));
  const envelopeKeys = new SecretSigningKeys(secrets, secretId, { now: clock.now });
  const f = await pointsFixture({ now: clock.now, envelopeKeys });
  /** The command line against this deployment and its signing key secret. */
  const run = (argv: string[]) =>
    ops(f, [...argv, '--signing-secret', secretId], {
      sleep: async (ms) => {
        clock.at += ms;
      },
    });
  return { f, run, leaked, clock };
}

describe('a leaked signing key: revoked at once, genuine letters re-signed after review (emulator)', () => {
  it('refuses the forgery from the revocation on, and awards the reviewed genuine letter once, with the decision in it', async () => {
    // Prepare: a genuine letter signed with the key before it leaked, waiting in the queue
    const { f, run, leaked, clock } = await compromisedDeployment();
    const genuine = { orderNo: 'SO-GENUINE', userId: '88372', points: 300 };
    await f.send(JSON.stringify(signEnvelope(JSON.parse(orderEnvelope(genuine)), leaked)));
    const [before] = (await run(['keys', 'list', '--json'])).json().versions;

    // Act 1: revoke; then a forgery made with the leaked key arrives, and a minute later the consumer runs
    const revoke = await run(['keys', 'revoke', '--version', before.versionId, '--yes', '--json']);
    const forged = { orderNo: 'SO-FORGED', userId: '666', points: 1_000_000 };
    await f.send(JSON.stringify(signEnvelope(JSON.parse(orderEnvelope(forged)), leaked)));
    const stranger = { orderNo: 'SO-STRANGER', userId: '667', points: 1 };
    await f.send(JSON.stringify(signEnvelope(JSON.parse(orderEnvelope(stranger)), randomBytes(48))));
    clock.at += MINUTE;
    await f.drain();
    // Assess 1: all three refused; nothing awarded; the key is listed as revoked and replaced
    expect(revoke.code).toBe(0);
    expect(revoke.json()).toMatchObject({ revoked: before.versionId, replacedBy: expect.any(String) });
    expect(f.reports.map((r) => r.disposition)).toEqual(
      Array.from({ length: 3 }, () => ({ action: 'dead-letter', code: 'UNAUTHENTICATED_MESSAGE' })),
    );
    const listed = (await run(['keys', 'list'])).stdout;
    expect(listed).toMatch(new RegExp(`${before.versionId} .*revoked-${before.versionId}\\s+REVOKED`));

    // Act 2: the operator reviewed SO-GENUINE against the order service and re-signs it alone
    const resign = await run([
      'dlq',
      'resign',
      ...GROUP,
      '--key',
      'SO-GENUINE',
      '--reviewed-by',
      'alice',
      '--note',
      'INC-7: matches the order service',
      '--yes',
      '--json',
    ]);
    const { Messages = [] } = await f.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: f.resources.queues['point-consumer-group']!.source.url,
        VisibilityTimeout: 0,
      }),
    );
    // …and an unfiltered run re-signs nothing that verifies with no key of the deployment
    const everything = await run([
      'dlq',
      'resign',
      ...GROUP,
      '--all',
      '--reviewed-by',
      'alice',
      '--note',
      'INC-7',
      '--dry-run',
      '--json',
    ]);
    await f.drain();
    // Assess 2
    expect(resign.code).toBe(0);
    expect(resign.json()).toMatchObject({ moved: 1 });
    expect(Messages.map((m) => JSON.parse(m.Body!))).toEqual([
      expect.objectContaining({
        resignedby: 'alice',
        resignednote: 'INC-7: matches the order service',
        resignedfrom: before.versionId,
        resignedat: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
      }),
    ]);
    expect(everything.json().heldBack.map((h: { why: string }) => h.why)).toEqual([
      'its signature verifies with no key this deployment ever had: forged, or changed after signing. It stays; find its sender in CloudTrail',
    ]);
    expect(everything.json().selected).toHaveLength(1);
    expect((await f.ledger('88372')).map((e) => [e.orderNo, e.points])).toEqual([['SO-GENUINE', 300]]);
    expect(await f.balance('666')).toBe(0);
    expect(f.reports.at(-1)).toMatchObject({ msgId: expect.any(String), disposition: { action: 'ack' } });
  });

  it('refuses to re-sign without a recorded reviewer and reason', async () => {
    const { run } = await compromisedDeployment();
    const refused = await run(['dlq', 'resign', ...GROUP, '--all', '--yes']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('give --reviewed-by <who> and --note <why>');
  });
});
