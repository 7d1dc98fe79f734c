import { createHash } from 'node:crypto';
import { mkdtemp, readFile, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createDynamoDb, emulatorConfig } from '@rocketmq-lambda/runtime/aws/index.ts';
import { type LocalRedis, startLocalRedis } from '@rocketmq-lambda/tools/legacy/local-redis.ts';
import { orderEnvelope, pointsFixture } from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awardThroughConsumer, ops } from '../operations/operations-fixture.ts';
import { OpsProcess, recordsOf, reviewedImport } from './migration-fixture.ts';

/**
 * `ops migrate import` from the article's Redis variant (`SET mq:dedup:point:<orderNo> 1 NX EX
 * 86400`, a real redis-server) and from CSV / JSONL exports of the award table.
 */
let redis: LocalRedis;
let client: Redis;

beforeAll(async () => {
  redis = await startLocalRedis();
  client = redis.connect();
}, 60_000);

afterAll(async () => {
  await redis?.stop();
});

const scratch = async (name: string) => join(await mkdtemp(join(tmpdir(), 'import-')), name);

/** Fails the nth write after `after` writes went through: the import stops in the middle of a page. */
function failWritesAfter(client: DynamoDBDocumentClient, after: number) {
  let seen = 0;
  client.middlewareStack.add(
    (next) => async (args) => {
      if (args.input && 'Item' in (args.input as object) && ++seen > after)
        throw Object.assign(new Error('connection reset by peer'), { name: 'NetworkingError', $retryable: undefined });
      return next(args);
    },
    { step: 'initialize', name: 'failWritesAfter' },
  );
}

describe('ops migrate import from Redis SET NX keys', () => {
  it('refuses 24 h keys against 72 h of %DLQ% retention, naming both settings, before reading anything', async () => {
    const f = await pointsFixture();
    const refused = await ops(f, [
      'migrate',
      'import',
      '--source',
      redis.url,
      '--group',
      'point-consumer-group',
      '--ledger',
      'kept',
      '--yes',
    ]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      /legacy dedup keys expire after 86400s .* can come back for 276340s .*fileReservedTime 72 h/,
    );
    expect(await recordsOf(f)).toEqual([]);
  });

  it('imports the keys as records without content: a copy is an unverified duplicate, even with other content; a resumed run imports every key once', async () => {
    // Prepare: 300 keys as the legacy consumer set them, one set an hour ago; one key of another prefix
    const f = await pointsFixture();
    const keys = Array.from({ length: 300 }, (_, i) => `mq:dedup:point:SO-R${String(i).padStart(4, '0')}`);
    for (const key of keys) await client.set(key, '1', 'EX', 86_400, 'NX');
    await client.set(keys[0]!, '1', 'EX', 86_400 - 3_600);
    await client.set('mq:dedup:coupon:SO-R0001', '1', 'EX', 86_400);
    const args = [
      'migrate',
      'import',
      '--source',
      redis.url,
      '--pattern',
      'mq:dedup:point:*',
      '--group',
      'point-consumer-group',
      '--ledger',
      'kept',
      '--accept-expired-keys',
      '--page-size',
      '50',
      '--checkpoint',
      await scratch('checkpoint.json'),
      '--yes',
      '--json',
    ];

    // Act: the first run loses DynamoDB after 120 writes; the second resumes from the SCAN cursor
    const failing = createDynamoDb(emulatorConfig(f.resources.endpoint));
    failWritesAfter(failing, 120);
    const interrupted = await ops(f, args, { dynamoDb: failing });
    const resumed = await ops(f, args);
    await f.invoke([
      orderEnvelope({ orderNo: 'SO-R0000', userId: 1, points: 300 }),
      orderEnvelope({ orderNo: 'SO-R0001', userId: 2, points: 999 }),
    ]);

    // Assess: interrupted with a resumable error, then completed: every key once, no fingerprint
    expect(interrupted.code).toBe(2);
    expect(interrupted.stderr).toMatch(/import interrupted after \d+ rows: .*run the same command again to resume/);
    expect(resumed.code).toBe(0);
    expect(resumed.json().resumedFrom).toBeDefined();
    expect(resumed.json().counts).toMatchObject({ imported: 300, unverified: resumed.json().counts.read });
    const records = await recordsOf(f);
    expect(records.map((r) => r.key).sort()).toEqual(keys.map((k) => k.slice('mq:dedup:point:'.length)));
    expect(records.every((r) => r.fingerprint === undefined && r.origin === 'legacy-import')).toBe(true);
    // The key set an hour earlier became a record an hour older
    const first = records.find((r) => r.key === 'SO-R0000')!;
    const other = records.find((r) => r.key === 'SO-R0002')!;
    expect(Date.parse(other.createdAt) - Date.parse(first.createdAt)).toBeGreaterThan(3_590_000);
    // Assess: the consumer takes both copies as duplicates it could not check
    expect(f.reports.map((r) => [r.key, r.settlement])).toEqual([
      ['SO-R0000', expect.objectContaining({ outcome: 'duplicate', reason: 'legacy-record-unverified' })],
      ['SO-R0001', expect.objectContaining({ outcome: 'duplicate', reason: 'legacy-record-unverified' })],
    ]);
  }, 120_000);
});

