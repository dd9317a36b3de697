/**
 * Durations, the one home of their text forms:
 *
 * - Go's `time.ParseDuration` grammar (optional sign, decimal numbers with units ns, us/µs/μs,
 *   ms, s, m, h, combined as `1h30m`): {@link parseGoDuration}, and {@link parseDurationMs} for
 *   flags and environment variables (which also take a bare number as milliseconds);
 * - Go's `time.Duration.String()`: {@link formatGoDuration} / {@link formatGoDurationMs};
 * - protobuf JSON's `google.protobuf.Duration` (`1.500s`: seconds only), a different format:
 *   {@link protoDurationJson}.
 */
import { MeshError } from './errors.js';

const UNIT_NANOS: Readonly<Record<string, bigint>> = {
  ns: 1n,
  us: 1_000n,
  µs: 1_000n, // U+00B5 micro sign
  μs: 1_000n, // U+03BC Greek mu
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
};
const TERM = /(\d*)(?:\.(\d*))?(ns|us|µs|μs|ms|s|m|h)/y;
const MAX_NANOS = 2n ** 63n - 1n;
const NANOS_PER_MS = 1_000_000n;

/** Go's time.ParseDuration, in nanoseconds; undefined when `s` is not a Go duration (or overflows int64). */
export function parseGoDuration(s: string): bigint | undefined {
  let i = 0;
  let sign = 1n;
  if (s[0] === '-' || s[0] === '+') {
    sign = s[0] === '-' ? -1n : 1n;
    i = 1;
  }
  if (s.slice(i) === '0') return 0n;
  if (i >= s.length) return undefined;
  let total = 0n;
  while (i < s.length) {
    TERM.lastIndex = i;
    const m = TERM.exec(s);
    if (!m || m.index !== i) return undefined;
    const [, whole = '', frac = '', unit = ''] = m;
    if (whole === '' && frac === '') return undefined;
    const scale = UNIT_NANOS[unit] ?? 0n;
    total += BigInt(whole || '0') * scale;
    if (frac !== '') total += (BigInt(frac) * scale) / 10n ** BigInt(frac.length);
    if (total > MAX_NANOS) return undefined;
    i = TERM.lastIndex;
  }
  return sign * total;
}

/** Nanoseconds as milliseconds (fractions of a millisecond kept). */
const nanosToMs = (nanos: bigint): number => Number(nanos / NANOS_PER_MS) + Number(nanos % NANOS_PER_MS) / 1e6;

/**
 * A non-negative duration flag or environment variable, in milliseconds: a Go duration (`100ms`,
 * `10s`, `1m30s`, `1.5h`), or a bare number of milliseconds (`250`). Surrounding blanks are
 * ignored. Throws INVALID_ARGUMENT naming `what` otherwise.
 */
export function parseDurationMs(text: string, what: string): number {
  const t = text.trim();
  if (/^\d+(?:\.\d+)?$/.test(t)) return Number(t);
  const nanos = parseGoDuration(t);
  if (nanos === undefined) throw new MeshError('INVALID_ARGUMENT', `${what}: "${text}" is not a duration (e.g. 100ms, 10s, 30m)`);
  if (nanos < 0n) throw new MeshError('INVALID_ARGUMENT', `${what}: "${text}" is not a duration: it must not be negative`);
  return nanosToMs(nanos);
}

/**
 * A non-negative Go duration in milliseconds, or undefined when `text` is not one; no bare
 * numbers (as istioctl's duration flags take them).
 */
export function parseGoDurationMs(text: string): number | undefined {
  const nanos = parseGoDuration(text);
  return nanos === undefined || nanos < 0n ? undefined : nanosToMs(nanos);
}

/** Go's time.Duration.String(): `0s`, `1.5µs`, `500ms`, `1.5s`, `1m30s`, `24h0m0s`. */
export function formatGoDuration(nanos: bigint): string {
  if (nanos === 0n) return '0s';
  const sign = nanos < 0n ? '-' : '';
  const u = nanos < 0n ? -nanos : nanos;
  const frac = (value: bigint, digits: number): string => {
    const s = value.toString().padStart(digits, '0').replace(/0+$/, '');
    return s === '' ? '' : `.${s}`;
  };
  if (u < 1_000_000_000n) {
    if (u < 1000n) return `${sign}${u}ns`;
    if (u < 1_000_000n) return `${sign}${u / 1000n}${frac(u % 1000n, 3)}µs`;
    return `${sign}${u / 1_000_000n}${frac(u % 1_000_000n, 6)}ms`;
  }
  const secs = u / 1_000_000_000n;
  const s = `${secs % 60n}${frac(u % 1_000_000_000n, 9)}s`;
  if (secs < 60n) return `${sign}${s}`;
  const mins = secs / 60n;
  if (mins < 60n) return `${sign}${mins}m${s}`;
  return `${sign}${mins / 60n}h${mins % 60n}m${s}`;
}

/** Milliseconds (rounded to the nanosecond) as Go prints a duration: `500ms`, `1.5s`, `5m0s`. */
export function formatGoDurationMs(ms: number): string {
  return formatGoDuration(msToNanos(ms));
}

/** Milliseconds as whole nanoseconds. */
export function msToNanos(ms: number): bigint {
  const whole = Math.trunc(ms);
  return BigInt(whole) * NANOS_PER_MS + BigInt(Math.round((ms - whole) * 1e6));
}

/**
 * Nanoseconds in protobuf JSON's `google.protobuf.Duration` form (seconds with 0, 3, 6 or 9
 * fraction digits): `180s`, `0.030s`, `-1.500s`. Not Go's syntax: `1m` is `60s` here.
 */
export function protoDurationJson(nanos: bigint): string {
  const neg = nanos < 0n;
  const abs = neg ? -nanos : nanos;
  const secs = abs / 1_000_000_000n;
  const frac = abs % 1_000_000_000n;
  let fracText = '';
  if (frac !== 0n) {
    const digits = frac.toString().padStart(9, '0');
    fracText = `.${digits.endsWith('000000') ? digits.slice(0, 3) : digits.endsWith('000') ? digits.slice(0, 6) : digits}`;
  }
  return `${neg ? '-' : ''}${secs}${fracText}s`;
}
