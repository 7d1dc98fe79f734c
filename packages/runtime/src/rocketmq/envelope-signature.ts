import { createHash, createHmac, createSecretKey, type KeyObject, randomBytes, timingSafeEqual } from 'node:crypto';
import canonicalize from 'canonicalize';
import { SIGNING_KEY_ID } from './envelope.ts';
import { serializeEnvelope } from './envelope-writer.ts';

/**
 * Envelope signatures: the bridge proves it wrote an envelope, so a message put straight on a
 * queue or a bus by anyone else is refused (`UNAUTHENTICATED_MESSAGE`) even where a resource
 * policy was loosened by hand.
 *
 * The signature is an HMAC-SHA256, under a key only the bridge and the consumers can read, over
 * the CloudEvent's JSON Canonicalization Scheme form (RFC 8785) without the `signature` field
 * itself. Canonical, not the bytes sent: EventBridge re-serialises `detail`, and a redrive or a
 * replay from the archive must keep the envelope valid. It covers every field, so no attribute a
 * consumer reads (topic, tag, keys, body, properties, message group) can be changed unnoticed.
 * It does not stop a replay of a genuine envelope: that is a duplicate, which idempotency absorbs.
 *
 * The envelope names the key it was signed with (`signaturekey`, signed too): a verifier that does
 * not hold that key knows at once that its ring is behind, not that the envelope is forged, and
 * reads the secret again before refusing (`SigningKeyRing.reload`). An envelope signed before the
 * field existed names none and is checked against every accepted key.
 */

/** The CloudEvents extension attribute holding the signature (extension names are lower-case letters and digits). */
export const SIGNATURE_FIELD = 'signature';
const SCHEME = 'hmac-sha256:';
/** The extension attribute naming the signing key (`signingKeyId`). */
export const SIGNING_KEY_FIELD = 'signaturekey';

/** Keys shorter than this are refused: an HMAC key should be at least as long as the hash. */
export const MIN_SIGNING_KEY_BYTES = 32;

export class InvalidSigningKeyError extends Error {
  override readonly name = 'InvalidSigningKeyError';
}

/** Why a verifier reads its keys again: envelopes naming keys it does not hold (ids from `signingKeyId`). */
export interface ReloadCause {
  readonly unknownKeyIds?: readonly string[];
}

/**
 * The keys a verifier accepts (the current one first, then the one it replaced, during a rotation) and the one a signer
 * uses.
 */
export interface SigningKeyRing {
  /** The key to sign with. */
  current(): Promise<Uint8Array>;
  /** Every key a signature may have been made with: the current key, then the previous one if there is one. */
  accepted(): Promise<readonly Uint8Array[]>;
  /**
   * Reads the keys again (a signature matched none: the key may have been rotated since); true when the keys
   * `accepted()` gives may now judge the batch differently. An envelope naming a key the ring lacks
   * (`cause.unknownKeyIds`) was signed with a key put after the ring read the secret, or is forged.
   */
  reload(cause?: ReloadCause): Promise<boolean>;
}

export function assertSigningKey(key: Uint8Array, name: string): Uint8Array {
  if (key.byteLength < MIN_SIGNING_KEY_BYTES) {
    throw new InvalidSigningKeyError(
      `the envelope signing key ${name} has ${key.byteLength} bytes; at least ${MIN_SIGNING_KEY_BYTES} are needed`,
    );
  }
  return key;
}

/** A fresh key as the CDK app's secret holds one: 48 random bytes, 384 bits. */
export function generateSigningKey(): Uint8Array {
  return randomBytes(48);
}

/**
 * A key ring held in memory: the local run's and the tests' own generated key, which their
 * bridge stand-ins sign with. A deployed consumer reads its keys from Secrets Manager
 * (`SecretSigningKeys`); nothing deployed builds one of these.
 */
export class StaticSigningKeys implements SigningKeyRing {
  private readonly keys: readonly Uint8Array[];

  /** `keys[0]` signs; every key is accepted. */
  constructor(...keys: readonly Uint8Array[]) {
    if (keys.length === 0) throw new InvalidSigningKeyError('a key ring needs at least one key');
    this.keys = keys.map((key, i) => assertSigningKey(key, `#${i}`));
  }

