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

/** RFC 4180 CSV: quoted where needed, CRLF-free so it pastes into any sheet. */
export function renderCsv<Row>(columns: readonly Column<Row>[], rows: readonly Row[]): string {
  const field = (cell: Cell) => {
    const v = text(cell);
    return /[",\n\r]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v;
  };
  return [columns.map((c) => field(c.header)).join(','), ...rows.map((row) => columns.map((c) => field(c.value(row))).join(','))].join('\n');
}
