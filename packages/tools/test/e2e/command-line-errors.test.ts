import { randomUUID } from 'node:crypto';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { createSqs, emulatorConfig } from '@rocketmq-lambda/runtime/aws/index.ts';
import { DEAD_LETTER_ATTRIBUTES } from '@rocketmq-lambda/runtime/consumer/internal.ts';
import { MsgIdGenerator } from '@rocketmq-lambda/runtime/rocketmq/index.ts';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { PROCESS_SIGNING_KEY } from '../../src/local/local-signing-key.ts';
import { provisionLocal } from '../../src/local/provision.ts';
import { runCommand } from './spawned-commands.ts';

const POINTS = 'point-consumer-group';
const ENTRY = { start: 'packages/tools/src/local/local-run.ts', ops: 'packages/ops/src/command/ops.ts' } as const;

interface BadInput {
  /** What a person typed wrong. */
  readonly name: string;
  readonly command: keyof typeof ENTRY;
  readonly args: (stage: Stage) => string[];
  readonly exit: number;
  /** What stderr (or `stdout`) must say; `never` must not appear (a stack trace, the whole help, a class name). */
  readonly says: (stage: Stage) => string[];
  readonly stdout?: (stage: Stage) => string[];
  readonly never?: readonly string[];
}

/** A stage on the suite's emulator, with one letter held back in its points DLQ. */
interface Stage {
  endpoint: string;
  prefix: string;
}

const NO_NOISE = ['Usage:', '    at ', 'Error:'];

const BAD_INPUTS: readonly BadInput[] = [
  {
    name: 'npm start with a mistyped option',
    command: 'start',
    args: () => ['--grups', POINTS],
    exit: 2,
    says: () => ['npm start: unknown option --grups; did you mean --groups?', 'npm start -- --help lists every option'],
    never: NO_NOISE,
  },
  {
    name: "npm start with ops' spelling --group: taken, and the group checked",
    command: 'start',
    args: () => ['--group', 'points'],
    exit: 2,
    says: () => ['unknown consumer group "points"; the catalogue has: point-consumer-group'],
    never: ['unknown option'],
  },
  {
    name: 'npm start with an option missing its value',
    command: 'start',
    args: () => ['--events'],
    exit: 2,
    says: () => ['npm start: --events needs a value'],
    never: NO_NOISE,
  },
  {
    name: 'npm start with a value for a switch',
    command: 'start',
    args: () => ['--json=yes'],
    exit: 2,
    says: () => ['npm start: --json takes no value'],
    never: NO_NOISE,
  },
  {
    name: 'npm start with a word for a number',
    command: 'start',
    args: () => ['--consumers', 'many'],
    exit: 2,
    says: () => ['npm start: --consumers must be a number, got "many"'],
    never: NO_NOISE,
  },
  {
    name: 'npm start with --original-times and no file',
    command: 'start',
    args: () => ['--original-times'],
    exit: 2,
    says: () => ['--original-times is about the times of an --events file: give one'],
    never: NO_NOISE,
  },
  {
    name: 'npm start with a positional argument',
    command: 'start',
    args: () => ['traffic.jsonl'],
    exit: 2,
    says: () => ['npm start: unexpected argument "traffic.jsonl"'],
    never: NO_NOISE,
  },
  {
    name: 'npm start with a file that is not there',
    command: 'start',
    args: () => ['--events', '/nonexistent/traffic.jsonl'],
    exit: 1,
    says: () => ['local run failed: cannot read /nonexistent/traffic.jsonl'],
    never: ['    at '],
  },
  {
    name: 'npm start against an emulator that is gone',
    command: 'start',
    args: () => ['--endpoint', 'http://127.0.0.1:1', '--no-traffic'],
    exit: 1,
    says: () => [
      'local run failed: cannot reach the emulator at http://127.0.0.1:1 (ECONNREFUSED): is the run that kept it (--keep) still running?',
    ],
    never: ['    at '],
  },
  {
    name: "ops with npm start's spelling --groups",
    command: 'ops',
    args: () => ['dlq', 'list', '--groups', POINTS],
    exit: 2,
    says: () => ['ops: unknown option --groups; did you mean --group?', 'npm run ops -- --help lists every command'],
    never: NO_NOISE,
  },
  {
    name: 'ops with a mistyped command',
    command: 'ops',
    args: () => ['audits'],
    exit: 2,
    says: () => ['ops: unknown command "audits"; did you mean audit?'],
    never: NO_NOISE,
  },
  {
    name: 'ops with an option missing its value',
    command: 'ops',
    args: () => ['audit', '--segments'],
    exit: 2,
    says: () => ['ops: --segments needs a value'],
    never: NO_NOISE,
  },
  {
    name: 'ops audit with a prefix that names no stage',
    command: 'ops',
    args: (s) => ['audit', '--endpoint', s.endpoint, '--prefix', `no${s.prefix}`],
    exit: 2,
    says: (s) => [
      `ops: no stage "no${s.prefix}" at ${s.endpoint} (--prefix no${s.prefix}): none of its tables exists (no${s.prefix}-idempotency, no${s.prefix}-point-ledger`,
      `Prefixes with tables there: `,
      s.prefix,
    ],
    never: ['ResourceNotFoundException', ...NO_NOISE],
  },
  {
    name: 'ops migrate import --ledger moved for a group that keeps no ledger',
    command: 'ops',
    args: () => [
      ...['migrate', 'import', '--group', 'order-status-consumer-group', '--ledger', 'moved'],
      ...['--source', 'examples/cutover/legacy-points.csv', '--map', 'time=', '--dry-run'],
    ],
    exit: 2,
    says: () => [
      'ops: --ledger moved: consumer group order-status-consumer-group writes no point ledger',
      'npm run ops -- --help',
    ],
    never: ['IncoherentLifetimesError', ...NO_NOISE],
  },
  {
    name: 'ops dlq redrive --dry-run of a letter it holds back: one count for what the filter matched',
    command: 'ops',
    args: (s) => [
      'dlq',
      'redrive',
      '--all',
      '--dry-run',
      '--group',
      POINTS,
      '--endpoint',
      s.endpoint,
      '--prefix',
      s.prefix,
    ],
    exit: 1,
    says: () => [],
    stdout: () => [
      'Examined 1 message(s); 1 matched the filter: 0 would be sent back, 1 held back.',
      'Held back 1 of them; they stay in the DLQ:',
      'PAYLOAD_CONFLICT: this order was already consumed with other content',
    ],
    never: ['0 selected', 'selected message'],
  },
];

