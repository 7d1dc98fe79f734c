import { GetQueueAttributesCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';

/** A message read from a queue, with its message attributes as plain strings. */
export interface ReadMessage {
  body: string;
  attributes: Record<string, string>;
  /** What SQS says of it (`MessageGroupId`, `MessageDeduplicationId` on a FIFO queue, …). */
  systemAttributes: Record<string, string>;
}

/** Receives every message of a queue (each hidden for a minute, so none is read twice). */
export async function readAllMessages(sqs: SQSClient, queueUrl: string): Promise<ReadMessage[]> {
  const out: ReadMessage[] = [];
  for (;;) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        MessageAttributeNames: ['All'],
        MessageSystemAttributeNames: ['All'],
        VisibilityTimeout: 60,
      }),
    );
    if (Messages.length === 0) return out;
    for (const m of Messages)
      out.push({
        body: m.Body!,
        attributes: Object.fromEntries(
          Object.entries(m.MessageAttributes ?? {}).map(([k, v]) => [k, v.StringValue ?? '']),
        ),
        systemAttributes: { ...m.Attributes },
      });
  }
}

/** Messages in a queue: visible, and in flight (received, or delayed by a visibility change). */
export async function queueDepth(sqs: SQSClient, queueUrl: string): Promise<{ visible: number; inFlight: number }> {
  const { Attributes = {} } = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return {
    visible: Number(Attributes.ApproximateNumberOfMessages),
    inFlight: Number(Attributes.ApproximateNumberOfMessagesNotVisible),
  };
}
