/**
 * The bridge's CloudWatch embedded-metric-format lines, which Powertools Metrics writes to stdout
 * (awslogs ships them in production). The benchmark keeps metrics on, so their cost counts, but
 * its stdout is its own figures: the metric lines are dropped there instead of printed.
 */
export function discardMetricLines(): void {
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: unknown, ...rest: unknown[]) => {
    if (typeof chunk === 'string' && chunk.startsWith('{"_aws":')) {
      const done = rest.find((r) => typeof r === 'function') as (() => void) | undefined;
      done?.();
      return true;
    }
    return (write as (...args: unknown[]) => boolean)(chunk, ...rest);
  }) as typeof process.stdout.write;
}
