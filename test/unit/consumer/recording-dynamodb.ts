import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { SentCommand } from './recording-sqs.ts';

/** What the stub answers: output fields as the document client returns them (native values), or an error to throw. */
export type DynamoDbAnswer = (
  sent: SentCommand,
  sameCommandsBefore: number,
) => Record<string, unknown> | Error | undefined;

/**
 * A real `DynamoDBDocumentClient` whose base client answers each command in-process: for
 * the answers the emulator never gives (a refusal without the old item, a cancellation
 * that blames no action, the SDK's retry of a request whose answer was lost). It answers
 * before the document client marshals: inputs and outputs are native values, while an
 * error's `Item` stays in DynamoDB's wire form (`marshall`), as the SDK raises it.
 */
export function recordingDynamoDb(answer: DynamoDbAnswer) {
  const sent: SentCommand[] = [];
  const base = new DynamoDBClient({
    region: 'us-east-1',
    credentials: { accessKeyId: 'unit', secretAccessKey: 'unit' },
    maxAttempts: 1,
  });
  base.middlewareStack.add(
    (_next, context) => async (args) => {
      const request: SentCommand = {
        command: context.commandName ?? 'unknown',
        input: args.input as Record<string, unknown>,
      };
      const before = sent.filter((s) => s.command === request.command).length;
      sent.push(request);
      const answered = answer(request, before) ?? {};
      if (answered instanceof Error) throw answered;
      return { output: { $metadata: {}, ...answered }, response: {} };
    },
    { step: 'initialize', name: 'recordingDynamoDb' },
  );
  return {
    client: DynamoDBDocumentClient.from(base),
    sent,
    inputsOf: (command: string) => sent.filter((s) => s.command === command).map((s) => s.input),
  };
}