  async current(): Promise<Uint8Array> {
    return this.keys[0]!;
  }

  async accepted(): Promise<readonly Uint8Array[]> {
    return this.keys;
  }

  async reload(): Promise<boolean> {
    return false;
  }
}

/**
 * The id an envelope names its signing key by: 96 bits of the key's SHA-256, which tells keys apart
 * and reveals nothing of a 256-bit-or-longer random key.
 */
export function signingKeyId(key: Uint8Array): string {
  return preparedKey(key).id;
}

/** The envelope with the id of `key` and its signature, made with `key`. */
export function signEnvelope<E extends object>(
  envelope: E,
  key: Uint8Array,
): E & { signature: string; signaturekey: string } {
  const { [SIGNATURE_FIELD]: _previous, ...rest } = envelope as Record<string, unknown>;
  const unsigned = { ...rest, [SIGNING_KEY_FIELD]: signingKeyId(key) };
  return {
    ...envelope,
    [SIGNING_KEY_FIELD]: signingKeyId(key),
    [SIGNATURE_FIELD]: SCHEME + macOf(canonicalize(unsigned) ?? '', key).toString('base64url'),
  };
}

/**
 * Why this SQS body is not an envelope signed with one of `keys`, or `undefined` when it is.
 * A body that is not JSON is left to the envelope parser (`INVALID_ENVELOPE`). The signed
 * CloudEvent is the body itself or, from EventBridge, its `detail`.
 */
export function signatureRefusal(body: string, keys: readonly Uint8Array[]): string | undefined {
  return verdictOf(body, keys)?.refusal;
}

/** A refusal, and the key the envelope names when the keys do not hold it. */
type Verdict = { refusal: string; unknownKeyId?: string } | undefined;

function verdictOf(body: string, keys: readonly Uint8Array[]): Verdict {
  const signed = signedEvent(body);
  if (signed === undefined) return undefined;
  if ('refusal' in signed) return signed;
  const index = matchingKey(signed, keys);
  if (index !== undefined) return undefined;
  if (signed.keyId !== undefined && !keys.some((key) => signingKeyId(key) === signed.keyId)) {
    return {
      refusal: `the envelope names signing key ${signed.keyId}, which is none of the signing keys`,
      unknownKeyId: signed.keyId,
    };
  }
  return { refusal: "the envelope's signature matches none of the signing keys" };
}

/** Which of `keys` the body's envelope was signed with (its index), or `undefined` when none (or it is unsigned). */
export function signingKeyIndex(body: string, keys: readonly Uint8Array[]): number | undefined {
  const signed = signedEvent(body);
  return signed === undefined || 'refusal' in signed ? undefined : matchingKey(signed, keys);
}

/**
 * The body with its CloudEvent signed again with `key`, `extensions` added first (CloudEvents
 * extension attributes: lower-case letters and digits), so the signature covers them too.
 * Throws a `TypeError` for a body that is not a JSON object.
 */
export function resignBody(body: string, key: Uint8Array, extensions: Readonly<Record<string, string>> = {}): string {
  const json: unknown = JSON.parse(body);
  if (!isObject(json)) throw new TypeError('the body is not a JSON object');
  if (isWrapped(json)) {
    if (!isObject(json.detail)) throw new TypeError("the EventBridge event's detail is not an object");
    return serializeEnvelope({ ...json, detail: signEnvelope({ ...json.detail, ...extensions }, key) });
  }
  return serializeEnvelope(signEnvelope({ ...json, ...extensions }, key));
}

/**
 * The signed CloudEvent of a body (the body itself or, from EventBridge, its `detail`) with its
 * MAC, a refusal when it carries none, or `undefined` for a body that is not a JSON object at
 * all: the envelope parser refuses that one (`INVALID_ENVELOPE`), and nothing of it is acted on.
 */
