import type { SQSRecord } from 'aws-lambda';

/** An SQS record as Lambda's event source delivers it, for invoking a handler without a queue (tests, benchmarks). */
export function sqsRecord(
  body: string,
  queueArn: string,
  options: { messageId: string; receiveCount?: number },
): SQSRecord {
  return {
    messageId: options.messageId,
    receiptHandle: `rh-${options.messageId}`,
    body,
    attributes: {
      ApproximateReceiveCount: String(options.receiveCount ?? 1),
      SentTimestamp: '0',
      SenderId: 'local',
      ApproximateFirstReceiveTimestamp: '0',
    },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: queueArn,
    awsRegion: queueArn.split(':')[3] || 'us-east-1',
  };
}
