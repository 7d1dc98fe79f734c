import { SQSClient } from '@aws-sdk/client-sqs';
import { type Answer, recordCommands, type SentCommand, STUB_CLIENT_CONFIG } from './recording-client.ts';

export type { SentCommand } from './recording-client.ts';

/** What the stub answers to a command: output fields, or an error to throw. `undefined`: the default answer. */
export type SqsAnswer = Answer;

/**
 * A real `SQSClient` whose first middleware records each command and answers it. By default
 * `GetQueueUrl` answers with a URL built from the queue's name and every other command succeeds
 * with no output.
 */
export function recordingSqs(answer: SqsAnswer = () => undefined) {
  const sqs = new SQSClient(STUB_CLIENT_CONFIG);
  return { sqs, ...recordCommands(sqs, answer, defaultAnswer) };
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
