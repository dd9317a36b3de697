/** Go literal syntax used by templates: numbers (ParseInt/ParseFloat base 0) and quoted strings. */

const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;

/** strconv.ParseInt(text, 0, 64): prefixes 0x/0o/0b, a leading 0 for octal, '_' separators. */
export function parseGoInt(text: string): bigint | null {
  let s = text;
  let neg = false;
  if (s.startsWith('+') || s.startsWith('-')) {
    neg = s.startsWith('-');
    s = s.slice(1);
  }
  let base = 10;
  let digits = s;
  const lower = s.toLowerCase();
  if (lower.startsWith('0x')) {
    base = 16;
    digits = s.slice(2);
  } else if (lower.startsWith('0o')) {
    base = 8;
    digits = s.slice(2);
  } else if (lower.startsWith('0b')) {
    base = 2;
    digits = s.slice(2);
  } else if (s.length > 1 && s.startsWith('0')) {
    base = 8;
    digits = s.slice(1);
  }
  const underscoresOk = base !== 10 || !s.includes('_') || /^[0-9]+(_[0-9]+)*$/.test(s);
  if (!underscoresOk || digits.startsWith('__') || digits.endsWith('_') || digits.includes('__')) return null;
  digits = digits.replace(/_/g, '');
  const valid = { 2: /^[01]+$/, 8: /^[0-7]+$/, 10: /^[0-9]+$/, 16: /^[0-9a-fA-F]+$/ }[base];
  if (digits === '' || valid === undefined || !valid.test(digits)) return null;
  const prefix = { 2: '0b', 8: '0o', 10: '', 16: '0x' }[base] ?? '';
  let v = BigInt(prefix + digits);
  if (neg) v = -v;
  if (v < INT64_MIN || v > INT64_MAX) return null;
  return v;
}

/** strconv.ParseFloat(text, 64): decimal forms and hex floats (0x1.8p3). */
export function parseGoFloat(text: string): number | null {
  const s = text.replace(/_/g, '');
  const hex = /^([+-]?)0[xX]([0-9a-fA-F]*)(?:\.([0-9a-fA-F]*))?[pP]([+-]?\d+)$/.exec(s);
  if (hex !== null) {
    const [, sign = '', int = '', frac = '', exp = '0'] = hex;
    if (int === '' && frac === '') return null;
    const mant = parseInt(int + frac || '0', 16);
    const v = mant * 2 ** (Number(exp) - 4 * frac.length);
    return sign === '-' ? -v : v;
  }
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(s)) return null;
  const v = Number(s);
  return Number.isNaN(v) ? null : v;
}

export interface ParsedNumber {
  int: bigint | null;
  float: number | null;
  isChar: boolean;
}

/** Go's parse.newNumber: a constant may be an int and a float at once; returns an error text on failure. */
export function parseGoNumber(text: string, isChar: boolean): ParsedNumber | string {
  if (isChar) {
    const s = unquoteGo(text);
    const cp = s === null ? undefined : s.codePointAt(0);
    if (s === null || cp === undefined || [...s].length !== 1) return `malformed character constant: ${text}`;
    return { int: BigInt(cp), float: cp, isChar: true };
  }
  if (text.endsWith('i')) return `illegal number syntax: "${text}"`;
  const i = parseGoInt(text);
  if (i !== null) return { int: i, float: Number(i), isChar: false };
  const f = parseGoFloat(text);
  if (f !== null) {
    if (!/[.eEpP]/.test(text)) return `integer overflow: "${text}"`;
    const asInt = Number.isInteger(f) && Math.abs(f) < 2 ** 63 ? BigInt(f) : null;
    return { int: asInt, float: f, isChar: false };
  }
  return `illegal number syntax: "${text}"`;
}

/** strconv.Unquote for "...", `...` and '...'; null when malformed. */
export function unquoteGo(q: string): string | null {
  if (q.length < 2) return null;
  const quote = q[0];
  if (quote !== q[q.length - 1]) return null;
  const body = q.slice(1, -1);
  if (quote === '`') return body.includes('`') ? null : body.replace(/\r/g, '');
  if (quote !== '"' && quote !== "'") return null;
  let out = '';
  for (let i = 0; i < body.length; i++) {
    const c = body[i] ?? '';
    if (c === '\n') return null;
    if (c === quote) return null;
    if (c !== '\\') {
      out += c;
      continue;
    }
    const e = body[++i];
    const simple: Record<string, string> = { a: '\x07', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v', '\\': '\\' };
    if (e === undefined) return null;
    const mapped = simple[e];
    if (mapped !== undefined) {
      out += mapped;
      continue;
    }
    if (e === quote) {
      out += e;
      continue;
    }
    const hexLen = e === 'x' ? 2 : e === 'u' ? 4 : e === 'U' ? 8 : 0;
    if (hexLen > 0) {
      const hex = body.slice(i + 1, i + 1 + hexLen);
      if (!/^[0-9a-fA-F]+$/.test(hex) || hex.length !== hexLen) return null;
      const cp = parseInt(hex, 16);
      if (cp > 0x10ffff) return null;
      out += String.fromCodePoint(cp);
      i += hexLen;
      continue;
    }
    if (e >= '0' && e <= '7') {
      const oct = body.slice(i, i + 3);
      if (!/^[0-7]{3}$/.test(oct)) return null;
      const v = parseInt(oct, 8);
      if (v > 255) return null;
      out += String.fromCharCode(v);
      i += 2;
      continue;
    }
    return null;
  }
  return out;
}
