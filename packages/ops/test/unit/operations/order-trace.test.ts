import {
  type CloudWatchLogsClient,
  FilterLogEventsCommand,
  type FilterLogEventsCommandOutput,
  ResourceNotFoundException,
} from '@aws-sdk/client-cloudwatch-logs';
import { describe, expect, it } from 'vitest';
import { isAbout, logFilterPattern, parseLine, readConsumerLogLines } from '../../../src/operations/function-logs.ts';
import type { OrderEvidence } from '../../../src/operations/order-evidence.ts';
import { orderTraceOf, xrayTraceIdOf } from '../../../src/operations/order-trace.ts';
import { renderOrderTraceMermaid, renderOrderTraceText } from '../../../src/operations/order-trace-output.ts';

const ORDER = 'SO202007051422310088';
const MSG = '0A1B2C3D2A9F18B4AAC217AF18580001';
const RESEND = '0A1B2C3D2A9F18B4AAC217AF24100002';
const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';

const line = (fields: Record<string, unknown>) =>
  JSON.stringify({ level: 'INFO', timestamp: '2026-12-01T10:00:00.000Z', service: 'point-consumer-group', ...fields });

/**
 * FilterLogEvents answers in the API reference's shape: moto applies no JSON filter
 * patterns (docs/emulator.md), so what the service is asked, and paging, are checked here.
 */
function recordedLogs(pages: Record<string, Array<Partial<FilterLogEventsCommandOutput>>>) {
  const asked: Array<FilterLogEventsCommand['input']> = [];
  const client = {
    send: async (command: FilterLogEventsCommand) => {
      expect(command).toBeInstanceOf(FilterLogEventsCommand);
      asked.push(command.input);
      const group = pages[command.input.logGroupName!];
      if (!group)
        throw new ResourceNotFoundException({ message: 'The specified log group does not exist.', $metadata: {} });
      return group[command.input.nextToken ? Number(command.input.nextToken) : 0]!;
    },
  } as unknown as CloudWatchLogsClient;
  return { client, asked };
}

describe('ops trace: reading the function logs', () => {
  it('asks CloudWatch Logs for the key, the <key>#<kind> keys and the msgIds in one JSON pattern', () => {
    expect(logFilterPattern({ orderNo: ORDER })).toBe(`{ ($.key = "${ORDER}") || ($.key = "${ORDER}#*") }`);
    expect(logFilterPattern({ msgIds: [MSG] })).toBe(`{ ($.msgId = "${MSG}") || ($.winnerMsgId = "${MSG}") }`);
    const many = logFilterPattern({ orderNo: ORDER, msgIds: Array.from({ length: 40 }, () => MSG) });
    expect(many.length).toBeLessThanOrEqual(1024);
    expect(many.startsWith(`{ ($.key = "${ORDER}")`)).toBe(true);
  });

  it('quotes a value so that it can only be compared: backslash and double quote escaped', () => {
    expect(logFilterPattern({ orderNo: 'SO-9"||$.key="x\\' })).toBe(
      '{ ($.key = "SO-9\\"||$.key=\\"x\\\\") || ($.key = "SO-9\\"||$.key=\\"x\\\\#*") }',
    );
    expect(logFilterPattern({ orderNo: 'SO/2020/0001' })).toBe(
      '{ ($.key = "SO/2020/0001") || ($.key = "SO/2020/0001#*") }',
    );
  });

  it('reads an order number that holds # as itself, and cuts only an event kind off a key', () => {
    const line = (key: string) => ({ at: 0, logGroup: 'g', message: '', key });
    expect(isAbout(line('JD#8812'), { orderNo: 'JD#8812' })).toBe(true);
    expect(isAbout(line('JD#8812#PAID'), { orderNo: 'JD#8812' })).toBe(true);
    expect(isAbout(line('JD#8812'), { orderNo: 'JD' })).toBe(false);
    expect(isAbout(line('SO-1#FINISHED'), { orderNo: 'SO-1' })).toBe(true);
  });

  it('pages through every answer, re-checks each line, and names a log group that does not exist', async () => {
    const { client, asked } = recordedLogs({
      '/aws/lambda/p-points-consumer': [
        {
          events: [
            { timestamp: 2000, message: 'START RequestId: 6f1c Version: $LATEST' },
            { timestamp: 1000, message: line({ message: 'record processed', key: ORDER, msgId: MSG, attempt: 1 }) },
            { timestamp: 1500, message: line({ message: 'record processed', key: 'SO-OTHER', msgId: RESEND }) },
          ],
          nextToken: '1',
        },
        {
          events: [
            {
              timestamp: 3000,
              message: line({ message: 'duplicate suppressed', key: `${ORDER}`, msgId: RESEND, winnerMsgId: MSG }),
            },
          ],
        },
      ],
    });
    const read = await readConsumerLogLines({
      logs: client,
      logGroups: ['/aws/lambda/p-points-consumer', '/aws/lambda/p-gone'],
      subject: { orderNo: ORDER },
      startTime: 500,
    });
    expect(asked.map((a) => [a.logGroupName, a.nextToken, a.startTime])).toEqual([
      ['/aws/lambda/p-points-consumer', undefined, 500],
      ['/aws/lambda/p-points-consumer', '1', 500],
      ['/aws/lambda/p-gone', undefined, 500],
    ]);
    expect(asked[0]!.filterPattern).toBe(logFilterPattern({ orderNo: ORDER }));
    expect(read.lines.map((l) => [l.at, l.msgId])).toEqual([
      [1000, MSG],
      [3000, RESEND],
    ]);
    expect(read.missingGroups).toEqual(['/aws/lambda/p-gone']);
  });

  it('reads a trace id from the runtime field, or from the X-Ray id Powertools logs', () => {
    expect(parseLine(line({ traceId: TRACE }), 1, 'g')?.traceId).toBe(TRACE);
    expect(parseLine('[1,2]', 1, 'g')).toBeUndefined();
    expect(xrayTraceIdOf(TRACE)).toBe('1-4bf92f35-77b34da6a3ce929d0e0e4736');
  });
});

