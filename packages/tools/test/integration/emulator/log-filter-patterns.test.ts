import { randomUUID } from 'node:crypto';
import {
  type CloudWatchLogsClient,
  CreateLogGroupCommand,
  CreateLogStreamCommand,
  FilterLogEventsCommand,
  PutLogEventsCommand,
} from '@aws-sdk/client-cloudwatch-logs';
import { logFilterPattern } from '@rocketmq-lambda/ops/operations/index.ts';
import { createCloudWatchLogs, emulatorConfig } from '@rocketmq-lambda/runtime/aws/index.ts';
import { describe, expect, inject, it } from 'vitest';

const LINES = [
  { key: 'SO-1', msgId: 'AA01', outcome: 'processed', attempt: 1 },
  { key: 'SO-1#PAID', msgId: 'AA02', outcome: 'processed', attempt: 1 },
  { key: 'SO-10', msgId: 'AA03', outcome: 'failed', attempt: 3 },
  { key: 'SO-2', msgId: 'AA04', outcome: 'duplicate', winnerMsgId: 'AA01', attempt: 1 },
  { key: 'SO-3', msgId: 'AA05', outcome: 'failed', attempt: 2, nested: { code: 'PAYLOAD_CONFLICT' } },
];

async function logGroupWithLines(logs: CloudWatchLogsClient): Promise<string> {
  const logGroupName = `/aws/lambda/t${randomUUID().slice(0, 8)}-points-consumer`;
  await logs.send(new CreateLogGroupCommand({ logGroupName }));
  await logs.send(new CreateLogStreamCommand({ logGroupName, logStreamName: 's' }));
  const now = Date.now();
  await logs.send(
    new PutLogEventsCommand({
      logGroupName,
      logStreamName: 's',
      logEvents: [
        { timestamp: now, message: 'START RequestId: 1 Version: $LATEST' },
        ...LINES.map((l, i) => ({ timestamp: now + i + 1, message: JSON.stringify(l) })),
      ],
    }),
  );
  return logGroupName;
}

/** What the launcher's FilterLogEvents selects with a pattern: the msgIds of the lines, or `START` for the plain one. */
async function selected(logs: CloudWatchLogsClient, logGroupName: string, filterPattern: string) {
  const { events = [] } = await logs.send(new FilterLogEventsCommand({ logGroupName, filterPattern }));
  return events.map((e) => (e.message!.startsWith('{') ? JSON.parse(e.message!).msgId : e.message!.split(' ')[0]));
}

describe('emulator: CloudWatch Logs JSON filter patterns (packages/tools/src/emulator/log_filter_patterns.py)', () => {
  it("selects the lines ops trace's pattern names, as CloudWatch Logs does", async () => {
    const logs = createCloudWatchLogs(emulatorConfig(inject('emulatorEndpoint')));
    const group = await logGroupWithLines(logs);
    expect(await selected(logs, group, logFilterPattern({ orderNo: 'SO-1' }))).toEqual(['AA01', 'AA02']);
    expect(await selected(logs, group, logFilterPattern({ msgIds: ['AA01'] }))).toEqual(['AA01', 'AA04']);
  });

  it('compares numbers as numbers, binds && tighter than ||, reads nested fields, and keeps plain terms stock', async () => {
    const logs = createCloudWatchLogs(emulatorConfig(inject('emulatorEndpoint')));
    const group = await logGroupWithLines(logs);
    expect(await selected(logs, group, '{ $.attempt >= 2 }')).toEqual(['AA03', 'AA05']);
    expect(await selected(logs, group, '{ $.outcome = "failed" && $.attempt > 2 || $.key = SO-2 }')).toEqual([
      'AA03',
      'AA04',
    ]);
    expect(await selected(logs, group, '{ ($.outcome = "failed") && ($.key != "SO-1*") }')).toEqual(['AA05']);
    expect(await selected(logs, group, '{ $.nested.code = "PAYLOAD_CONFLICT" }')).toEqual(['AA05']);
    expect(await selected(logs, group, '"START"')).toEqual(['START']);
    // Outside the subset: moto's stock answer, every event.
    expect(await selected(logs, group, '{ $.nested IS NULL }')).toHaveLength(LINES.length + 1);
  });
});
