/** Code-point order, the same on every machine (localeCompare is not) and as Go compares strings. */
export function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
