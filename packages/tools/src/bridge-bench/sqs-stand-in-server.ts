import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { parentPort } from 'node:worker_threads';

/**
 * The worker half of the SQS stand-in (see sqs-stand-in.ts): an HTTP server on loopback that
 * answers the AWS JSON 1.0 protocol the SDK speaks to SQS, for the two calls the bridge makes
 * (`SendMessageBatch`, and `SendMessage` for DLQ notices). Every entry is accepted; the MD5 the
 * SDK checks is computed as SQS does. It keeps the envelope ids it saw so the bench can tell
 * that every message arrived.
 */
interface Entry {
  Id: string;
  MessageBody: string;
}

const seen = new Set<string>();

function md5(text: string): string {
  return createHash('md5').update(text, 'utf8').digest('hex');
}

function accept(body: string): void {
  const id = (JSON.parse(body) as { id?: unknown }).id;
  if (typeof id === 'string') seen.add(id);
}

function answer(target: string, input: Record<string, unknown>): { status: number; body: unknown } {
  if (target === 'AmazonSQS.SendMessageBatch') {
    const batch = input.Entries as Entry[];
    for (const entry of batch) accept(entry.MessageBody);
    return {
      status: 200,
      body: {
        Successful: batch.map((e) => ({ Id: e.Id, MessageId: randomUUID(), MD5OfMessageBody: md5(e.MessageBody) })),
        Failed: [],
      },
    };
  }
  if (target === 'AmazonSQS.SendMessage') {
    const body = input.MessageBody as string;
    accept(body);
    return { status: 200, body: { MessageId: randomUUID(), MD5OfMessageBody: md5(body) } };
  }
  return {
    status: 400,
    body: { __type: 'com.amazonaws.sqs#InvalidAction', message: `the stand-in does not answer ${target}` },
  };
}

function handle(req: IncomingMessage, res: ServerResponse): void {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const { status, body } = answer(
      String(req.headers['x-amz-target']),
      JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>,
    );
    res.writeHead(status, { 'content-type': 'application/x-amz-json-1.0' }).end(JSON.stringify(body));
  });
}

const server = createServer(handle);
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as { port: number };
  parentPort!.postMessage(`http://127.0.0.1:${port}`);
});
parentPort!.on('message', (message: 'distinct ids' | 'stop') => {
  if (message === 'distinct ids') parentPort!.postMessage(seen.size);
  else server.close(() => parentPort!.close());
});