describe('bad inputs to npm start and ops, each with its message and exit code (the real commands)', () => {
  const stage: Stage = { endpoint: inject('emulatorEndpoint'), prefix: `cli${randomUUID().slice(0, 6)}` };

  beforeAll(async () => {
    const resources = await provisionLocal(stage.endpoint, stage.prefix, { groups: [POINTS] });
    const queues = resources.queues[POINTS]!;
    const orderNo = 'SO202612040000000001';
    const body = PROCESS_SIGNING_KEY.envelope({
      topic: 'ORDER_TOPIC',
      msgId: new MsgIdGenerator().next(),
      tags: 'PAID',
      keys: [orderNo],
      body: JSON.stringify({ orderNo, userId: 'u2', points: 300 }),
    });
    const attribute = (value: string) => ({ DataType: 'String', StringValue: value });
    await createSqs(emulatorConfig(stage.endpoint)).send(
      new SendMessageCommand({
        QueueUrl: queues.deadLetter.url,
        MessageBody: body,
        MessageAttributes: {
          [DEAD_LETTER_ATTRIBUTES.code]: attribute('PAYLOAD_CONFLICT'),
          [DEAD_LETTER_ATTRIBUTES.classification]: attribute('permanent'),
          [DEAD_LETTER_ATTRIBUTES.reason]: attribute(`key ${orderNo} was first consumed with different content`),
          [DEAD_LETTER_ATTRIBUTES.group]: attribute(POINTS),
          [DEAD_LETTER_ATTRIBUTES.key]: attribute(orderNo),
          [DEAD_LETTER_ATTRIBUTES.sourceQueue]: attribute(queues.source.arn),
          [DEAD_LETTER_ATTRIBUTES.deadLetteredAt]: attribute(new Date().toISOString()),
        },
      }),
    );
  });

  it.concurrent.each(BAD_INPUTS.map((b) => [b.name, b] as const))('%s', { timeout: 120_000 }, async (_name, bad) => {
    // Act
    const run = await runCommand('npx', ['tsx', ENTRY[bad.command], ...bad.args(stage)]);

    // Assess
    const output = `stdout:\n${run.stdout}\nstderr:\n${run.stderr}`;
    expect(run.code, output).toBe(bad.exit);
    for (const text of bad.says(stage)) expect(run.stderr, output).toContain(text);
    for (const text of bad.stdout?.(stage) ?? []) expect(run.stdout, output).toContain(text);
    for (const text of bad.never ?? []) expect(`${run.stdout}${run.stderr}`, output).not.toContain(text);
  });
});
