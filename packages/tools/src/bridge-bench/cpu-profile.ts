import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';

/**
 * A V8 CPU profile of part of this process's run (`node --cpu-prof` covers all of it: start-up,
 * the broker's preload and the bare drains too). The file opens in Chrome DevTools or speedscope.
 */
export async function profiled<T>(file: string | undefined, run: () => Promise<T>): Promise<T> {
  if (file === undefined) return run();
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 500 });
  await session.post('Profiler.start');
  try {
    return await run();
  } finally {
    const { profile } = await session.post('Profiler.stop');
    await writeFile(file, JSON.stringify(profile));
    session.disconnect();
  }
}
