/**
 * What one `SendMessageBatch` of ten envelopes costs the bridge's process in CPU, with no broker:
 * the part of the bridge's cost per message that the SQS call sets (see docs/bridge.md, "Cost per
 * message").
 *
 *   npm run bench -- sqs-call [--calls 4000] [--rounds 3] [--lanes 4] [--json]
 *
 * Four ways to make the same call against the benchmark's SQS stand-in, alternated `rounds` times:
 *   - `sdkDefaults`: `SQSClient` with the SDK's default settings;
 *   - `sdkNoMd5`: the same without the MD5 check of the bodies (the bridge's first setting);
 *   - `sdkBridge`: `SQSClient` with the bridge's settings (`BRIDGE_SQS_CLIENT_SETTINGS`);
 *   - `floor`: what any client must do: the same JSON body, signed with the SDK's own SigV4 signer
 *     (`@smithy/signature-v4`), sent over a keep-alive `node:http` agent, the answer parsed. Not a
 *     client: no retries, no error mapping, no endpoint rules. It shows how much of the call is
 *     the work itself and how much the SDK's request path.
 * Each round sends `calls` calls in `lanes` concurrent loops, after 2,000 calls of warm-up each, and
 * counts the process's CPU less the stand-in's thread. Figures: medians over the rounds.
 */
import { Agent, request } from 'node:http';
import { parseArgs } from 'node:util';
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { BRIDGE_SQS_CLIENT_SETTINGS } from '@rocketmq-lambda/bridge/internal.ts';
import {
  buildEnvelope,
  generateSigningKey,
  serializeEnvelope,
  signEnvelope,
} from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { Sha256 } from '@smithy/core/checksum';
import { SignatureV4 } from '@smithy/signature-v4';
import { type SqsStandIn, startSqsStandIn } from '../bridge-bench/sqs-stand-in.ts';
import { median, positiveInt } from './bench-support.ts';

const ENTRIES_PER_CALL = 10;
const WARM_UP_CALLS = 2000;
const CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' };
const REGION = 'us-east-1';

type Send = () => Promise<void>;
const Way = { SdkDefaults: 'sdkDefaults', SdkNoMd5: 'sdkNoMd5', SdkBridge: 'sdkBridge', Floor: 'floor' } as const;
type Way = (typeof Way)[keyof typeof Way];

export async function sqsCallBench(argv: readonly string[]): Promise<void> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      calls: { type: 'string', default: '4000' },
      rounds: { type: 'string', default: '3' },
      lanes: { type: 'string', default: '4' },
      json: { type: 'boolean', default: false },
    },
  });
  const calls = positiveInt(values.calls, 'calls');
  const rounds = positiveInt(values.rounds, 'rounds');
  const lanes = positiveInt(values.lanes, 'lanes');
  const standIn = await startSqsStandIn();
  try {
    const queueUrl = `${standIn.endpoint}/000000000000/bench`;
    const entries = envelopeEntries();
    const senders: Record<Way, Send> = {
      sdkDefaults: sdkSender(standIn, queueUrl, entries, {}),
      sdkNoMd5: sdkSender(standIn, queueUrl, entries, { md5: false }),
      sdkBridge: sdkSender(standIn, queueUrl, entries, BRIDGE_SQS_CLIENT_SETTINGS),
      floor: floorSender(standIn, queueUrl, entries),
    };
    const perCall: Record<Way, number[]> = { sdkDefaults: [], sdkNoMd5: [], sdkBridge: [], floor: [] };
    for (const send of Object.values(senders)) for (let i = 0; i < WARM_UP_CALLS; i++) await send();
    for (let round = 0; round < rounds; round++) {
      for (const way of Object.values(Way)) perCall[way].push(await cpuPerCall(senders[way], standIn, calls, lanes));
    }
    const figures = {
      calls,
      rounds,
      lanes,
      entriesPerCall: ENTRIES_PER_CALL,
      bodyBytes: Buffer.byteLength(entries[0]!.MessageBody),
      microsPerMessage: Object.fromEntries(
        Object.values(Way).map((way) => [way, Math.round(median(perCall[way]) / ENTRIES_PER_CALL)]),
      ) as Record<Way, number>,
      microsPerCallByRound: perCall,
    };
    console.error(
      [
        `SendMessageBatch of ${ENTRIES_PER_CALL} signed envelopes (${figures.bodyBytes} bytes each), ${calls} calls × ${rounds} rounds, ${lanes} lanes`,
        ...Object.values(Way).map(
          (way) =>
            `  ${way.padEnd(12)} ${figures.microsPerMessage[way]} µs of CPU per message   (per call, by round: ${perCall[way].join(', ')} µs)`,
        ),
      ].join('\n'),
    );
    if (values.json) console.log(JSON.stringify(figures));
  } finally {
    await standIn.stop();
  }
}