describe('ops migrate import from an export', () => {
  const header = 'id,order_no,user_id,point,create_time';

  it('resumes a CSV import after a kill, re-runs without writing, and reports conflicting and invalid lines', async () => {
    // Prepare: 200 good lines, a few bad ones; the consumer here already awarded SO-E0007 to another user
    const f = await pointsFixture();
    await awardThroughConsumer(f, [{ orderNo: 'SO-E0007', userId: 'someone-else', points: 1 }]);
    const lines = Array.from(
      { length: 200 },
      (_, i) => `${i + 1},SO-E${String(i).padStart(4, '0')},${500 + (i % 9)},${1 + (i % 3)},2026-11-30 10:00:00`,
    );
    lines.splice(60, 0, '9001,"SO ""Q""",1,1,2026-11-30 10:00:00', '9002,SO-X,1', '9003,SO-T,1,1,yesterday');
    const csv = await scratch('t_point_record.csv');
    await writeFile(csv, `\uFEFF${header}\r\n${lines.join('\r\n')}\r\n`);
    const checkpoint = await scratch('checkpoint.json');
    const args = await reviewedImport(f, [
      'migrate',
      'import',
      '--source',
      csv,
      '--time-zone',
      '+08:00',
      '--group',
      'point-consumer-group',
      '--ledger',
      'moved',
      '--page-size',
      '40',
      '--concurrency',
      '2',
      '--checkpoint',
      checkpoint,
      '--yes',
      '--json',
    ]);

    // Act
    const killed = new OpsProcess(f, args);
    await killed.killAfterPages(checkpoint, 40, 2);
    const resumed = await ops(f, args);
    const rerun = await ops(
      f,
      args.filter((a) => a !== checkpoint && a !== '--checkpoint'),
    );

    // Assess
    expect(killed.child.signalCode).toBe('SIGKILL');
    expect(resumed.code).toBe(1);
    const report = resumed.json();
    expect(report.counts).toMatchObject({ read: 203, imported: 199, conflicting: 1, invalid: 3 });
    expect(report.invalidReasons).toEqual({
      'orderNo must be printable ASCII without spaces': 1,
      '3 fields, the header has 5': 1,
      'create_time "yesterday" is not a time': 1,
    });
    expect(report.rejected).toContainEqual(
      expect.objectContaining({ kind: 'conflicting', ref: 'line 9 (id 8)', orderNo: 'SO-E0007' }),
    );
    expect(await f.ledgerMismatches()).toEqual([]);
    const user500 = lines.filter((l) => l.split(',')[2] === '500' && !l.includes('SO-E0007'));
    expect(await f.balance('500')).toBe(user500.reduce((n, l) => n + Number(l.split(',')[3]), 0));
    expect(rerun.json().counts).toMatchObject({ imported: 0, alreadyPresent: 199, conflicting: 1 });
    const awarded = (await f.ledger('500'))[0]!;
    expect(awarded).toMatchObject({ origin: 'legacy-import', createdAt: '2026-11-30T02:00:00.000Z' });
  }, 120_000);

  it('--since reads JSONL times in the zone given, and refuses times without a zone when none is given', async () => {
    const f = await pointsFixture();
    const jsonl = await scratch('awards.jsonl');
    await writeFile(
      jsonl,
      [
        { order_no: 'SO-J1', user_id: 1, point: 1, create_time: '2026-11-30 09:59:59' },
        { order_no: 'SO-J2', user_id: 1, point: 1, create_time: '2026-11-30 10:00:00' },
        { order_no: 'SO-J3', user_id: 1, point: 1, create_time: '2026-11-30T02:30:00Z' },
      ]
        .map((o) => JSON.stringify(o))
        .join('\n'),
    );
    const args = [
      'migrate',
      'import',
      '--source',
      jsonl,
      '--group',
      'point-consumer-group',
      '--ledger',
      'kept',
      '--yes',
    ];
    const since = ['--since', '2026-11-30T02:00:00Z'];

    const withoutZone = await ops(f, [...args, ...since]);
    const delta = await ops(f, [...args, ...since, '--time-zone', '+08:00', '--json']);

    expect(withoutZone.code).toBe(2);
    expect(withoutZone.stderr).toMatch(/create_time "2026-11-30 09:59:59" carries no time zone: .*--time-zone/);
    expect(delta.json().counts).toMatchObject({ read: 2, imported: 2 });
    expect((await recordsOf(f)).map((r) => r.key).sort()).toEqual(['SO-J2', 'SO-J3']);
  }, 60_000);

  it('keeps every digit of a numeric order number past 2^53 in a JSONL export', async () => {
    // Prepare: the order number as a JSON number, as some exporters write a BIGINT
    const f = await pointsFixture();
    const jsonl = await scratch('awards.jsonl');
    await writeFile(
      jsonl,
      '{"id":1,"order_no":202007051422310088,"user_id":88372,"point":300,"create_time":"2026-11-30T02:00:00Z"}\n' +
        '{"id":2,"order_no":202007051422310089,"user_id":9007199254740993,"point":5,"create_time":"2026-11-30T02:00:00Z"}\n',
    );

    // Act
    const result = await ops(f, await reviewedImport(f, [...exportImport(jsonl, 'moved'), '--json']));

    // Assess: the keys are the source's, to the last digit
    expect(result.code).toBe(0);
    expect((await recordsOf(f)).map((r) => r.key).sort()).toEqual(['202007051422310088', '202007051422310089']);
    expect((await f.ledger('88372')).map((e) => e.entryId)).toEqual(['AWARD#202007051422310088']);
    expect((await f.ledger('9007199254740993')).map((e) => e.entryId)).toEqual(['AWARD#202007051422310089']);
  }, 60_000);

  it('refuses to resume over an export rewritten since the interrupted run, or a checkpoint edited by hand (exit 2)', async () => {
    // Prepare: an import of 120 lines interrupted after its first pages
    const f = await pointsFixture();
    const csv = await scratch('t_point_record.csv');
    const line = (i: number) => `${i + 1},SO-W${String(i).padStart(4, '0')},${700 + (i % 5)},1,2026-11-30T02:00:00Z`;
    const original = `${header}\n${Array.from({ length: 120 }, (_, i) => line(i)).join('\n')}\n`;
    await writeFile(csv, original);
    const checkpoint = await scratch('checkpoint.json');
    const args = [
      ...exportImport(csv, 'kept'),
      '--page-size',
      '20',
      '--concurrency',
      '1',
      '--checkpoint',
      checkpoint,
      '--json',
    ];
    const failing = createDynamoDb(emulatorConfig(f.resources.endpoint));
    failWritesAfter(failing, 50);
    expect((await ops(f, args, { dynamoDb: failing })).code).toBe(2);
    const saved = JSON.parse(await readFile(checkpoint, 'utf8'));
    expect(saved.position).toMatch(/^\d+:41:[0-9a-f]{64}$/);

    // Act: the export is rewritten without its 10th line (every later row moves up); then the original
    // comes back, and the checkpoint's position is moved on by hand
    await writeFile(csv, original.replace(`${line(9)}\n`, ''));
    const rewritten = await ops(f, args);
    await writeFile(csv, original);
    await writeFile(checkpoint, JSON.stringify({ ...saved, position: saved.position.replace(/^\d+:41:/, '2000:60:') }));
    const edited = await ops(f, args);

    // Assess: neither resumed; nothing past the interrupted run's pages was written
    expect(rewritten.code).toBe(2);
    expect(rewritten.stderr).toMatch(
      /t_point_record\.csv changed since the interrupted run read it \(its first \d+ bytes are not the ones read\).*Start a new run/,
    );
    expect(edited.code).toBe(2);
    expect(edited.stderr).toMatch(/checkpoint\.json was changed after the import wrote it .*Start a new run/);
    expect((await recordsOf(f)).length).toBeLessThanOrEqual(50);
  }, 60_000);

  it('--sha256: imports the export whose checksum was published, refuses another file before reading a row', async () => {
    // Prepare
    const f = await pointsFixture();
    const csv = await scratch('t_point_record.csv');
    const text = `${header}\n1,SO-H1,1,1,2026-11-30T02:00:00Z\n`;
    await writeFile(csv, text);
    const published = createHash('sha256').update(text).digest('hex');

    // Act
    const tampered = await scratch('t_point_record.csv');
    await writeFile(tampered, text.replace('SO-H1,1,1', 'SO-H1,2,1'));
    const refused = await ops(f, [...exportImport(tampered, 'kept'), '--sha256', published]);
    const imported = await ops(f, [...exportImport(csv, 'kept'), '--sha256', published, '--json']);

    // Assess
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/its SHA-256 is [0-9a-f]{64}, not the [0-9a-f]{64} given \(--sha256\)/);
    expect(imported.code).toBe(0);
    expect((await recordsOf(f)).map((r) => r.key)).toEqual(['SO-H1']);
  }, 60_000);

  it('writes the checkpoint and the rejects file readable by their owner only (0600)', async () => {
    // Prepare: an export with a row that is rejected; a rejects file that already exists, world-readable
    const f = await pointsFixture();
    const csv = await scratch('t_point_record.csv');
    await writeFile(csv, `${header}\n1,SO-P1,1,1,2026-11-30T02:00:00Z\n2,SO P2,1,1,2026-11-30T02:00:00Z\n`);
    const checkpoint = await scratch('checkpoint.json');
    const rejects = await scratch('rejects.jsonl');
    await writeFile(rejects, '', { mode: 0o644 });

    // Act
    const result = await ops(f, [...exportImport(csv, 'kept'), '--checkpoint', checkpoint, '--rejects', rejects]);

    // Assess
    expect(result.code).toBe(1);
    expect(await readFile(rejects, 'utf8')).toContain('SO P2');
    expect((await stat(checkpoint)).mode & 0o777).toBe(0o600);
    expect((await stat(rejects)).mode & 0o777).toBe(0o600);
  }, 60_000);
});

/** `ops migrate import` of an export whose times carry their zone. */
function exportImport(path: string, ledger: 'moved' | 'kept'): string[] {
  return ['migrate', 'import', '--source', path, '--group', 'point-consumer-group', '--ledger', ledger, '--yes'];
}
