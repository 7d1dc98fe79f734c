/**
 * The bridge's CloudWatch embedded-metric-format lines and its INFO (or DEBUG) log lines, which
 * Powertools writes to stdout (awslogs ships them in production). The benchmark keeps both on, so
 * building them counts, but its stdout is its own figures: those lines are dropped there instead
 * of printed. Warnings and errors still print.
 */
export function discardTelemetryLines(): void {
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: unknown, ...rest: unknown[]) => {
    if (typeof chunk === 'string' && DROPPED_PREFIXES.some((prefix) => chunk.startsWith(prefix))) {
      const done = rest.find((r) => typeof r === 'function') as (() => void) | undefined;
      done?.();
      return true;
    }
    return (write as (...args: unknown[]) => boolean)(chunk, ...rest);
  }) as typeof process.stdout.write;
}

const DROPPED_PREFIXES = ['{"_aws":', '{"level":"INFO"', '{"level":"DEBUG"'];
