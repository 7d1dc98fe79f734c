/**
 * What the consumer's signature check costs per record, apart from everything else: a batch of
 * ten envelopes shaped like the bench's awards through `signatureRefusals`, on the ring shapes a
 * deployment meets.
 *
 *   npm run bench -- signature [--records 1000] [--rounds 20] [--repeats 5] [--json]
 *
 * - `named key`: an envelope that names its key (`signaturekey`), as the bridge writes them;
 * - `unnamed, 3-key ring`: one signed before envelopes named their key, with the oldest of three
 *   accepted keys (a ring during a rotation's retention), so every key is tried;
 * - `parseEnvelope`: what the consumer spends reading the same record anyway, for scale.
 * Each figure is the median µs per record over `--repeats`, the range beside it. Profile it with
 * `node --cpu-prof --import tsx packages/tools/src/bench/bench.ts signature`.
 */
import { createHmac } from 'node:crypto';
import { parseArgs } from 'node:util';
import {
  buildEnvelope,
  generateSigningKey,
  MsgIdGenerator,
  parseEnvelope,
  StaticSigningKeys,
  serializeEnvelope,
  signatureRefusals,
  signEnvelope,
} from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import canonicalize from 'canonicalize';
import { median, positiveInt } from './bench-support.ts';

interface Spread {
  median: number;
  min: number;
  max: number;
}

export async function signatureBench(argv: readonly string[]): Promise<void> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      records: { type: 'string', default: '1000' },
      rounds: { type: 'string', default: '20' },
      repeats: { type: 'string', default: '5' },
      json: { type: 'boolean', default: false },
    },
  });
  const records = positiveInt(values.records, 'records');
  const rounds = positiveInt(values.rounds, 'rounds');
  const repeats = positiveInt(values.repeats, 'repeats');

  const keys = [generateSigningKey(), generateSigningKey(), generateSigningKey()];
  const { named, unnamed } = signedAwards(records, keys);
  const measure = (run: () => Promise<void> | void) => usPerRecord(run, { records, rounds, repeats });
  const figures = {
    namedKey: await measure(checked(named, new StaticSigningKeys(keys[0]!))),
    unnamedThreeKeyRing: await measure(checked(unnamed, new StaticSigningKeys(...keys))),
    parseEnvelope: await measure(() => {
      for (const body of named) parseEnvelope(body);
    }),
  };
  const line = (label: string, f: Spread) =>
    `${label.padEnd(24)} ${String(f.median).padStart(7)} µs / record  (${f.min}–${f.max})`;
  console.log(`${records} award envelopes of ${named[0]!.length} bytes, batches of 10, ${rounds} rounds × ${repeats}`);
  console.log(line('named key', figures.namedKey));
  console.log(line('unnamed, 3-key ring', figures.unnamedThreeKeyRing));
  console.log(line('parseEnvelope (scale)', figures.parseEnvelope));
  if (values.json) console.log(JSON.stringify({ records, rounds, repeats, ...figures }));
}

/** `records` award envelopes, signed naming the first key, and signed as before envelopes named one, with the third. */
function signedAwards(records: number, keys: readonly Uint8Array[]): { named: string[]; unnamed: string[] } {
  const ids = new MsgIdGenerator();
  const envelopes = Array.from({ length: records }, (_, i) =>
    buildEnvelope({
      topic: 'ORDER_TOPIC',
      msgId: ids.next(),
      tags: 'PAID',
      keys: [`SO-BENCH-${i}`],
      body: JSON.stringify({ orderNo: `SO-BENCH-${i}`, userId: `u${i % 200}`, points: 1 + (i % 500) }),
      userProperties: { traceparent: `00-${(i + 1).toString(16).padStart(32, 'a')}-00f067aa0ba902b7-01` },
    }),
  );
  const named = envelopes.map((e) => serializeEnvelope(signEnvelope(e, keys[0]!)));
  // The signature as it was made before envelopes named their key: the MAC of the canonical form alone.
  const unnamed = envelopes.map((e) =>
    serializeEnvelope({
      ...e,
      signature: `hmac-sha256:${createHmac('sha256', keys[2]!).update(canonicalize(e)!).digest('base64url')}`,
    }),
  );
  return { named, unnamed };
}

async function usPerRecord(
  run: () => Promise<void> | void,
  { records, rounds, repeats }: { records: number; rounds: number; repeats: number },
): Promise<Spread> {
  await run();
  const samples: number[] = [];
  for (let r = 0; r < repeats; r++) {
    const t0 = performance.now();
    for (let i = 0; i < rounds; i++) await run();
    samples.push(((performance.now() - t0) * 1000) / (rounds * records));
  }
  const round = (n: number) => Math.round(n * 10) / 10;
  return { median: round(median(samples)), min: round(Math.min(...samples)), max: round(Math.max(...samples)) };
}

const checked = (bodies: readonly string[], ring: StaticSigningKeys) => async () => {
  for (let i = 0; i < bodies.length; i += 10) {
    if ((await signatureRefusals(bodies.slice(i, i + 10), ring)).size > 0)
      throw new Error('a genuine envelope was refused');
  }
};
