import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { type TrafficMessage, trafficMessage } from './traffic.ts';

/** What reading the file found, reported before the run so no line disappears unnoticed. */
export interface TrafficFileAccount {
  readonly path: string;
  readonly lines: number;
  readonly envelopes: number;
  /** Lines that are not JSON or not an envelope: they are still sent, and dead-lettered by the consumers. */
  readonly badLines: ReadonlyArray<{ line: number; reason: string }>;
  /** Empty or whitespace-only lines: no message at all (SQS cannot carry an empty body). */
  readonly blankLines: readonly number[];
}

export class TrafficFileError extends Error {
  override readonly name = 'TrafficFileError';
}

/** Reads a JSONL file of bridge envelopes, one per line, in file order. */
export async function readTrafficFile(
  path: string,
): Promise<{ messages: TrafficMessage[]; account: TrafficFileAccount }> {
  const messages: TrafficMessage[] = [];
  const badLines: Array<{ line: number; reason: string }> = [];
  const blankLines: number[] = [];
  let lines = 0;
  try {
    const input = createInterface({ input: createReadStream(path, { encoding: 'utf8' }), crlfDelay: Infinity });
    for await (const text of input) {
      lines++;
      if (text.trim() === '') {
        blankLines.push(lines);
        continue;
      }
      const message = trafficMessage(text, { line: lines });
      if (message.rejection !== undefined) badLines.push({ line: lines, reason: message.rejection });
      messages.push(message);
    }
  } catch (error) {
    throw new TrafficFileError(`cannot read ${path}: ${(error as Error).message}`, { cause: error });
  }
  return { messages, account: { path, lines, envelopes: messages.length - badLines.length, badLines, blankLines } };
}
