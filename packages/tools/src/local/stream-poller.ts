import { DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  type DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type _Record as StreamRecord,
} from '@aws-sdk/client-dynamodb-streams';
import type { Context, DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { lambdaContext } from './lambda-context.ts';

export type StreamHandler = (
  event: DynamoDBStreamEvent,
  context: Context,
) => Promise<DynamoDBBatchResponse | undefined>;

export interface StreamPollerOptions {
  /** A client of the emulator's DynamoDB (DescribeTable) and one of its DynamoDB Streams, on the same endpoint. */
  dynamoDb: DynamoDBClient;
  streams: DynamoDBStreamsClient;
  tableName: string;
  handler: StreamHandler;
  functionName: string;
  /** Records per invocation (Lambda's `BatchSize` for streams, 1–10,000; default 100). */
  batchSize?: number;
  /** The function's timeout: the context's deadline. */
  timeoutMs?: number;
  /**
   * Asked after each batch: true hands the whole batch again from its first record, as a stream event
   * source may after a lost checkpoint (the chaos run's stream redelivery).
   */
  redeliver?: () => boolean;
}

/** What one poll did. */
export interface StreamPollResult {
  /** Records handed to the handler (0: nothing new on the stream). */
  received: number;
  /** The lowest sequence number the handler reported (or the batch's first when it threw): read again from there. */
  retryFrom?: string;
  crashed: boolean;
  records: DynamoDBRecord[];
}

/** Where a shard is read next: from its start, or at / after a sequence number. */
type Position =
  | { type: 'TRIM_HORIZON' }
  | { type: 'AT_SEQUENCE_NUMBER' | 'AFTER_SEQUENCE_NUMBER'; sequenceNumber: string };

/**
 * Behaves like Lambda's DynamoDB Streams event source with `ReportBatchItemFailures` for the local
 * run, the tests and the bench: reads a table's stream from its start on the emulator, hands each
 * batch to the handler in the Lambda event shape, and moves on past the batch, or, when the handler
 * reports failures, back to the lowest sequence number it reported (a throw: back to the batch's
 * first record), as Lambda checkpoints. No bisecting, no retry limit: a record fails until it passes.
 * One shard is what the emulator keeps per table; every shard it lists is read in turn.
 */
export class StreamPoller {
  readonly #positions = new Map<string, Position>();

  private constructor(
    private readonly options: StreamPollerOptions,
    readonly streamArn: string,
  ) {}

  static async open(options: StreamPollerOptions): Promise<StreamPoller> {
    const { Table } = await options.dynamoDb.send(new DescribeTableCommand({ TableName: options.tableName }));
    if (!Table?.LatestStreamArn) throw new Error(`table ${options.tableName} has no stream`);
    return new StreamPoller(options, Table.LatestStreamArn);
  }

  /** One invocation per shard that has records, at most. */
  async pollOnce(): Promise<StreamPollResult> {
    const { StreamDescription } = await this.options.streams.send(
      new DescribeStreamCommand({ StreamArn: this.streamArn }),
    );
    const result: StreamPollResult = { received: 0, crashed: false, records: [] };
    for (const shard of StreamDescription?.Shards ?? []) {
      const polled = await this.#pollShard(shard.ShardId!);
      result.received += polled.received;
      result.records.push(...polled.records);
      result.crashed ||= polled.crashed;
      result.retryFrom ??= polled.retryFrom;
    }
    return result;
  }

  /**
   * Polls until `signal` aborts, waiting `idleMs` after a poll that found nothing (or had to go back),
   * as the stream event source polls a shard about four times a second.
   */
  async run(signal: AbortSignal, idleMs = 50): Promise<void> {
    while (!signal.aborted) {
      const { received, retryFrom } = await this.pollOnce();
      if (received === 0 || retryFrom !== undefined) await new Promise((r) => setTimeout(r, idleMs));
    }
  }

  async #pollShard(shardId: string): Promise<StreamPollResult> {
    const position = this.#positions.get(shardId) ?? { type: 'TRIM_HORIZON' };
    const { ShardIterator } = await this.options.streams.send(
      new GetShardIteratorCommand({
        StreamArn: this.streamArn,
        ShardId: shardId,
        ShardIteratorType: position.type,
        ...('sequenceNumber' in position ? { SequenceNumber: position.sequenceNumber } : {}),
      }),
    );
    const { Records = [] } = await this.options.streams.send(
      new GetRecordsCommand({ ShardIterator: ShardIterator!, Limit: this.options.batchSize ?? 100 }),
    );
    if (Records.length === 0) return { received: 0, crashed: false, records: [] };
    const records = Records.map((r) => lambdaRecord(r, this.streamArn));
    const context = lambdaContext(this.options.functionName, this.options.timeoutMs ?? 30_000);
    let retryFrom: string | undefined;
    let crashed = false;
    try {
      const response = await this.options.handler({ Records: records }, context);
      retryFrom = lowest((response?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
    } catch {
      crashed = true;
      retryFrom = records[0]!.dynamodb!.SequenceNumber!;
    }
    // A lost checkpoint: the whole batch again, from its first record, whatever the handler reported.
    if (this.options.redeliver?.()) retryFrom = records[0]!.dynamodb!.SequenceNumber!;
    this.#positions.set(
      shardId,
      retryFrom !== undefined
        ? { type: 'AT_SEQUENCE_NUMBER', sequenceNumber: retryFrom }
        : { type: 'AFTER_SEQUENCE_NUMBER', sequenceNumber: records.at(-1)!.dynamodb!.SequenceNumber! },
    );
    return { received: records.length, crashed, records, ...(retryFrom !== undefined ? { retryFrom } : {}) };
  }
}

function lowest(sequenceNumbers: readonly string[]): string | undefined {
  return sequenceNumbers.reduce<string | undefined>(
    (low, s) => (low === undefined || BigInt(s) < BigInt(low) ? s : low),
    undefined,
  );
}

/**
 * The SDK's record as Lambda delivers it: the same attribute values (JSON), the creation time in epoch
 * seconds, the stream's ARN. Binary values would need base64; outbox items hold none.
 */
function lambdaRecord(record: StreamRecord, streamArn: string): DynamoDBRecord {
  const { ApproximateCreationDateTime, ...dynamodb } = record.dynamodb ?? {};
  return {
    eventID: record.eventID!,
    eventName: record.eventName as DynamoDBRecord['eventName'],
    eventVersion: record.eventVersion ?? '1.1',
    eventSource: 'aws:dynamodb',
    awsRegion: record.awsRegion ?? 'us-east-1',
    eventSourceARN: streamArn,
    dynamodb: {
      ...(dynamodb as DynamoDBRecord['dynamodb']),
      ...(ApproximateCreationDateTime
        ? { ApproximateCreationDateTime: Math.floor(ApproximateCreationDateTime.getTime() / 1000) }
        : {}),
    },
  };
}
