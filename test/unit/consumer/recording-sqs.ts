import { SQSClient } from '@aws-sdk/client-sqs';

/** One request the client was asked to send: the command's name and its input. */
export interface SentCommand {
  readonly command: string;
  readonly input: Record<string, unknown>;
}

/** What the stub answers to a command: output fields, or an error to throw. `undefined`: the default answer. */
export type SqsAnswer = (sent: SentCommand, sameCommandsBefore: number) => Record<string, unknown> | Error | undefined;

/**
 * A real `SQSClient` whose first middleware records each command and answers it, so no
 * request leaves the process. By default `GetQueueUrl` answers with a URL built from the
 * queue's name and every other command succeeds with no output.
 */
export function recordingSqs(answer: SqsAnswer = () => undefined) {
  const sent: SentCommand[] = [];
  const sqs = new SQSClient({
    region: 'us-east-1',
    credentials: { accessKeyId: 'unit', secretAccessKey: 'unit' },
    maxAttempts: 1,
  });
  sqs.middlewareStack.add(
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
    { step: 'initialize', name: 'recordingSqs' },
  );
  return {
    sqs,
    sent,
    /** The inputs of the commands of one kind, in the order they were sent. */
    inputsOf: (command: string) => sent.filter((s) => s.command === command).map((s) => s.input),
  };
}

function defaultAnswer(sent: SentCommand): Record<string, unknown> {
  if (sent.command === 'GetQueueUrlCommand')
    return {
      QueueUrl: `https://sqs.us-east-1.amazonaws.com/${String(sent.input.QueueOwnerAWSAccountId)}/${String(sent.input.QueueName)}`,
    };
  return {};
}

/** An error as the SDK raises it for a service fault (its `name` is the fault's). */
export function serviceError(name: string, message = name): Error {
  return Object.assign(new Error(message), { name });
}
