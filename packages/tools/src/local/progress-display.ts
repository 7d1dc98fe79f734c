import type { RunProgress } from './local-pipeline.ts';

const PLAIN_EVERY_MS = 5_000;

/**
 * What a replay has done so far, one unit a line: the messages the bridge has sent of the
 * traffic's, then the copies (one per message and subscribed group) in the queues and handed to
 * the consumers. Counting both on one line read as if 47 copies in the queues came from 27
 * messages sent.
 */
export function progressLines(p: RunProgress): [string, string] {
  const at = `[${(p.elapsedMs / 1000).toFixed(1)}s]`;
  return [
    `${at} ${p.phase}: ${p.enqueued} of ${p.toEnqueue} messages sent`,
    `${at} copies: ${p.inQueues} in the queues, ${p.delivered} deliveries to the consumers, ${p.processed} processed`,
  ];
}

/**
 * Progress of a replay on stderr (stdout stays for the report and the JSON line): its lines
 * redrawn in place on a terminal; on a pipe or a CI log, plain lines every few seconds, so short
 * runs stay quiet and long ones show they are alive.
 */
export class ProgressDisplay {
  private lastPlain = 0;
  private drawn = false;

  constructor(private readonly stream: NodeJS.WriteStream = process.stderr) {}

  update = (p: RunProgress) => {
    const lines = progressLines(p);
    if (this.stream.isTTY) {
      const width = Math.max(20, (this.stream.columns ?? 120) - 1);
      // Clear and write both lines, then go back up to the first, so the next update overwrites them.
      this.stream.write(`\r\x1b[2K${lines[0].slice(0, width)}\n\x1b[2K${lines[1].slice(0, width)}\x1b[1A\r`);
      this.drawn = true;
    } else if (p.elapsedMs - this.lastPlain >= PLAIN_EVERY_MS) {
      this.lastPlain = p.elapsedMs;
      this.stream.write(`${lines.join('\n')}\n`);
    }
  };

  done(): void {
    if (this.drawn) this.stream.write('\r\x1b[2K\n\x1b[2K\x1b[1A\r');
    this.drawn = false;
  }
}
