import { describe, expect, it } from 'vitest';
import { durationMs } from '../../../src/command/ops.ts';
import { ProgressBar, renderCsv } from '../../../src/operations/index.ts';

describe('operations output', () => {
  it('draws progress only on a terminal, and not with --quiet', () => {
    // Prepare
    const writes = { tty: '', pipe: '', quiet: '' };
    const bars = {
      tty: new ProgressBar({ isTTY: true, write: (s: string) => (writes.tty += s) }, { minIntervalMs: 0 }),
      pipe: new ProgressBar({ isTTY: false, write: (s: string) => (writes.pipe += s) }),
      quiet: new ProgressBar({ isTTY: true, write: (s: string) => (writes.quiet += s) }, { quiet: true }),
    };
    // Act
    for (const bar of Object.values(bars)) {
      bar.update({ table: 't', scanned: 5, estimatedTotal: 10 });
      bar.done({ table: 't', scanned: 12, estimatedTotal: 10 });
    }
    // Assess
    expect(writes.tty).toContain('scanning t [###############...............] 5/~10');
    expect(writes.tty).toContain(`scanning t [${'#'.repeat(30)}] 12/~10\n`); // the estimate lags: never past full
    expect(writes.pipe).toBe('');
    expect(writes.quiet).toBe('');
  });

  it('quotes CSV fields that hold commas, quotes or line breaks', () => {
    const csv = renderCsv([{ header: 'a', value: (r: string) => r }], ['plain', 'x,y', 'say "hi"', 'two\nlines']);
    expect(csv).toBe('a\nplain\n"x,y"\n"say ""hi"""\n"two\nlines"');
  });

  it('reads ages for --older-than / --newer-than and rejects anything else', () => {
    expect(durationMs('45s', 'older-than')).toBe(45_000);
    expect(durationMs('2d', 'older-than')).toBe(172_800_000);
    expect(() => durationMs('2 weeks', 'older-than')).toThrow(/wants an age like/);
  });
});
