import { createHmac, randomBytes } from 'node:crypto';
import canonicalize from 'canonicalize';
import { describe, expect, it } from 'vitest';
import { parseEnvelope } from '../../../src/rocketmq/envelope.ts';
import {
  assertSigningKey,
  InvalidSigningKeyError,
  resignBody,
  type SigningKeyRing,
  signatureRefusal,
  signatureRefusals,
  signEnvelope,
  signingKeyId,
  signingKeyIndex,
} from '../../../src/rocketmq/envelope-signature.ts';
import { buildEnvelope, type Envelope, serializeEnvelope } from '../../../src/rocketmq/envelope-writer.ts';

const KEY = Buffer.from('k'.repeat(32));
const OTHER = Buffer.from('o'.repeat(32));
const envelope = () =>
  buildEnvelope({
    topic: 'ORDER_TOPIC',
    msgId: '0A1B2C3D00002A9F0000000000012E45',
    tags: 'PAID',
    keys: ['SO1'],
    body: '{"orderNo":"SO1","userId":1,"points":300}',
    messageGroup: 'SO1',
    userProperties: { channel: 'app' },
    bornTimestamp: 1_593_958_951_000,
  });
const body = (value: unknown) => JSON.stringify(value);

describe('envelope signatures', () => {
  it('verifies what was signed, and the signed envelope still parses as before', () => {
    const signed = serializeEnvelope(signEnvelope(envelope(), KEY));
    expect(signatureRefusal(signed, [KEY])).toBeUndefined();
    expect(parseEnvelope(signed)).toEqual(parseEnvelope(serializeEnvelope(envelope())));
  });

  it('signs the canonical form: key order and an EventBridge wrapping do not matter', () => {
    const signed = signEnvelope(envelope(), KEY);
    const reordered = Object.fromEntries(Object.entries(signed).reverse());
    expect(signatureRefusal(body(reordered), [KEY])).toBeUndefined();
    expect(
      signatureRefusal(body({ 'detail-type': 'mq:Topic:SendMessage', source: 'rocketmq.c', detail: reordered }), [KEY]),
    ).toBeUndefined();
  });

  it.each([
    [
      'the body',
      (e: Envelope) => ({ ...e, data: { ...e.data, body: '{"orderNo":"SO1","userId":1,"points":1000000}' } }),
    ],
    ['the tag', (e: Envelope) => ({ ...e, data: { ...e.data, tags: 'REFUND' } })],
    ['the keys', (e: Envelope) => ({ ...e, data: { ...e.data, keys: ['SO2'] } })],
    ['a user property', (e: Envelope) => ({ ...e, data: { ...e.data, userProperties: { channel: 'web' } } })],
    [
      'the message group',
      (e: Envelope) => ({
        ...e,
        data: { ...e.data, systemProperties: { ...e.data.systemProperties, __SHARDINGKEY: 'SO2' } },
      }),
    ],
    ['an added field', (e: Envelope) => ({ ...e, extra: true })],
  ])('refuses an envelope whose %s changed after signing', (_what, change) => {
    const tampered = change(signEnvelope(envelope(), KEY));
    expect(signatureRefusal(body(tampered), [KEY])).toBe("the envelope's signature matches none of the signing keys");
  });

  it('refuses unsigned envelopes, foreign schemes and other keys; accepts any key of the ring', () => {
    expect(signatureRefusal(serializeEnvelope(envelope()), [KEY])).toBe('the envelope is not signed');
    expect(signatureRefusal(body({ 'detail-type': 'x', detail: 'text' }), [KEY])).toBe('the envelope is not signed');
    expect(signatureRefusal(body({ ...envelope(), signature: 'rsa:abc' }), [KEY])).toBe(
      "the envelope's signature is not an hmac-sha256 signature",
    );
    expect(signatureRefusal(body({ ...envelope(), signature: 42 }), [KEY])).toBe(
      "the envelope's signature is not an hmac-sha256 signature",
    );
    expect(signatureRefusal(body({ ...envelope(), signature: 'hmac-sha256:AAAA' }), [KEY])).toBe(
      "the envelope's signature matches none of the signing keys",
    );
    const signed = body(signEnvelope(envelope(), OTHER));
    expect(signatureRefusal(signed, [KEY])).toBe(
      `the envelope names signing key ${signingKeyId(OTHER)}, which is none of the signing keys`,
    );
    expect(signatureRefusal(signed, [KEY, OTHER])).toBeUndefined();
  });

  it('names the key it was signed with, under the signature, and tries only that key', () => {
    const signed = signEnvelope(envelope(), OTHER);
    expect(signed.signaturekey).toBe(signingKeyId(OTHER));
    expect(signingKeyId(OTHER)).toMatch(/^[A-Za-z0-9_-]{16}$/);
    expect(signingKeyId(KEY)).not.toBe(signingKeyId(OTHER));
    expect(signatureRefusal(body({ ...signed, signaturekey: signingKeyId(KEY) }), [KEY, OTHER])).toBe(
      "the envelope's signature matches none of the signing keys",
    );
    expect(signatureRefusal(body(signed), [KEY])).toBe(
      `the envelope names signing key ${signingKeyId(OTHER)}, which is none of the signing keys`,
    );
    expect(signatureRefusal(body({ ...signed, signaturekey: 'x"||y' }), [OTHER])).toBe(
      "the envelope's signaturekey is not a signing key id",
    );
  });

  it('verifies an envelope signed before keys were named against every key of the ring', () => {
    const { signaturekey: _id, signature: _signature, ...unsigned } = signEnvelope(envelope(), OTHER);
    const mac = createHmac('sha256', OTHER).update(canonicalize(unsigned)!).digest('base64url');
    const older = body({ ...unsigned, signature: `hmac-sha256:${mac}` });
    expect(signatureRefusal(older, [KEY, OTHER])).toBeUndefined();
    expect(signatureRefusal(older, [KEY])).toBe("the envelope's signature matches none of the signing keys");
  });

  it('leaves a body that is not a JSON object to the envelope parser, which refuses it as INVALID_ENVELOPE', () => {
    expect(signatureRefusal('not json', [KEY])).toBeUndefined();
    expect(signatureRefusal('[1,2]', [KEY])).toBeUndefined();
    expect(signatureRefusal('"text"', [KEY])).toBeUndefined();
  });

  it('names the key of the ring an envelope was signed with', () => {
    const signed = body(signEnvelope(envelope(), OTHER));
    expect(signingKeyIndex(signed, [KEY, OTHER])).toBe(1);
    expect(signingKeyIndex(signed, [KEY])).toBeUndefined();
    expect(signingKeyIndex(serializeEnvelope(envelope()), [KEY])).toBeUndefined();
  });

  it('re-signs a body with another key, the extensions covered, directly or inside an EventBridge event', () => {
    const decision = { resignedby: 'alice', resignnote: 'INC-7' };
    const direct = resignBody(body(signEnvelope(envelope(), OTHER)), KEY, decision);
    expect(signingKeyIndex(direct, [OTHER, KEY])).toBe(1);
    expect(JSON.parse(direct)).toMatchObject(decision);
    const forged = JSON.stringify({ ...JSON.parse(direct), resignedby: 'mallory' });
    expect(signatureRefusal(forged, [KEY])).toBe("the envelope's signature matches none of the signing keys");
    const wrapped = body({ 'detail-type': 'mq:Topic:SendMessage', detail: signEnvelope(envelope(), OTHER) });
    const resigned = resignBody(wrapped, KEY, decision);
    expect(signingKeyIndex(resigned, [OTHER, KEY])).toBe(1);
    expect(JSON.parse(resigned).detail).toMatchObject(decision);
    expect(() => resignBody('[1]', KEY)).toThrow(TypeError);
  });

  it('re-signing replaces the old signature', () => {
    const twice = signEnvelope(signEnvelope(envelope(), OTHER), KEY);
    expect(signatureRefusal(body(twice), [KEY])).toBeUndefined();
  });

  it('refuses keys shorter than the hash', () => {
    expect(() => assertSigningKey(randomBytes(31), 'k')).toThrow(InvalidSigningKeyError);
    expect(assertSigningKey(KEY, 'k')).toBe(KEY);
  });
});