/** Ten signed envelopes of a PAID order, as the bridge writes them. */
function envelopeEntries() {
  const key = generateSigningKey();
  return Array.from({ length: ENTRIES_PER_CALL }, (_, i) => {
    const envelope = buildEnvelope(
      {
        topic: 'ORDER_TOPIC',
        msgId: `7F0000010001${String(i).padStart(20, '0')}`,
        tags: 'PAID',
        keys: [`ORD-2026-${i}`],
        body: Buffer.from(JSON.stringify({ orderNo: `ORD-2026-${i}`, userId: `U-${i}`, points: 300, status: 'PAID' })),
        userProperties: { region: 'cn-hangzhou' },
        bornHost: '10.0.0.1:50123',
        bornTimestamp: Date.now(),
        storeHost: '10.0.0.2:10911',
        storeTimestamp: Date.now(),
        queueId: i % 4,
        queueOffset: i,
        brokerName: 'broker-a',
        reconsumeTimes: 0,
        cluster: 'bench',
      },
      () => Date.now(),
    );
    return { Id: `e${i}`, MessageBody: serializeEnvelope(signEnvelope(envelope, key)) };
  });
}

function sdkSender(
  standIn: SqsStandIn,
  queueUrl: string,
  entries: { Id: string; MessageBody: string }[],
  settings: object,
): Send {
  const client = new SQSClient({
    region: REGION,
    endpoint: standIn.endpoint,
    credentials: CREDENTIALS,
    maxAttempts: 3,
    ...settings,
  });
  return async () =>
    landedAll(await client.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries })));
}

class CallFailedError extends Error {
  override readonly name = 'CallFailedError';
}

/** A call counts only when SQS took every entry: a failing way must not pass for a cheap one. */
function landedAll(answer: unknown): void {
  const successful = (answer as { Successful?: unknown[] } | undefined)?.Successful?.length ?? 0;
  if (successful !== ENTRIES_PER_CALL) {
    throw new CallFailedError(`SendMessageBatch took ${successful} of ${ENTRIES_PER_CALL} entries`);
  }
}

function floorSender(standIn: SqsStandIn, queueUrl: string, entries: { Id: string; MessageBody: string }[]): Send {
  const endpoint = new URL(standIn.endpoint);
  const agent = new Agent({ keepAlive: true });
  const signer = new SignatureV4({ credentials: CREDENTIALS, region: REGION, service: 'sqs', sha256: Sha256 });
  return async () => {
    const body = JSON.stringify({ QueueUrl: queueUrl, Entries: entries });
    const signed = await signer.sign({
      method: 'POST',
      protocol: endpoint.protocol,
      hostname: endpoint.hostname,
      port: Number(endpoint.port),
      path: '/',
      query: {},
      headers: {
        host: endpoint.host,
        'content-type': 'application/x-amz-json-1.0',
        'x-amz-target': 'AmazonSQS.SendMessageBatch',
        'content-length': String(Buffer.byteLength(body)),
      },
      body,
    });
    return new Promise((resolve, reject) => {
      const req = request(
        { agent, host: endpoint.hostname, port: endpoint.port, method: 'POST', path: '/', headers: signed.headers },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => {
            try {
              if (res.statusCode !== 200) throw new CallFailedError(`SendMessageBatch answered ${res.statusCode}`);
              resolve(landedAll(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
            } catch (err) {
              reject(err);
            }
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  };
}

async function cpuPerCall(send: Send, standIn: SqsStandIn, calls: number, lanes: number): Promise<number> {
  const standInBefore = await standIn.cpuMicros();
  const before = process.cpuUsage();
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      for (let i = 0; i < Math.ceil(calls / lanes); i++) await send();
    }),
  );
  const used = process.cpuUsage(before);
  const standInUsed = (await standIn.cpuMicros()) - standInBefore;
  return Math.round((used.user + used.system - standInUsed) / (Math.ceil(calls / lanes) * lanes));
}
