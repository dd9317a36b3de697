/**
 * Istio YAML writes durations the Go way (`30ms`, `3m`, `1h30m`): istiod decodes with
 * golang/protobuf's jsonpb, which uses time.ParseDuration. Strict proto3 JSON (protobuf-es)
 * takes only seconds (`0.030s`), so Duration fields are rewritten before decoding.
 */
import type { DescMessage } from '@bufbuild/protobuf';

const UNIT_NANOS: Readonly<Record<string, bigint>> = {
  ns: 1n,
  us: 1_000n,
  'µs': 1_000n, // U+00B5 micro sign
  'μs': 1_000n, // U+03BC Greek mu
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
};
const TERM = /(\d*)(?:\.(\d*))?(ns|us|µs|μs|ms|s|m|h)/y;
const MAX_NANOS = 2n ** 63n - 1n;

/** time.ParseDuration as nanoseconds, or undefined when `s` is not a Go duration. */
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

/** Nanoseconds in proto3 JSON form: `180s`, `0.030s`, `-1.500s`. */
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

const DURATION = 'google.protobuf.Duration';
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A copy of `json` with every Go-style string in a Duration field rewritten; other values as they were. */
export function normalizeDurations(desc: DescMessage, json: unknown): unknown {
  if (!isRecord(json)) return json;
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(json)) {
    const f = desc.fields.find((x) => x.jsonName === name || x.name === name);
    out[name] = f ? normalizeField(f, value) : value;
  }
  return out;
}

function normalizeField(f: DescMessage['fields'][number], value: unknown): unknown {
  const one = (m: DescMessage, v: unknown): unknown => {
    if (m.typeName === DURATION) {
      if (typeof v !== 'string') return v;
      const nanos = parseGoDuration(v);
      return nanos === undefined ? v : protoDurationJson(nanos);
    }
    return m.typeName.startsWith('google.protobuf.') ? v : normalizeDurations(m, v);
  };
  if (f.fieldKind === 'message') return one(f.message, value);
  if (f.fieldKind === 'list' && f.listKind === 'message' && Array.isArray(value)) return value.map((v) => one(f.message, v));
  if (f.fieldKind === 'map' && f.mapKind === 'message' && isRecord(value)) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, one(f.message, v)]));
  }
  return value;
}
