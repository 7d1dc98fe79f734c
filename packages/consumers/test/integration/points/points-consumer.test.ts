import {
  pointsFixture as basePointsFixture,
  newMsgId,
  orderEnvelope,
  sqsRecord,
} from '@rocketmq-lambda/tools/testing/points-fixture.ts';
import { transactionRendezvous } from '@rocketmq-lambda/tools/testing/transaction-rendezvous.ts';
import { describe, expect, it } from 'vitest';

const INCIDENT = { orderNo: 'SO202007051422310088', userId: 88372, points: 300, paidAt: '2020-07-05T14:22:31Z' };
const INCIDENT_MSG_ID = '0A1B2C3D00002A9F0000000000012E45';

const MODES = [
  { mode: 'per-record', packing: false },
  { mode: 'packed', packing: true },
] as const;

describe.each(MODES)(
  'points consumer ($mode): exactly-once awards from at-least-once delivery (emulator)',
  ({ packing }) => {
    const pointsFixture = (overrides: Parameters<typeof basePointsFixture>[0] = {}) =>
      basePointsFixture({ packing, ...overrides });

    it('awards once when the same message is delivered twice (same msgId)', async () => {
      // Prepare
      const f = await pointsFixture();
      const body = orderEnvelope(INCIDENT, { msgId: INCIDENT_MSG_ID });
      // Act: the incident: the same msgId processed twice, 2.4 s apart in production
      const first = await f.invoke([body]);
      const second = await f.invoke([body]);
      // Assess
      expect(first.batchItemFailures).toEqual([]);
      expect(second.batchItemFailures).toEqual([]);
      expect(await f.ledger('88372')).toHaveLength(1);
      expect(await f.balance('88372')).toBe(300);
      expect(f.reports[1]!.settlement).toMatchObject({
        outcome: 'duplicate',
        reason: 'dedup-record-exists',
        winnerMsgId: INCIDENT_MSG_ID,
      });
      expect(await f.ledgerMismatches()).toEqual([]);
    });

    it('awards once when the application re-sends the order with a new msgId', async () => {
      const f = await pointsFixture();
      const original = orderEnvelope(INCIDENT, { msgId: newMsgId() });
      const resend = orderEnvelope(INCIDENT, { msgId: newMsgId() });
      await f.invoke([original]);
      await f.invoke([resend]);
      const ledger = await f.ledger('88372');
      expect(ledger).toHaveLength(1);
      expect(ledger[0]).toMatchObject({ orderNo: INCIDENT.orderNo, points: 300, kind: 'AWARD' });
      expect(await f.balance('88372')).toBe(300);
      expect(f.outcomes()).toEqual(['processed', 'duplicate']);
      expect(await f.ledgerMismatches()).toEqual([]);
    });

    it('awards once when 8 invocations process the same message concurrently', async () => {
      // Prepare: the 8 commits are held until all 8 are waiting, then race into DynamoDB together
      const f = await pointsFixture();
      const rendezvous = transactionRendezvous(f.dynamoDb, 8);
      const body = orderEnvelope(INCIDENT, { msgId: INCIDENT_MSG_ID });
      // Act
      const responses = await Promise.all(Array.from({ length: 8 }, () => f.invoke([body])));
      // Assess: the race happened; one transaction awarded, the other 7 met its dedup record
      expect(rendezvous).toEqual({ arrived: 8, met: true });
      expect(responses.every((r) => r.batchItemFailures.length === 0)).toBe(true);
      expect(f.outcomes().filter((o) => o === 'processed')).toHaveLength(1);
      const duplicates = f.reports.filter((r) => r.settlement.outcome === 'duplicate').map((r) => r.settlement);
      expect(duplicates).toEqual(
        Array(7).fill({ outcome: 'duplicate', reason: 'dedup-record-exists', winnerMsgId: INCIDENT_MSG_ID }),
      );
      expect(await f.ledger('88372')).toHaveLength(1);
      expect(await f.balance('88372')).toBe(300);
      expect(await f.ledgerMismatches()).toEqual([]);
    });

    it('awards once when the first attempt fails before commit and the retry succeeds', async () => {
      // Prepare: the first transaction never reaches DynamoDB (a network failure before commit)
      let failNext = true;
      const f = await pointsFixture();
      f.dynamoDb.middlewareStack.add(
        (next) => async (args) => {
          if (failNext && (args.input as { TransactItems?: unknown }).TransactItems) {
            failNext = false;
            throw Object.assign(new Error('socket hang up'), { name: 'TimeoutError' });
          }
          return next(args);
        },
        { step: 'initialize', name: 'failBeforeCommit' },
      );
      // Act: through the real queue, so the failed record really comes back
      await f.send(orderEnvelope(INCIDENT));
      await f.drain();
      // Assess
      expect(f.reports.map((r) => [r.settlement.outcome, r.disposition.action])).toEqual([
        ['failed', 'retry'],
        ['processed', 'ack'],
      ]);
      expect(await f.ledger('88372')).toHaveLength(1);
      expect(await f.balance('88372')).toBe(300);
      expect(await f.ledgerMismatches()).toEqual([]);
    });

    it('awards once when the ack is lost after a successful commit (redelivery)', async () => {
      const f = await pointsFixture();
      const record = sqsRecord(
        orderEnvelope(INCIDENT, { msgId: INCIDENT_MSG_ID }),
        f.resources.queues['point-consumer-group']!.source.arn,
      );
      await f.invoke([record]); // committed; the delete never reaches SQS
      await f.invoke([{ ...record, attributes: { ...record.attributes, ApproximateReceiveCount: '2' } }]);
      expect(f.outcomes()).toEqual(['processed', 'duplicate']);
      expect(await f.balance('88372')).toBe(300);
      expect(await f.ledgerMismatches()).toEqual([]);
    });

    it('awards once for an in-batch duplicate pair without failing the batch', async () => {
      const f = await pointsFixture();
      const a = orderEnvelope(INCIDENT, { msgId: INCIDENT_MSG_ID });
      const b = orderEnvelope(INCIDENT, { msgId: newMsgId() });
      const other = orderEnvelope({ orderNo: 'SO-OTHER-1', userId: 88372, points: 50 });
      const response = await f.invoke([a, b, other]);
      expect(response.batchItemFailures).toEqual([]);
      expect(f.reports.map((r) => r.settlement)).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ outcome: 'duplicate', reason: 'in-batch-duplicate', winnerMsgId: INCIDENT_MSG_ID }),
        ]),
      );
      expect(await f.ledger('88372')).toHaveLength(2);
      expect(await f.balance('88372')).toBe(350);
      expect(await f.ledgerMismatches()).toEqual([]);
    });

    it('treats a conflicting payload for one orderNo as a conflict: not awarded twice, dead-lettered with a reason', async () => {
      const f = await pointsFixture();
      await f.invoke([orderEnvelope(INCIDENT)]);
      const response = await f.invoke([orderEnvelope({ ...INCIDENT, points: 3000 })]);
      expect(response.batchItemFailures).toEqual([]); // acknowledged because it is safely in the DLQ
      expect(f.reports[1]!.settlement).toMatchObject({
        outcome: 'failed',
        error: { code: 'PAYLOAD_CONFLICT', classification: 'permanent' },
      });
      expect(f.reports[1]!.disposition).toEqual({ action: 'dead-letter', code: 'PAYLOAD_CONFLICT' });
      const dlq = await f.deadLetters();
      expect(dlq).toHaveLength(1);
      expect(dlq[0]!.attributes).toMatchObject({
        'failure-code': 'PAYLOAD_CONFLICT',
        'idempotency-key': INCIDENT.orderNo,
        'consumer-group': 'point-consumer-group',
      });
      expect(JSON.parse(dlq[0]!.body).data.body).toContain('3000');
      expect(await f.balance('88372')).toBe(300);
      expect(await f.ledgerMismatches()).toEqual([]);
    });

    it('gives each bad input its own outcome and leaves batch-mates unaffected', async () => {
      const f = await pointsFixture();
      const good = orderEnvelope({ orderNo: 'SO-GOOD-1', userId: '7', points: 10 });
      const cases = {
        malformed: '{"specversion":"1.0", "id": ',
        missingOrderNo: orderEnvelope({ userId: 7, points: 10 }),
        nonNumericPoints: orderEnvelope({ orderNo: 'SO-BAD-2', userId: 7, points: 'ten' }),
        negativePoints: orderEnvelope({ orderNo: 'SO-BAD-3', userId: 7, points: -5 }),
        unknownTag: orderEnvelope({ orderNo: 'SO-TAG-4', userId: 7, points: 10 }, { tags: 'REFUNDED' }),
      };
      const response = await f.invoke([
        cases.malformed,
        good,
        cases.missingOrderNo,
        cases.nonNumericPoints,
        cases.negativePoints,
        cases.unknownTag,
      ]);
      expect(response.batchItemFailures).toEqual([]);
      const byCode = f.reports.map((r) =>
        r.settlement.outcome === 'failed' ? r.settlement.error.code : r.settlement.outcome,
      );
      expect(byCode.sort()).toEqual([
        'INVALID_ENVELOPE',
        'INVALID_PAYLOAD',
        'INVALID_PAYLOAD',
        'INVALID_PAYLOAD',
        'filtered',
        'processed',
      ]);
      expect(await f.balance('7')).toBe(10);
      const dlq = await f.deadLetters();
      expect(dlq.map((d) => d.attributes['failure-code']).sort()).toEqual([
        'INVALID_ENVELOPE',
        'INVALID_PAYLOAD',
        'INVALID_PAYLOAD',
        'INVALID_PAYLOAD',
      ]);
      expect(dlq.find((d) => d.body === cases.negativePoints)!.attributes['failure-reason']).toMatch(
        /points must not be negative/,
      );
      expect(await f.ledgerMismatches()).toEqual([]);
    });
  },
);
