/** Columns padded to their widest cell: numbers right-aligned, the columns named in `leftAligned` left-aligned. */
export function textTable(
  header: readonly string[],
  rows: readonly (readonly string[])[],
  options: { leftAligned?: readonly number[] } = {},
): string[] {
  const left = new Set(options.leftAligned ?? [0]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (left.has(i) ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)];
}

/** How often each key occurs, most frequent first (first seen first among equals). */
export function tally(keys: readonly string[]): Array<[string, number]> {
  const counts = new Map<string, number>();
  for (const k of keys) counts.set(k, (counts.get(k) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1]);
}

/** A line cut to `width` characters, ending in `…` when cut. */
export function fitted(line: string, width: number): string {
  return line.length <= width ? line : `${line.slice(0, width - 1)}…`;
}

/** A 32-hex msgId as `0A1B…0001`: enough to tell a scenario's copies apart in a narrow column. */
export function shortMsgId(msgId: string | undefined): string {
  if (!msgId) return '-';
  return msgId.length > 12 ? `${msgId.slice(0, 4)}…${msgId.slice(-4)}` : msgId;
}

/**
 * A line broken at spaces into lines of at most `width` characters; each continuation is indented
 * `indent` (default: the line's own indent plus four). A word longer than a line is left whole.
 */
export function wrapped(line: string, width: number, indent?: number): string[] {
  if (line.length <= width) return [line];
  const own = line.length - line.trimStart().length;
  const lead = ' '.repeat(indent ?? own + 4);
  const out: string[] = [];
  let current = line.slice(0, own);
  let empty = true;
  for (const word of line.trimStart().split(' ')) {
    if (!empty && current.length + 1 + word.length > width) {
      out.push(current);
      current = lead + word;
    } else current = empty ? current + word : `${current} ${word}`;
    empty = false;
  }
  out.push(current);
  return out;
}
