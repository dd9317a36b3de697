import { MeshError } from './errors.js';

const DURATION_UNITS_MS = { ns: 1e-6, us: 1e-3, 'µs': 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;

/**
 * istiod's (Go's) duration syntax: `100ms`, `10s`, `1m30s`, `30m0s`, `1.5h`; a bare number is ms.
 */
export function parseDurationMs(text: string, what: string): number {
  const t = text.trim();
  if (/^\d+(?:\.\d+)?$/.test(t)) return Number(t);
  const part = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/y;
  let total = 0;
  let pos = 0;
  while (pos < t.length) {
    part.lastIndex = pos;
    const m = part.exec(t);
    if (!m || t.length === 0) break;
    total += Number(m[1]) * DURATION_UNITS_MS[m[2] as keyof typeof DURATION_UNITS_MS];
    pos = part.lastIndex;
  }
  if (t.length === 0 || pos !== t.length) throw new MeshError('INVALID_ARGUMENT', `${what}: "${text}" is not a duration (e.g. 100ms, 10s, 30m)`);
  return total;
}
