import {
  type EnvelopeFields,
  generateSigningKey,
  resignBody,
  type SigningKeyRing,
  StaticSigningKeys,
  writeEnvelope,
} from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import type { TrafficPhase } from './traffic.ts';

/**
 * The envelope signing key of whatever builds consumers directly rather than from a deployed
 * environment: the local run, the benchmarks, the chaos run and the tests. It stands in for the
 * stage's secret, so the consumers they build check the bridge's signature exactly as deployed
 * ones do (a consumer's configuration always holds a key ring): the stand-in bridges and the
 * envelope builders sign with it, the consumers verify with its ring. Generated when made and
 * held in memory only; nothing deployed ever uses one.
 */
export class LocalSigningKey {
  readonly key: Uint8Array = generateSigningKey();
  /** The ring a consumer built with this key verifies with. */
  readonly ring: SigningKeyRing = new StaticSigningKeys(this.key);

  /**
   * The body as the bridge would send it, signed. A body that is a JSON object (an envelope, or
   * one the bridge could never have written) is signed, so the consumer judges its content. Any
   * other body is sent as it is: one that is not JSON, or JSON but not an object, the envelope
   * parser refuses (`INVALID_ENVELOPE`); an EventBridge event whose `detail` is not an object has
   * nowhere to hold a signature, and is refused as unsigned (`UNAUTHENTICATED_MESSAGE`).
   */
  sign(body: string): string {
    if (!isJsonObject(body)) return body;
    try {
      return resignBody(body, this.key);
    } catch (error) {
      if (error instanceof TypeError) return body;
      throw error;
    }
  }

  /** Phases of traffic with every body as the bridge sends it, signed (`sign`); the rest of each message as it was. */
  signed<P extends TrafficPhase>(phases: readonly P[]): P[] {
    return phases.map((phase) => ({
      ...phase,
      messages: phase.messages.map((message) => ({ ...message, body: this.sign(message.body) })),
    }));
  }

  /** `writeEnvelope`, signed. */
  envelope(fields: EnvelopeFields): string {
    return resignBody(writeEnvelope(fields), this.key);
  }
}

/**
 * The key of this process, generated when it starts: the tests' fixtures and envelope builders,
 * the benchmarks and the chaos consumers all share it, so an envelope one builds is accepted by
 * a consumer another builds, and refused by anything holding another key.
 */
export const PROCESS_SIGNING_KEY = new LocalSigningKey();

function isJsonObject(body: string): boolean {
  try {
    const json: unknown = JSON.parse(body);
    return typeof json === 'object' && json !== null && !Array.isArray(json);
  } catch {
    return false;
  }
}
