/**
 * How the operations commands print: an aligned table for people, JSON or CSV for
 * machines. Every command builds rows once and hands them here, so the three formats
 * never disagree about what was found.
 */
export const OutputFormat = { TABLE: 'table', JSON: 'json', CSV: 'csv' } as const;
export type OutputFormat = (typeof OutputFormat)[keyof typeof OutputFormat];

export type Cell = string | number | boolean | null | undefined;

export interface Column<Row> {
  readonly header: string;
  readonly value: (row: Row) => Cell;
  /** Numbers read better right-aligned. */
  readonly align?: 'left' | 'right';
}

function text(cell: Cell): string {
  if (cell === null || cell === undefined) return '';
  return String(cell);
}

/** A plain-text table; values with line breaks are flattened so one row stays one line. */
export function renderTable<Row>(columns: readonly Column<Row>[], rows: readonly Row[]): string {
  const cells = rows.map((row) => columns.map((c) => text(c.value(row)).replace(/\s*\n\s*/g, ' ')));
  const widths = columns.map((c, i) => Math.max(c.header.length, ...cells.map((r) => r[i]!.length)));
  const line = (values: readonly string[]) =>
    values
      .map((v, i) => (columns[i]!.align === 'right' ? v.padStart(widths[i]!) : v.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(columns.map((c) => c.header)), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)].join('\n');
}

// OWASP's CSV injection rule: a spreadsheet evaluates a cell that starts with = + - @, a tab or a
// carriage return as a formula; a leading ' makes it text. Numbers are ours and stay numbers (a
// negative difference), so only strings are checked.
const FORMULA_START = /^[=+\-@\t\r]/;

/**
 * RFC 4180 CSV: quoted where needed, CRLF-free so it pastes into any sheet. A `;` is quoted too:
 * sheets set to that separator would otherwise start a new cell, and a formula, inside the value.
 */
export function renderCsv<Row>(columns: readonly Column<Row>[], rows: readonly Row[]): string {
  const field = (cell: Cell) => {
    const formula = typeof cell === 'string' && FORMULA_START.test(cell);
    const v = formula ? `'${cell}` : text(cell);
    return formula || /[",;\n\r]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v;
  };
  return [
    columns.map((c) => field(c.header)).join(','),
    ...rows.map((row) => columns.map((c) => field(c.value(row))).join(',')),
  ].join('\n');
}

/**
 * What ops prints comes partly from senders (reasons, keys, tags, bodies, ledger ids), and a terminal
 * acts on escape sequences in it (clear the screen, rewrite lines, retitle the window, hide a link
 * behind text) while bidi controls reorder what it shows. Every control and format character but
 * the line break is printed as `\u` escapes of its UTF-16 units: inside a JSON string that is the
 * same value, in a table or CSV it is visible text.
 */
export function terminalSafe(output: string): string {
  return output.replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu, (c) =>
    c === '\n'
      ? c
      : Array.from({ length: c.length }, (_, i) => `\\u${c.charCodeAt(i).toString(16).padStart(4, '0')}`).join(''),
  );
}