describe('checking a batch against a key ring', () => {
  function ring(keys: Uint8Array[], after: Uint8Array[] | undefined) {
    const state = { keys, reloads: 0, causes: [] as unknown[] };
    const keyRing: SigningKeyRing = {
      current: async () => state.keys[0]!,
      accepted: async () => state.keys,
      reload: async (cause) => {
        state.reloads++;
        state.causes.push(cause);
        if (!after) return false;
        state.keys = after;
        return true;
      },
    };
    return { keyRing, state };
  }
  const signedWith = (key: Uint8Array) => body(signEnvelope(envelope(), key));

  it('does not reload while every signature matches', async () => {
    const { keyRing, state } = ring([KEY], [OTHER]);
    expect(await signatureRefusals([signedWith(KEY), signedWith(KEY)], keyRing)).toEqual(new Map());
    expect(state.reloads).toBe(0);
  });

  it('reloads once on a miss, then judges again with the new keys', async () => {
    const { keyRing, state } = ring([KEY], [OTHER, KEY]);
    expect(
      await signatureRefusals([signedWith(KEY), signedWith(OTHER), serializeEnvelope(envelope())], keyRing),
    ).toEqual(new Map([[2, 'the envelope is not signed']]));
    expect(state.reloads).toBe(1);
  });

  it('tells the ring which keys the envelopes name that it lacks, once each', async () => {
    const { keyRing, state } = ring([KEY], [OTHER, KEY]);
    const unnamed = { ...signEnvelope(envelope(), KEY), signaturekey: undefined };
    expect(
      await signatureRefusals([signedWith(OTHER), signedWith(OTHER), body(unnamed), signedWith(KEY)], keyRing),
    ).toEqual(new Map([[2, "the envelope's signature matches none of the signing keys"]]));
    expect(state.causes).toEqual([{ unknownKeyIds: [signingKeyId(OTHER)] }]);
  });

  it('reloads without a cause when every envelope names a key the ring holds', async () => {
    const { keyRing, state } = ring([KEY], undefined);
    const tampered = { ...signEnvelope(envelope(), KEY), id: 'changed' };
    await signatureRefusals([body(tampered)], keyRing);
    expect(state.causes).toEqual([undefined]);
  });

  it('refuses when the reload brings nothing new', async () => {
    const { keyRing } = ring([KEY], undefined);
    expect(await signatureRefusals([signedWith(OTHER)], keyRing)).toEqual(
      new Map([[0, `the envelope names signing key ${signingKeyId(OTHER)}, which is none of the signing keys`]]),
    );
  });
});
