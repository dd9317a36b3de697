/**
 * Go's text/tabwriter as istioctl uses it (padchar ' ', flags 0): every tab-terminated cell is
 * padded to its column's widest cell plus `padding`; the last cell of a line is written as is
 * (so an empty last cell leaves the previous column's padding as trailing spaces, like Go).
 * Widths count code points, as Go counts runes.
 */
export function tabwrite(rows: readonly (readonly string[])[], padding: number, minwidth = 0): string {
  const widths: number[] = [];
  for (const row of rows) {
    for (let i = 0; i < row.length - 1; i++) {
      const w = Math.max(minwidth, runeLength(row[i] ?? '') + padding);
      if (w > (widths[i] ?? 0)) widths[i] = w;
    }
  }
  return rows
    .map(
      (row) => row.map((cell, i) => (i < row.length - 1 ? cell + ' '.repeat((widths[i] ?? 0) - runeLength(cell)) : cell)).join('') + '\n',
    )
    .join('');
}

function runeLength(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}
