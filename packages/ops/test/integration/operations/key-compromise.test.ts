import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { GetCallerIdentityCommand } from '@aws-sdk/client-sts';
import { createSts, emulatorConfig } from '@rocketmq-lambda/runtime/aws/index.ts';
import { signEnvelope } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { orderEnvelope } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { describe, expect, inject, it } from 'vitest';
import { compromisedDeployment } from './operations-fixture.ts';

const MINUTE = 60_000;
const signed = (body: string, key: Uint8Array) => JSON.stringify(signEnvelope(JSON.parse(body), key));
const GROUP = ['--group', 'point-consumer-group'];

describe('a leaked signing key: revoked at once, genuine letters re-signed from a reviewed plan (emulator)', () => {
  it('refuses the forgeries, plans only the letter proven genuine, and re-signs it as the caller AWS names', async () => {
    // Prepare: a genuine letter signed with the key before it leaked, waiting in the queue
    const { f, run, leaked, clock } = await compromisedDeployment();
    const planFile = join(await mkdtemp(join(tmpdir(), 'resign-')), 'plan.json');
    const genuine = { orderNo: 'SO-GENUINE', userId: '88372', points: 300 };
    const storedBefore = Date.now() - 60_000;
    await f.send(signed(orderEnvelope(genuine, { storeTimestamp: storedBefore }), leaked));
    const [before] = (await run(['keys', 'list', '--json'])).json().versions;
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const compromisedSince = new Date(Date.now() - 500).toISOString();

    // Act 1: revoke; then forgeries made with the leaked key arrive, one claiming an old store time
    const revoke = await run(['keys', 'revoke', '--version', before.versionId, '--yes', '--json']);
    const forged = { orderNo: 'SO-FORGED', userId: '666', points: 1_000_000 };
    await f.send(signed(orderEnvelope(forged, { storeTimestamp: storedBefore }), leaked));
    const stranger = { orderNo: 'SO-STRANGER', userId: '667', points: 1 };
    await f.send(signed(orderEnvelope(stranger), randomBytes(48)));
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

    // Act 2: the plan, proven by dates (the queue took SO-GENUINE before the compromise)
    const plan = await run([
      'dlq',
      'resign',
      ...GROUP,
      '--plan',
      planFile,
      '--compromised-since',
      compromisedSince,
      '--json',
    ]);
    // Assess 2: only the genuine letter is planned; the backdated forgery and the stranger are left out, with why
    expect(plan.code).toBe(1);
    const written = JSON.parse(await readFile(planFile, 'utf8'));
    expect(written.letters).toEqual([
      expect.objectContaining({ key: 'SO-GENUINE', proof: expect.objectContaining({ kind: 'sent-before' }) }),
    ]);
    expect(Object.fromEntries(plan.json().leftOut.map((l: { key: string; why: string }) => [l.key, l.why]))).toEqual({
      'SO-FORGED': expect.stringMatching(
        /^RocketMQ was not asked .*; it entered the source queue at .*, not both before/,
      ),
      'SO-STRANGER': expect.stringContaining('verifies with no key this deployment ever had'),
    });

    // Act 3: the reviewed plan applied, as the caller STS names
    const apply = await run([
      'dlq',
      'resign',
      ...GROUP,
      '--apply',
      '--plan',
      planFile,
      '--note',
      'INC-7',
      '--yes',
      '--json',
    ]);
    const { Messages = [] } = await f.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: f.resources.queues['point-consumer-group']!.source.url,
        VisibilityTimeout: 0,
      }),
    );
    await f.drain();
    // Assess 3: re-signed with the caller's ARN, the proof and the plan; logged; awarded once
    expect(apply.code).toBe(0);
    expect(apply.json()).toMatchObject({ moved: 1 });
    const caller = (await createSts(emulatorConfig(inject('emulatorEndpoint'))).send(new GetCallerIdentityCommand({})))
      .Arn;
    expect(Messages.map((m) => JSON.parse(m.Body!))).toEqual([
      expect.objectContaining({
        resignedby: caller,
        resignednote: 'INC-7',
        resignedfrom: before.versionId,
        resignedproof: 'sent-before',
        resignedplan: written.digest,
        resignedat: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
      }),
    ]);
    const logged = apply.stderr
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l));
    expect(logged).toEqual([
      expect.objectContaining({ event: 'dlq-resign', by: caller, key: 'SO-GENUINE', plan: written.digest }),
    ]);
    expect((await f.ledger('88372')).map((e) => [e.orderNo, e.points])).toEqual([['SO-GENUINE', 300]]);
    expect(await f.balance('666')).toBe(0);
  });

  it('refuses --all, a reviewer given by name, a plan edited after the review, and an apply without a reason', async () => {
    const { run } = await compromisedDeployment();
    const planFile = join(await mkdtemp(join(tmpdir(), 'resign-')), 'plan.json');
    const all = await run([
      'dlq',
      'resign',
      ...GROUP,
      '--all',
      '--plan',
      planFile,
      '--compromised-since',
      '2026-12-01T00:00:00Z',
    ]);
    const named = await run(['dlq', 'resign', ...GROUP, '--plan', planFile, '--reviewed-by', 'alice']);
    const unproven = await run(['dlq', 'resign', ...GROUP, '--plan', planFile]);
    await run(['dlq', 'resign', ...GROUP, '--plan', planFile, '--compromised-since', '2026-12-01T00:00:00Z']);
    const edited = JSON.parse(await readFile(planFile, 'utf8'));
    edited.letters.push({
      msgId: 'X',
      letterSha256: 'y',
      proof: { kind: 'sent-before', compromisedSince: 'a', sourceSentAt: 'b', storeTimestamp: 1 },
    });
    await writeFile(planFile, JSON.stringify(edited));
    const tampered = await run(['dlq', 'resign', ...GROUP, '--apply', '--plan', planFile, '--note', 'INC-7', '--yes']);
    const reasonless = await run(['dlq', 'resign', ...GROUP, '--apply', '--plan', planFile, '--yes']);
    expect([all, named, unproven, tampered, reasonless].map((r) => r.code)).toEqual([2, 2, 2, 2, 2]);
    expect(all.stderr).toContain('dlq resign never takes --all');
    expect(named.stderr).toContain('leave out --reviewed-by');
    expect(unproven.stderr).toContain('--bridge-config <the bridge config file>');
    expect(tampered.stderr).toContain('was edited after the dry run wrote it');
    expect(reasonless.stderr).toContain('give --note <why>');
  });
});
