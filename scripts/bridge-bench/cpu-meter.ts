import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/**
 * CPU time spent by this process, less threads that stand in for something remote (the SQS
 * stand-in's worker), and by the JVMs it started (the local broker), read from Linux's /proc.
 * Taken before and after a drain, it splits what a message costs between the consumer (the bridge
 * or the bare consumer) and the broker, which on one machine share the same cores.
 */
export interface CpuReading {
  readonly consumerMicros: number;
  readonly brokerMicros: number;
}

/** `utime` and `stime` in /proc/<pid>/stat count clock ticks of 10 ms (USER_HZ is 100 on Linux). */
const MICROS_PER_TICK = 10_000;

export class CpuMeter {
  /** @param excludedMicros CPU of threads of this process that are not the consumer. */
  constructor(private readonly excludedMicros: () => Promise<number>) {}

  async read(): Promise<CpuReading> {
    const own = process.cpuUsage();
    const excluded = await this.excludedMicros();
    return { consumerMicros: own.user + own.system - excluded, brokerMicros: childJvmTicks() * MICROS_PER_TICK };
  }
}

export function cpuBetween(before: CpuReading, after: CpuReading): CpuReading {
  return {
    consumerMicros: after.consumerMicros - before.consumerMicros,
    brokerMicros: after.brokerMicros - before.brokerMicros,
  };
}

function childJvmTicks(): number {
  // Inside `unshare --pid` /proc is still the host's: its pids, and this process's own, are the host's.
  const self = Number(readlinkSync('/proc/self'));
  let ticks = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // the process ended while the table was read
    }
    // `pid (comm) state ppid …`: comm may hold spaces, so split after its closing parenthesis.
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (name !== 'java' || Number(fields[1]) !== self) continue;
    ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks;
}
