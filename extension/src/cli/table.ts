/** A plain-text table: columns padded to their widest cell, two spaces apart, no trailing blanks. */
export function formatTable(head: readonly string[], rows: ReadonlyArray<readonly string[]>): string[] {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] ?? '').length)));
  return [head, ...rows].map((row) => row.map((c, i) => (c ?? '').padEnd(widths[i])).join('  ').trimEnd());
}
