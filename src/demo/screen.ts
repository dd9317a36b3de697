/** What the demo prints each second: a redrawn table on a terminal, one plain line otherwise. */
import type { ControlPlaneState } from './events.js';
import type { Second } from './traffic.js';

const BAR = 30;

/** Versions seen so far stay on screen (at 0) so a shift to one version is visible. */
export function rowsOf(s: Second, seen: Set<string>): [string, number][] {
  for (const k of s.counts.keys()) seen.add(k);
  return [...seen].sort().map((k) => [k, s.counts.get(k) ?? 0]);
}

/** `t=3s reviews v1=41 reviews v3=9 errors=0` */
export function plainLine(elapsedS: number, s: Second, seen: Set<string>): string {
  const rows = rowsOf(s, seen).map(([k, n]) => `${k}=${n}`);
  return `t=${elapsedS}s ${rows.join(' ')} errors=${s.errors}${s.lastError !== undefined ? ` (${s.lastError})` : ''}`;
}

/** The screen: header lines, then one bar per version with its share of the second's answers. */
export function table(header: readonly string[], s: Second, seen: Set<string>, cp: ControlPlaneState = {}): string {
  const rows = rowsOf(s, seen);
  const total = rows.reduce((a, [, n]) => a + n, 0);
  const width = Math.max(10, ...rows.map(([k]) => k.length));
  const lines = [...header, '', `answers in the last second (${total} ok, ${s.errors} failed):`, ''];
  for (const [k, n] of rows) {
    const share = total === 0 ? 0 : n / total;
    const bar = '█'.repeat(Math.round(share * BAR)).padEnd(BAR, '·');
    lines.push(`  ${k.padEnd(width)}  ${bar}  ${String(n).padStart(4)}  ${(share * 100).toFixed(0).padStart(3)}%`);
  }
  if (s.lastError !== undefined) lines.push('', `  last error: ${s.lastError}`);
  if (cp.lastChange !== undefined) lines.push('', `meshpilot: last change ${cp.lastChange}`);
  if (cp.problem !== undefined) lines.push('', `meshpilot: ${cp.problem}`);
  lines.push('', 'Ctrl-C stops the demo.');
  // Home, clear the screen below, then the lines.
  return `\x1b[H\x1b[J${lines.join('\n')}\n`;
}
