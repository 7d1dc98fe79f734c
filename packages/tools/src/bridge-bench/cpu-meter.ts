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

/**
 * The broker's CPU by thread, `<JVM> <thread>` (the JVM by its main class: NamesrvStartup,
 * BrokerStartup, ProxyStartup; numbered threads of one pool together), in µs since the JVMs
 * started. Two readings show where a stretch of time went, e.g. the broker's idle burn.
 */
export function brokerThreadMicros(): Map<string, number> {
  const threads = new Map<string, number>();
  for (const pid of childJvms()) {
    const jvm = /(\w+Startup)/.exec(readOrEmpty(`/proc/${pid}/cmdline`))?.[1] ?? `java ${pid}`;
    let tasks: string[];
    try {
      tasks = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue;
    }
    for (const tid of tasks) {
      const stat = parseStat(readOrEmpty(`/proc/${pid}/task/${tid}/stat`));
      if (stat === undefined) continue;
      const key = `${jvm} ${stat.name.replace(/[#-]?\d+$/, '')}`;
      threads.set(key, (threads.get(key) ?? 0) + stat.ticks * MICROS_PER_TICK);
    }
  }
  return threads;
}

function childJvmTicks(): number {
  let ticks = 0;
  for (const pid of childJvms()) ticks += parseStat(readOrEmpty(`/proc/${pid}/stat`))?.ticks ?? 0;
  return ticks;
}

/** The pids of the JVMs this process started. */
function childJvms(): string[] {
  // Inside `unshare --pid` /proc is still the host's: its pids, and this process's own, are the host's.
  const self = Number(readlinkSync('/proc/self'));
  return readdirSync('/proc').filter((entry) => {
    if (!/^\d+$/.test(entry)) return false;
    const stat = parseStat(readOrEmpty(`/proc/${entry}/stat`));
    return stat?.name === 'java' && stat.ppid === self;
  });
}

/** `pid (comm) state ppid …`: comm may hold spaces, so the fields split after its closing parenthesis. */
function parseStat(stat: string): { name: string; ppid: number; ticks: number } | undefined {
  if (stat === '') return undefined;
  const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { name, ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) };
}

function readOrEmpty(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return ''; // the process or thread ended while the table was read
  }
}
