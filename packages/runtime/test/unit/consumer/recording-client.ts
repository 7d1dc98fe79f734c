import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';

/** One request the client was asked to send: the command's name and its input. */
export interface SentCommand {
  readonly command: string;
  readonly input: Record<string, unknown>;
}

/** What a stub answers to a command: output fields, or an error to throw. `undefined`: the default answer. */
export type Answer = (sent: SentCommand, sameCommandsBefore: number) => Record<string, unknown> | Error | undefined;

/**
 * Makes a real SDK client record each command and answer it in-process at its first middleware,
 * so no request leaves the process: for the answers the emulator never gives.
 */
export function recordCommands(
  client: DynamoDBClient | SQSClient,
  answer: Answer,
  defaultAnswer: (sent: SentCommand) => Record<string, unknown> = () => ({}),
) {
  const sent: SentCommand[] = [];
  (client.middlewareStack as DynamoDBClient['middlewareStack']).add(
    (_next, context) => async (args) => {
      const request: SentCommand = {
        command: context.commandName ?? 'unknown',
        input: args.input as Record<string, unknown>,
      };
      const before = sent.filter((s) => s.command === request.command).length;
      sent.push(request);
      const answered = answer(request, before) ?? defaultAnswer(request);
      if (answered instanceof Error) throw answered;
      return { output: { $metadata: {}, ...answered }, response: {} };
    },
    { step: 'initialize', name: 'recordCommands' },
  );
  return {
    sent,
    /** The inputs of the commands of one kind, in the order they were sent. */
    inputsOf: (command: string) => sent.filter((s) => s.command === command).map((s) => s.input),
  };
}

/** Credentials and a single attempt: the stubbed client never retries what the stub answered. */
export const STUB_CLIENT_CONFIG = {
  region: 'us-east-1',
  credentials: { accessKeyId: 'unit', secretAccessKey: 'unit' },
  maxAttempts: 1,
} as const;