describe('ops trace: the story', () => {
  const evidence = (lines: Array<Record<string, unknown>>): OrderEvidence => ({
    subject: ORDER,
    orderNo: ORDER,
    groups: [
      {
        group: 'point-consumer-group',
        ordering: 'concurrent',
        logGroup: '/aws/lambda/p-points-consumer',
        lines: lines.map((f, i) => parseLine(line(f), 1_000 + i * 2_400, '/aws/lambda/p-points-consumer')!),
        records: [],
        failureCounts: [],
        deadLetterQueue: 'p-point-consumer-group-dlq',
        letters: [],
      },
    ],
    ledger: undefined,
    gaps: [],
  });

  it('names where each delivery can be opened when its line carries a trace id, and says so when none does', () => {
    const traced = orderTraceOf(
      evidence([
        { message: 'record processed', outcome: 'processed', key: ORDER, msgId: MSG, traceId: TRACE },
        {
          message: 'duplicate suppressed',
          outcome: 'duplicate',
          reason: 'dedup-record-exists',
          key: ORDER,
          msgId: MSG,
          winnerMsgId: MSG,
          xray_trace_id: '1-5759e988-bd862e3fe1be46a994272793',
        },
      ]),
    );
    expect(traced.traces).toEqual([
      { traceId: TRACE, xrayTraceId: '1-4bf92f35-77b34da6a3ce929d0e0e4736', msgIds: [MSG] },
      {
        traceId: '5759e988bd862e3fe1be46a994272793',
        xrayTraceId: '1-5759e988-bd862e3fe1be46a994272793',
        msgIds: [MSG],
      },
    ]);
    const text = renderOrderTraceText(traced, 'ap-northeast-1');
    expect(text).toContain(
      `  ${TRACE}  ${MSG}  https://ap-northeast-1.console.aws.amazon.com/cloudwatch/home?region=ap-northeast-1#xray:traces/1-4bf92f35-77b34da6a3ce929d0e0e4736`,
    );
    const untraced = orderTraceOf(
      evidence([{ message: 'record processed', outcome: 'processed', key: ORDER, msgId: MSG }]),
    );
    expect(renderOrderTraceText(untraced, 'us-east-1')).toContain('Traces: no trace id in these log lines');
  });

  it('tells a redriven copy by the redrive count its consumer logged, when the dead-letter line has aged out', () => {
    const traced = orderTraceOf(
      evidence([
        { message: 'record processed', outcome: 'processed', key: ORDER, msgId: MSG, sqsMessageId: 's-2', attempt: 1 },
        {
          message: 'record processed',
          outcome: 'processed',
          key: ORDER,
          msgId: RESEND,
          sqsMessageId: 's-3',
          attempt: 1,
          redriveCount: 2,
        },
      ]),
    );
    expect(traced.groups[0]!.deliveries.map((d) => [d.msgId, d.redriven, d.redriveCount])).toEqual([
      [MSG, false, undefined],
      [RESEND, true, 2],
    ]);
  });

  it('tells a conflict and a retry, and keeps a sender\u2019s text from breaking the diagram', () => {
    const trace = orderTraceOf(
      evidence([
        {
          message: 'record failed',
          outcome: 'failed',
          key: ORDER,
          msgId: RESEND,
          attempt: 1,
          errorCode: 'PAYLOAD_CONFLICT',
          errorClass: 'permanent',
          reason: 'points differ;\nsequenceDiagram #x',
          disposition: 'dead-letter',
        },
        {
          message: 'record failed',
          outcome: 'failed',
          key: ORDER,
          msgId: MSG,
          attempt: 2,
          errorCode: 'ServiceUnavailable',
          errorClass: 'transient',
          reason: 'try later',
          disposition: 'retry',
          retryInSeconds: 30,
        },
      ]),
    );
    const [conflict, retry] = trace.groups[0]!.deliveries;
    expect(conflict!.outcome).toBe('conflict');
    expect(conflict!.why).toBe('PAYLOAD_CONFLICT (permanent): points differ;\nsequenceDiagram #x; dead-lettered');
    expect(retry!.why).toBe('ServiceUnavailable (transient): try later; retried in 30s');
    const diagram = renderOrderTraceMermaid(trace).split('\n');
    expect(diagram.filter((l) => l === 'sequenceDiagram')).toHaveLength(1);
    expect(diagram).toContain(
      '  Note over F_point_consumer_group: conflict: PAYLOAD_CONFLICT (permanent): points differ sequenceDiagram x dead-lettered',
    );
    expect(diagram).toContain(`  F_point_consumer_group->>L: dead letter ${RESEND}`);
  });
});
