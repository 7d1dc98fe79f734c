import { describe, expect, it } from 'vitest';
import { InstallProgress } from '../../../src/emulator/python-environment.ts';

/** pip's lines for a lock of `n` packages, one every `gapMs` of the fake clock. */
function feed(progress: InstallProgress, clock: { t: number }, n: number, gapMs: number) {
  for (let i = 0; i < n; i++) {
    clock.t += gapMs;
    progress.onPipLine(`Collecting pkg${i}==1.0 (from -r requirements.txt (line ${i + 1}))`);
    progress.onPipLine(`Downloading pkg${i}-1.0-py3-none-any.whl (11 kB)`);
  }
  clock.t += gapMs;
  progress.onPipLine(`Installing collected packages: ${Array.from({ length: n }, (_, i) => `pkg${i}`).join(', ')}`);
  progress.onPipLine('Successfully installed …');
}

describe('InstallProgress: the first run’s install, in packages, a line at most every few seconds', () => {
  it('a long install says how many of the lock’s packages pip has fetched, then that it installs them', () => {
    // Prepare
    const clock = { t: 0 };
    const lines: string[] = [];
    const progress = new InstallProgress(
      62,
      (l) => lines.push(l),
      () => clock.t,
      5_000,
    );

    // Act: a package every 2 s
    feed(progress, clock, 62, 2_000);

    // Assess: every third package (6 s apart), each line in one unit
    expect(lines[0]).toBe('emulator: 3 of 62 packages fetched…');
    expect(lines.at(-1)).toBe('emulator: 62 of 62 packages fetched; installing them…');
    expect(lines).toHaveLength(21);
    for (const line of lines) expect(line).toMatch(/^emulator: \d+ of 62 packages fetched(…|; installing them…)$/);
  });

  it('a short install prints nothing more than its first line', () => {
    const clock = { t: 0 };
    const lines: string[] = [];
    feed(
      new InstallProgress(
        1,
        (l) => lines.push(l),
        () => clock.t,
        5_000,
      ),
      clock,
      1,
      100,
    );
    expect(lines).toEqual([]);
  });
});
