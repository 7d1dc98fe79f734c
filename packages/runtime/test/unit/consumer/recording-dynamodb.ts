import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { type Answer, recordCommands, STUB_CLIENT_CONFIG } from './recording-client.ts';

/** What the stub answers: output fields as the document client returns them (native values), or an error to throw. */
export type DynamoDbAnswer = Answer;

/**
 * A real `DynamoDBDocumentClient` whose base client answers each command in-process: for
 * the answers the emulator never gives (a refusal without the old item, a cancellation
 * that blames no action, the SDK's retry of a request whose answer was lost). It answers
 * before the document client marshals: inputs and outputs are native values, while an
 * error's `Item` stays in DynamoDB's wire form (`marshall`), as the SDK raises it.
 */
export function recordingDynamoDb(answer: DynamoDbAnswer) {
  const base = new DynamoDBClient(STUB_CLIENT_CONFIG);
  return { client: DynamoDBDocumentClient.from(base), ...recordCommands(base, answer) };
}
