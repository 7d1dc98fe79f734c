import { afterEach, describe, expect, it, vi } from 'vitest';
import { RouteMetrics } from '../src/bridge-metrics.ts';

interface EmfLine {
  _aws: { CloudWatchMetrics: { Metrics: { Name: string; Unit: string }[] }[] };
  [metric: string]: unknown;
}

/** The EMF lines Powertools Metrics writes to stdout while `run` runs. */
function emfLinesOf(run: () => void): EmfLine[] {
  const lines: EmfLine[] = [];
  const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    const text = String(chunk);
    if (text.startsWith('{"_aws":')) lines.push(JSON.parse(text) as EmfLine);
    return true;
  });
  try {
    run();
  } finally {
    write.mockRestore();
  }
  return lines;
}

describe('RouteMetrics', () => {
  afterEach(() => vi.unstubAllEnvs());

  it('writes one line per flush, counts summed and lag at its maximum, however many batches went by', () => {
    vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'false');
    const metrics = new RouteMetrics('G', 'T');
    const betweenFlushes = emfLinesOf(() => {
      for (let batch = 0; batch < 250; batch++) {
        metrics.received(20);
        metrics.forwarded(19, batch === 100 ? 9_000 : batch);
        metrics.forwardFailed(1);
      }
      metrics.ackFailed(0);
    });
    expect(betweenFlushes).toEqual([]);
    const lines = emfLinesOf(() => {
      metrics.flush();
      metrics.flush();
    });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ Received: 5_000, Forwarded: 4_750, ForwardFailed: 250, ForwardLag: 9_000 });
    expect(lines[0]).not.toHaveProperty('AckFailed');
    const units = Object.fromEntries(lines[0]!._aws.CloudWatchMetrics[0]!.Metrics.map((m) => [m.Name, m.Unit]));
    expect(units).toMatchObject({ Received: 'Count', ForwardLag: 'Milliseconds' });
    expect(metrics.stats).toMatchObject({ forwarded: 4_750, forwardFailed: 250, lagMs: 249 });
  });

  it('starts again from zero after a flush', () => {
    vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'false');
    const metrics = new RouteMetrics('G', 'T');
    const lines = emfLinesOf(() => {
      metrics.forwarded(3, 40);
      metrics.flush();
      metrics.forwarded(2, 10);
      metrics.flush();
    });
    expect(lines.map((l) => [l.Forwarded, l.ForwardLag])).toEqual([
      [3, 40],
      [2, 10],
    ]);
  });
});
