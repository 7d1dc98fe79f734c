import type { MessageAttributeValue } from '@aws-sdk/client-sqs';
import { signatureRefusal, signEnvelope, writeEnvelope } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { describe, expect, it } from 'vitest';
import { decodeDeadLetter } from '../../../src/operations/dead-letter-inspection.ts';
import { letterSha256, type PlannedResign, proofOf, resignPlanOf } from '../../../src/operations/resign-plan.ts';
import type { RocketMQMessageLookup } from '../../../src/operations/rocketmq-message-lookup.ts';
import { sha256 } from '../../../src/operations/rocketmq-message-lookup.ts';
import { resignRewrite, type SigningKeyMaterial } from '../../../src/operations/signing-key-revocation.ts';

const LEAKED = Buffer.from('l'.repeat(48));
const CURRENT = Buffer.from('c'.repeat(48));
const RETIRED = Buffer.from('r'.repeat(48));
const STRANGER = Buffer.from('s'.repeat(48));
const AT = new Date('2026-12-05T10:00:00.000Z');
const COMPROMISED = new Date('2026-12-01T00:00:00.000Z');
const OPERATOR = 'arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_Operator_0123/alice';
const MSG_ID = '0A1B2C3D00002A9F0000000000012E45';
const ORDER_BODY = '{"orderNo":"SO-1","userId":"88372","points":300}';

const version = (versionId: string, key: Uint8Array, state: { current?: boolean; revoked?: boolean } = {}) =>
  ({
    versionId,
    createdAt: AT,
    stages: [...(state.current ? ['AWSCURRENT'] : []), ...(state.revoked ? [`revoked-${versionId}`] : [])],
    revoked: state.revoked ?? false,
    current: state.current ?? false,
    key,
  }) satisfies SigningKeyMaterial;

/** The deployment after `keys revoke`: the leaked key revoked, its replacement current, an older key retired. */
const RING = [
  version('v-current', CURRENT, { current: true }),
  version('v-leaked', LEAKED, { revoked: true }),
  version('v-retired', RETIRED),
];

const signedOrder = (key: Uint8Array, body = ORDER_BODY, storeTimestamp = COMPROMISED.getTime() - 60_000) =>
  JSON.stringify(
    signEnvelope(
      JSON.parse(
        writeEnvelope({ topic: 'ORDER_TOPIC', msgId: MSG_ID, tags: 'PAID', keys: ['SO-1'], body, storeTimestamp }),
      ),
      key,
    ),
  );

/** A dead letter as the failure router leaves it, with when SQS took it into the source queue. */
function letter(body: string, options: { code?: string; sentAt?: Date } = {}) {
  const attribute = (value: string): MessageAttributeValue => ({ DataType: 'String', StringValue: value });
  return decodeDeadLetter({
    MessageId: 'm-1',
    ReceiptHandle: 'r',
    Body: body,
    MessageAttributes: {
      'failure-code': attribute(options.code ?? 'UNAUTHENTICATED_MESSAGE'),
      'failure-reason': attribute('matches none'),
      'source-sent-at': attribute((options.sentAt ?? new Date(COMPROMISED.getTime() - 30_000)).toISOString()),
    },
    Attributes: { SentTimestamp: String(AT.getTime()) },
  });
}

const ROCKETMQ_PROOF = {
  kind: 'rocketmq',
  cluster: 'prod',
  broker: '10.0.0.7:10911',
  storeTimestamp: 1,
  bodySha256: 'x',
} as const;
const planned = (body: string): PlannedResign => ({
  msgId: MSG_ID,
  letterSha256: letterSha256(letter(body)),
  key: 'SO-1',
  proof: ROCKETMQ_PROOF,
});
const decisionFor = (...bodies: string[]) => ({
  by: OPERATOR,
  note: 'INC-7',
  at: AT,
  plan: resignPlanOf({
    createdAt: AT.toISOString(),
    deadLetterQueueArn: 'arn:aws:sqs:us-east-1:123456789012:dlq',
    signingSecret: 'prod/envelope-signing-key',
    letters: bodies.map(planned),
  }),
});

