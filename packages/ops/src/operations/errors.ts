/** Base of every error the operations tools raise on purpose: the CLI maps them to exit code 2. */
export class OperationsError extends Error {
  override readonly name: string = 'OperationsError';
}

/** The command line did not say enough to know which tables or queues to touch. */
export class TargetResolutionError extends OperationsError {
  override readonly name = 'TargetResolutionError';
}

/** A command-line value that cannot be understood (a duration, a rate, a format). */
export class UsageError extends OperationsError {
  override readonly name = 'UsageError';
}

/** `ops trace` found nothing about what it was asked: no log line, dedup record, letter or ledger entry. */
export class NothingToTraceError extends OperationsError {
  override readonly name = 'NothingToTraceError';
}

export function messageOf(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}