function signedEvent(body: string): SignedEvent | { refusal: string } | undefined {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return undefined;
  }
  const event = isObject(json) && isWrapped(json) ? json.detail : json;
  if (!isObject(event)) return isObject(json) ? { refusal: 'the envelope is not signed' } : undefined;
  if (!(SIGNATURE_FIELD in event)) return { refusal: 'the envelope is not signed' };
  const signature = event[SIGNATURE_FIELD];
  if (typeof signature !== 'string' || !signature.startsWith(SCHEME))
    return { refusal: `the envelope's signature is not an ${SCHEME.slice(0, -1)} signature` };
  const keyId = event[SIGNING_KEY_FIELD];
  if (keyId !== undefined && (typeof keyId !== 'string' || !SIGNING_KEY_ID.test(keyId)))
    return { refusal: `the envelope's ${SIGNING_KEY_FIELD} is not a signing key id` };
  const { [SIGNATURE_FIELD]: _signature, ...unsigned } = event;
  return { unsigned, given: Buffer.from(signature.slice(SCHEME.length), 'base64url'), keyId };
}

interface SignedEvent {
  readonly unsigned: Record<string, unknown>;
  readonly given: Buffer;
  /** The key the envelope names; absent in envelopes signed before keys were named. */
  readonly keyId: string | undefined;
}

/**
 * The index of the key that made the signature: only the named key is tried when the envelope
 * names one. The canonical form, most of a check's cost, is made once whatever the number of keys.
 */
function matchingKey(signed: SignedEvent, keys: readonly Uint8Array[]) {
  let text: string | undefined;
  const index = keys.findIndex((key) => {
    if (signed.keyId !== undefined && signingKeyId(key) !== signed.keyId) return false;
    text ??= canonicalize(signed.unsigned) ?? '';
    const expected = macOf(text, key);
    return signed.given.byteLength === expected.byteLength && timingSafeEqual(signed.given, expected);
  });
  return index < 0 ? undefined : index;
}

function isWrapped(json: Record<string, unknown>): json is Record<string, unknown> & { detail: unknown } {
  return 'detail-type' in json && 'detail' in json;
}

/**
 * Checks a batch's bodies against the key ring: index → reason for each refused body. A miss
 * reads the keys once more before refusing, because the bridge may have picked up a rotated key
 * before this function did; `reload` decides how often that may happen, and is told which keys
 * the envelopes name that the ring lacks.
 */
export async function signatureRefusals(
  bodies: readonly string[],
  keyRing: SigningKeyRing,
): Promise<Map<number, string>> {
  const check = (keys: readonly Uint8Array[]) => {
    const verdicts = new Map<number, NonNullable<Verdict>>();
    for (const [i, body] of bodies.entries()) {
      const verdict = verdictOf(body, keys);
      if (verdict !== undefined) verdicts.set(i, verdict);
    }
    return verdicts;
  };
  let verdicts = check(await keyRing.accepted());
  if (verdicts.size > 0) {
    const unknownKeyIds = [...new Set([...verdicts.values()].flatMap((v) => v.unknownKeyId ?? []))];
    if (await keyRing.reload(unknownKeyIds.length > 0 ? { unknownKeyIds } : undefined))
      verdicts = check(await keyRing.accepted());
  }
  return new Map([...verdicts].map(([i, v]) => [i, v.refusal]));
}

/**
 * Each key as a `KeyObject` with its id, made once per key: on Node 24 `createHmac` with raw key
 * bytes costs about 25 µs more than with a `KeyObject` (it converts the bytes on every call), more
 * than the HMAC itself, once per envelope signed or checked.
 */
const preparedKeys = new WeakMap<Uint8Array, { keyObject: KeyObject; id: string }>();

function preparedKey(key: Uint8Array): { keyObject: KeyObject; id: string } {
  let prepared = preparedKeys.get(key);
  if (prepared === undefined) {
    const id = createHash('sha256').update(key).digest().subarray(0, 12).toString('base64url');
    prepared = { keyObject: createSecretKey(key), id };
    preparedKeys.set(key, prepared);
  }
  return prepared;
}

function macOf(canonical: string, key: Uint8Array): Buffer {
  return createHmac('sha256', preparedKey(key).keyObject).update(canonical).digest();
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
