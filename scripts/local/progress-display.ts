import type { RunProgress } from './local-pipeline.ts';

const PLAIN_EVERY_MS = 5_000;

/**
 * Progress of a replay on stderr (stdout stays for the report and the JSON line): one
 * line redrawn in place on a terminal; on a pipe or a CI log, a plain line every few
 * seconds, so short runs stay quiet and long ones show they are alive.
 */
export class ProgressDisplay {
  private lastPlain = 0;
  private drawn = false;

  constructor(private readonly stream: NodeJS.WriteStream = process.stderr) {}

  update = (p: RunProgress) => {
    const text = `[${(p.elapsedMs / 1000).toFixed(1)}s] ${p.phase}: enqueued ${p.enqueued}/${p.toEnqueue}, delivered ${p.delivered}, processed ${p.processed}, in queues ${p.inQueues}`;
    if (this.stream.isTTY) {
      this.stream.write(`\r\x1b[2K${text.slice(0, Math.max(20, (this.stream.columns ?? 120) - 1))}`);
      this.drawn = true;
    } else if (p.elapsedMs - this.lastPlain >= PLAIN_EVERY_MS) {
      this.lastPlain = p.elapsedMs;
      this.stream.write(`${text}\n`);
    }
  };

  done(): void {
    if (this.drawn) this.stream.write('\r\x1b[2K');
    this.drawn = false;
  }
}