describe('resignRewrite: which dead letters are signed again', () => {
  it('signs a planned letter that verifies with the revoked key again, with the current key, the decision inside', () => {
    const body = signedOrder(LEAKED);
    const decision = decisionFor(body);
    const rewritten = resignRewrite(RING, decision)(letter(body));
    if (!('body' in rewritten)) throw new Error(`refused: ${rewritten.refusal}`);
    expect(signatureRefusal(rewritten.body, [CURRENT])).toBeUndefined();
    expect(signatureRefusal(rewritten.body, [LEAKED])).toContain('which is none of the signing keys');
    expect(JSON.parse(rewritten.body)).toMatchObject({
      resignedby: OPERATOR,
      resignednote: 'INC-7',
      resignedat: AT.toISOString(),
      resignedfrom: 'v-leaked',
      resignedproof: 'rocketmq',
      resignedplan: decision.plan.digest,
    });
  });

  it.each([
    ['the current key', CURRENT, 'v-current'],
    ['a retired key still in its retention', RETIRED, 'v-retired'],
  ])(
    'keeps a letter that verifies with %s, even one the plan names: dlq redrive sends it as it is',
    (_name, key, id) => {
      const body = signedOrder(key);
      expect(resignRewrite(RING, decisionFor(body))(letter(body))).toEqual({
        refusal: `it verifies with key version ${id}, which is not revoked: dlq redrive sends it`,
      });
    },
  );

  it('keeps a letter the plan does not name, and one whose body changed since the review', () => {
    const reviewed = signedOrder(LEAKED);
    const changed = signedOrder(LEAKED, '{"orderNo":"SO-1","userId":"666","points":1000000}');
    const rewrite = resignRewrite(RING, decisionFor(reviewed));
    expect(rewrite(letter(changed))).toEqual({ refusal: expect.stringContaining('is not in the reviewed plan') });
    expect(resignRewrite(RING, decisionFor())(letter(reviewed))).toEqual({
      refusal: expect.stringContaining('is not in the reviewed plan'),
    });
  });

  it('keeps a letter signed with no key of the deployment, and one refused for another reason', () => {
    const forged = signedOrder(STRANGER);
    const rewrite = resignRewrite(RING, decisionFor(forged, signedOrder(LEAKED)));
    expect(rewrite(letter(forged))).toEqual({
      refusal: expect.stringContaining('verifies with no key this deployment ever had'),
    });
    expect(rewrite(letter(signedOrder(LEAKED), { code: 'INVALID_PAYLOAD' }))).toEqual({
      refusal: expect.stringContaining('not refused as UNAUTHENTICATED_MESSAGE'),
    });
  });

  it('refuses to work when the current key is itself revoked: nothing could sign the letters', () => {
    expect(() => resignRewrite([version('v-leaked', LEAKED, { current: true, revoked: true })], decisionFor())).toThrow(
      'no current key that is not revoked',
    );
  });
});

/** What RocketMQ answers for MSG_ID: the stored bodies. */
const storing = (...bodies: string[]) =>
  ({
    cluster: 'prod',
    byMsgId: async () =>
      bodies.map((b) => ({
        topic: 'ORDER_TOPIC',
        msgId: MSG_ID,
        offsetMsgId: 'o',
        storeTimestamp: 7,
        bodySha256: sha256(Buffer.from(b)),
        broker: '10.0.0.7:10911',
      })),
  }) as unknown as RocketMQMessageLookup;

describe('proofOf: why a letter signed with a revoked key is genuine', () => {
  it('RocketMQ stores the msgId with the same body', async () => {
    expect(await proofOf(letter(signedOrder(LEAKED)), { rocketmq: storing(ORDER_BODY) })).toEqual({
      kind: 'rocketmq',
      cluster: 'prod',
      broker: '10.0.0.7:10911',
      storeTimestamp: 7,
      bodySha256: sha256(Buffer.from(ORDER_BODY)),
    });
  });

  it('a body RocketMQ stores otherwise is forged, whatever the dates say', async () => {
    const raised = signedOrder(LEAKED, '{"orderNo":"SO-1","userId":"88372","points":300000}');
    expect(await proofOf(letter(raised), { rocketmq: storing(ORDER_BODY), compromisedSince: COMPROMISED })).toEqual({
      unproven: expect.stringContaining('stores msgId 0A1B2C3D00002A9F0000000000012E45 with another body'),
    });
  });

  it('entered the source queue and stored before the compromise, when RocketMQ no longer has it', async () => {
    expect(await proofOf(letter(signedOrder(LEAKED)), { rocketmq: storing(), compromisedSince: COMPROMISED })).toEqual({
      kind: 'sent-before',
      compromisedSince: COMPROMISED.toISOString(),
      sourceSentAt: new Date(COMPROMISED.getTime() - 30_000).toISOString(),
      storeTimestamp: COMPROMISED.getTime() - 60_000,
    });
  });

  it('a store time before the compromise is no proof for a letter SQS took in after it: the leaked key signs any date', async () => {
    const backdated = letter(signedOrder(LEAKED), { sentAt: new Date(COMPROMISED.getTime() + 3_600_000) });
    expect(await proofOf(backdated, { compromisedSince: COMPROMISED })).toEqual({
      unproven: expect.stringContaining('not both before 2026-12-01T00:00:00.000Z'),
    });
    expect(await proofOf(letter(signedOrder(LEAKED)), {})).toEqual({
      unproven: 'RocketMQ was not asked (--bridge-config); no --compromised-since bound',
    });
  });
});
