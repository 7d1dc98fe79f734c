import type { MessageAttributeValue } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { decodeDeadLetter } from '../../../lib/operations/dead-letter-inspection.ts';
import { resignRewrite, type SigningKeyMaterial } from '../../../lib/operations/signing-key-revocation.ts';
import { signatureRefusal, signEnvelope, writeEnvelope } from '../../../lib/rocketmq/index.ts';

const LEAKED = Buffer.from('l'.repeat(48));
const CURRENT = Buffer.from('c'.repeat(48));
const RETIRED = Buffer.from('r'.repeat(48));
const STRANGER = Buffer.from('s'.repeat(48));
const AT = new Date('2026-12-05T10:00:00.000Z');

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

const signedOrder = (key: Uint8Array) =>
  JSON.stringify(
    signEnvelope(
      JSON.parse(
        writeEnvelope({
          topic: 'ORDER_TOPIC',
          msgId: '0A1B2C3D00002A9F0000000000012E45',
          tags: 'PAID',
          keys: ['SO-1'],
          body: '{"orderNo":"SO-1","userId":"88372","points":300}',
        }),
      ),
      key,
    ),
  );

/** A dead letter as the failure router leaves it. */
function letter(body: string, code = 'UNAUTHENTICATED_MESSAGE') {
  const attribute = (value: string): MessageAttributeValue => ({ DataType: 'String', StringValue: value });
  return decodeDeadLetter({
    MessageId: 'm-1',
    ReceiptHandle: 'r',
    Body: body,
    MessageAttributes: { 'failure-code': attribute(code), 'failure-reason': attribute('matches none') },
    Attributes: { SentTimestamp: String(AT.getTime()) },
  });
}

const decision = { reviewedBy: 'alice', note: 'INC-7', at: AT };

describe('resignRewrite: which dead letters are signed again', () => {
  it('signs a letter that verifies with the revoked key again, with the current key, the decision inside', () => {
    const rewritten = resignRewrite(RING, decision)(letter(signedOrder(LEAKED)));
    if (!('body' in rewritten)) throw new Error(`refused: ${rewritten.refusal}`);
    expect(signatureRefusal(rewritten.body, [CURRENT])).toBeUndefined();
    expect(signatureRefusal(rewritten.body, [LEAKED])).toContain('which is none of the signing keys');
    expect(JSON.parse(rewritten.body)).toMatchObject({
      resignedby: 'alice',
      resignednote: 'INC-7',
      resignedat: AT.toISOString(),
      resignedfrom: 'v-leaked',
    });
  });

  it.each([
    ['the current key', CURRENT, 'v-current'],
    ['a retired key still in its retention', RETIRED, 'v-retired'],
  ])('keeps a letter that verifies with %s: it is not re-signed, dlq redrive sends it as it is', (_name, key, id) => {
    expect(resignRewrite(RING, decision)(letter(signedOrder(key)))).toEqual({
      refusal: `it verifies with key version ${id}, which is not revoked: dlq redrive sends it`,
    });
  });

  it('keeps a letter signed with no key of the deployment, and one refused for another reason', () => {
    const rewrite = resignRewrite(RING, decision);
    expect(rewrite(letter(signedOrder(STRANGER)))).toEqual({
      refusal: expect.stringContaining('verifies with no key this deployment ever had'),
    });
    expect(rewrite(letter(signedOrder(LEAKED), 'INVALID_PAYLOAD'))).toEqual({
      refusal: expect.stringContaining('not refused as UNAUTHENTICATED_MESSAGE'),
    });
  });

  it('refuses to work when the current key is itself revoked: nothing could sign the letters', () => {
    expect(() => resignRewrite([version('v-leaked', LEAKED, { current: true, revoked: true })], decision)).toThrow(
      'no current key that is not revoked',
    );
  });
});
