/** Small statistics and counting helpers shared by the benches. */

export interface Stats {
  readonly n: number;
  readonly min: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

function pct(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i] ?? NaN;
}

export const round = (x: number): number => Math.round(x * 10) / 10;

/** Nearest-rank percentiles (rounded to 0.1). */
export function stats(xs: readonly number[]): Stats {
  const s = [...xs].sort((a, b) => a - b);
  return { n: s.length, min: round(s[0] ?? NaN), p50: round(pct(s, 50)), p99: round(pct(s, 99)), max: round(s[s.length - 1] ?? NaN) };
}

/** Adds every count of `b` into `a` (returns `a`). */
export function addCounts(a: Record<string, number>, b: Readonly<Record<string, number>>): Record<string, number> {
  for (const [k, v] of Object.entries(b)) a[k] = (a[k] ?? 0) + v;
  return a;
}

/** b − a per key, without the zeros. */
export function diffCounts(b: Readonly<Record<string, number>>, a: Readonly<Record<string, number>>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const d = (b[k] ?? 0) - (a[k] ?? 0);
    if (d !== 0) out[k] = round(d);
  }
  return out;
}

export const fmtCounts = (c: Readonly<Record<string, number>>): string =>
  Object.keys(c).length === 0
    ? 'none'
    : Object.entries(c)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ');
