import type { ScanProgress } from '@rocketmq-lambda/runtime/aws/index.ts';

export interface ProgressStream {
  isTTY?: boolean;
  columns?: number;
  write(chunk: string): unknown;
}

/**
 * One redrawn line per table on an interactive terminal, nothing at all otherwise, so a
 * cron job's log or a pipe into `jq` never sees carriage returns.
 */
export class ProgressBar {
  private readonly enabled: boolean;
  private readonly minIntervalMs: number;
  private lastDrawn = 0;
  private open = false;

  constructor(
    private readonly stream: ProgressStream,
    options: { quiet?: boolean; minIntervalMs?: number } = {},
  ) {
    this.enabled = stream.isTTY === true && options.quiet !== true;
    this.minIntervalMs = options.minIntervalMs ?? 100;
  }

  update(progress: ScanProgress): void {
    if (!this.enabled) return;
    const now = Date.now();
    if (this.open && now - this.lastDrawn < this.minIntervalMs) return;
    this.lastDrawn = now;
    this.open = true;
    this.stream.write(`\r\x1b[2K${progressLine(progress, 30)}`);
  }

  /** Ends the current line with its final figures. */
  done(progress: ScanProgress): void {
    if (!this.enabled) return;
    this.stream.write(`\r\x1b[2K${progressLine(progress, 30)}\n`);
    this.open = false;
  }
}

export function progressLine({ table, scanned, estimatedTotal }: ScanProgress, width: number): string {
  if (!estimatedTotal) return `scanning ${table}: ${scanned} items`;
  // The estimate lags writes by hours: never draw more than a full bar.
  const ratio = Math.min(1, scanned / estimatedTotal);
  const filled = Math.round(ratio * width);
  return `scanning ${table} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${scanned}/~${estimatedTotal}`;
}
