import { type ParseArgsConfig, parseArgs } from 'node:util';

/**
 * A command line that cannot be understood. The message says which word and, where one is near,
 * what was meant; the commands print it with a pointer to `--help` and exit 2, not the whole help
 * (a page of options hides the one line that matters).
 */
export class CommandLineError extends Error {
  override readonly name = 'CommandLineError';
}

/**
 * `node:util`'s `parseArgs` (strict), its errors told as a person's mistake: an unknown option gets
 * the nearest known one (`--groups` → `--group`), a missing value names its option. `parseArgs`
 * itself is kept: it is the standard parser, and only its messages are written for programs.
 */
export function parseCommandLine<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs<T>({ strict: true, ...config });
  } catch (error) {
    throw commandLineErrorOf(error, Object.keys(config.options ?? {}));
  }
}

function commandLineErrorOf(error: unknown, options: readonly string[]): unknown {
  const { code, message } = error as { code?: string; message?: string };
  if (typeof message !== 'string') return error;
  const quoted = [...message.matchAll(/'([^']*)'/g)].map((m) => m[1]!);
  // `'-h, --help'`, `'--events <value>'`: the long name is what a person typed.
  const option = (quoted[0] ?? '').split(', ').pop()!.split(' ')[0]!;
  switch (code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION': {
      const near = nearest(option.replace(/^-+/, ''), options);
      return new CommandLineError(`unknown option ${option}${near ? `; did you mean --${near}?` : ''}`);
    }
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE':
      if (message.includes('does not take an argument')) return new CommandLineError(`${option} takes no value`);
      if (message.includes('is ambiguous'))
        return new CommandLineError(`${option} needs a value (a value starting with "-" is written ${option}=<value>)`);
      return new CommandLineError(`${option} needs a value`);
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      return new CommandLineError(`unexpected argument "${quoted[0] ?? ''}"`);
    default:
      return error;
  }
}

/**
 * The candidate a mistyped word most likely meant: the closest by edit distance, within a third of
 * its length (at least 1, so `--groups` finds `--group`), or the only one it begins.
 */
export function nearest(word: string, candidates: readonly string[]): string | undefined {
  let best: { candidate: string; distance: number } | undefined;
  for (const candidate of candidates) {
    const distance = editDistance(word, candidate);
    if (!best || distance < best.distance) best = { candidate, distance };
  }
  if (best && best.distance <= Math.max(1, Math.floor(word.length / 3))) return best.candidate;
  const begun = word.length >= 3 ? candidates.filter((c) => c.startsWith(word)) : [];
  return begun.length === 1 ? begun[0] : undefined;
}

/**
 * Levenshtein distance: insertions, deletions and substitutions, one each. Ten lines for the few
 * dozen option names of a command; a package for it would be one more dependency of the `ops` bin.
 */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++)
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = current;
  }
  return previous[b.length]!;
}
