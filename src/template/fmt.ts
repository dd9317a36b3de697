/** The subset of Go's fmt that templates reach: %v printing of JSON-like values, Sprint(ln), Sprintf. */
import { goQuote } from './parse.js';
import { goTypeName, kindOf, sortedKeys, type GoMap, type Int64 } from './values.js';

interface Digits {
  /** Significant decimal digits without leading zeros ("" for zero). */
  d: string;
  /** Decimal point position: value = 0.d × 10^dp. */
  dp: number;
}

function shortestDigits(abs: number): Digits {
  if (abs === 0) return { d: '', dp: 0 };
  const [m = '', e = '0'] = abs.toExponential().split('e');
  return { d: m.replace('.', '').replace(/0+$/, ''), dp: Number(e) + 1 };
}

/** The exact decimal expansion of a finite double (every double is a finite decimal). */
function exactDigits(abs: number): Digits {
  if (abs === 0) return { d: '', dp: 0 };
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, abs);
  const bits = view.getBigUint64(0);
  const biased = Number((bits >> 52n) & 0x7ffn);
  let mant = bits & ((1n << 52n) - 1n);
  let exp = biased - 1075;
  if (biased === 0) exp = -1074;
  else mant |= 1n << 52n;
  let digits: string;
  let dp: number;
  if (exp >= 0) {
    digits = (mant << BigInt(exp)).toString();
    dp = digits.length;
  } else {
    digits = (mant * 5n ** BigInt(-exp)).toString();
    dp = digits.length + exp;
  }
  const lead = digits.length - digits.replace(/^0+/, '').length;
  return { d: digits.slice(lead).replace(/0+$/, ''), dp: dp - lead };
}

/** Rounds exact digits to n significant digits, half to even (Go's decimal rounding). */
function roundDigits(g: Digits, n: number): Digits {
  if (n < 0) return { d: '', dp: 0 };
  if (g.d.length <= n) return g;
  const rest = g.d.slice(n);
  const keep = g.d.slice(0, n);
  const last = keep.length > 0 ? Number(keep[keep.length - 1]) : 0;
  const up = rest[0] !== undefined && (rest[0] > '5' || (rest[0] === '5' && (/[1-9]/.test(rest.slice(1)) || last % 2 === 1)));
  if (!up) {
    const d = keep.replace(/0+$/, '');
    return d === '' ? { d: '', dp: 0 } : { d, dp: g.dp };
  }
  if (keep === '') return { d: '1', dp: g.dp + 1 };
  const inc = (BigInt(keep) + 1n).toString();
  const dp = inc.length > keep.length ? g.dp + 1 : g.dp;
  return { d: inc.replace(/0+$/, ''), dp };
}

function sigDigits(abs: number, sig: number): Digits {
  return roundDigits(exactDigits(abs), sig);
}

function fracDigits(abs: number, frac: number): Digits {
  const g = exactDigits(abs);
  return roundDigits(g, g.dp + frac);
}

function digitAt(g: Digits, i: number): string {
  return i >= 0 && i < g.d.length ? (g.d[i] ?? '0') : '0';
}

function fmtE(g: Digits, prec: number, e: 'e' | 'E'): string {
  let s = g.d === '' ? '0' : digitAt(g, 0);
  if (prec > 0) {
    s += '.';
    for (let i = 1; i <= prec; i++) s += digitAt(g, i);
  }
  const exp = g.d === '' ? 0 : g.dp - 1;
  const ea = Math.abs(exp);
  return `${s}${e}${exp < 0 ? '-' : '+'}${ea < 10 ? '0' : ''}${ea}`;
}

function fmtF(g: Digits, prec: number): string {
  let s = '';
  if (g.dp > 0) {
    for (let i = 0; i < g.dp; i++) s += digitAt(g, i);
  } else {
    s = '0';
  }
  if (prec > 0) {
    s += '.';
    for (let i = 0; i < prec; i++) s += digitAt(g, g.dp + i);
  }
  return s;
}

/** strconv.FormatFloat(v, fmt, prec, 64) for 'e', 'f', 'g' (prec -1: shortest representation). */
export function formatFloat(v: number, fmt: 'e' | 'E' | 'f' | 'g' | 'G', prec: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (!Number.isFinite(v)) return v > 0 ? '+Inf' : '-Inf';
  const neg = v < 0 || Object.is(v, -0);
  const abs = Math.abs(v);
  const shortest = prec < 0;
  let out: string;
  if (fmt === 'e' || fmt === 'E') {
    const g = shortest ? shortestDigits(abs) : sigDigits(abs, prec + 1);
    out = fmtE(g, shortest ? Math.max(g.d.length - 1, 0) : prec, fmt);
  } else if (fmt === 'f') {
    const g = shortest ? shortestDigits(abs) : fracDigits(abs, prec);
    out = fmtF(g, shortest ? Math.max(g.d.length - g.dp, 0) : prec);
  } else {
    let p = prec === 0 ? 1 : prec;
    const g = shortest ? shortestDigits(abs) : sigDigits(abs, p);
    if (shortest) p = g.d.length;
    let eprec = p;
    if (eprec > g.d.length && g.d.length >= g.dp) eprec = g.d.length;
    if (shortest) eprec = 6;
    const exp = g.d === '' ? 0 : g.dp - 1;
    if (exp < -4 || exp >= eprec) {
      if (p > g.d.length) p = g.d.length;
      out = fmtE(g, Math.max(p - 1, 0), fmt === 'G' ? 'E' : 'e');
    } else {
      if (p > g.dp) p = g.d.length;
      out = fmtF(g, Math.max(p - g.dp, 0));
    }
  }
  return neg ? '-' + out : out;
}

/** %v of any engine value, as fmt prints it (depth > 0 inside slices and maps). */
export function printValue(v: unknown, depth = 0): string {
  return formatVerb(v, 'v', NO_FLAGS, depth);
}

interface Flags {
  plus: boolean;
  minus: boolean;
  sharp: boolean;
  space: boolean;
  zero: boolean;
  width: number | null;
  prec: number | null;
}

const NO_FLAGS: Flags = { plus: false, minus: false, sharp: false, space: false, zero: false, width: null, prec: null };

function badVerb(verb: string, v: unknown): string {
  if (v === undefined || v === null) return `%!${verb}(<nil>)`;
  return `%!${verb}(${goTypeName(v)}=${printValue(v)})`;
}

function pad(s: string, f: Flags, zeroOk = true): string {
  if (f.width === null) return s;
  const n = [...s].length;
  if (n >= f.width) return s;
  const fill = f.width - n;
  if (f.minus) return s + ' '.repeat(fill);
  if (f.zero && zeroOk) {
    const sign = /^[+\- ]/.test(s) ? (s[0] ?? '') : '';
    return sign + '0'.repeat(fill) + s.slice(sign.length);
  }
  return ' '.repeat(fill) + s;
}

function formatInt(v: bigint, verb: string, f: Flags, original: unknown = v): string {
  const neg = v < 0n;
  const abs = neg ? -v : v;
  let s: string;
  switch (verb) {
    case 'd':
    case 'v':
      s = abs.toString(10);
      break;
    case 'x':
      s = abs.toString(16);
      if (f.sharp) s = '0x' + s;
      break;
    case 'X':
      s = abs.toString(16).toUpperCase();
      if (f.sharp) s = '0X' + s;
      break;
    case 'o':
      s = abs.toString(8);
      if (f.sharp) s = '0' + s;
      break;
    case 'O':
      s = '0o' + abs.toString(8);
      break;
    case 'b':
      s = abs.toString(2);
      break;
    case 'c':
      return pad(String.fromCodePoint(validRune(v)), f, false);
    case 'q':
      return pad(goQuoteRune(validRune(v)), f, false);
    case 'U':
      s = 'U+' + abs.toString(16).toUpperCase().padStart(4, '0');
      break;
    default:
      return badVerb(verb, original);
  }
  if (f.prec !== null) s = s.padStart(f.prec, '0');
  const sign = neg ? '-' : f.plus ? '+' : f.space ? ' ' : '';
  return pad(sign + s, f, f.prec === null);
}

/** Go formats an invalid rune (negative, surrogate, beyond U+10FFFF) as U+FFFD. */
function validRune(v: bigint): number {
  const n = Number(v);
  return n < 0 || n > 0x10ffff || (n >= 0xd800 && n <= 0xdfff) ? 0xfffd : n;
}

function goQuoteRune(cp: number): string {
  const ch = String.fromCodePoint(cp);
  if (ch === "'") return "'\\''";
  if (ch === '"') return `'"'`;
  return `'${goQuote(ch).slice(1, -1)}'`;
}

/** strconv.FormatFloat(v, 'x', -1, 64): shortest hex mantissa, binary exponent of at least two digits. */
function hexFloat(v: number, upper: boolean): string {
  if (!Number.isFinite(v)) return formatFloat(v, 'g', -1);
  const neg = v < 0 || Object.is(v, -0);
  let mant = 0n;
  let exp = 0;
  if (v !== 0) {
    const view = new DataView(new ArrayBuffer(8));
    view.setFloat64(0, Math.abs(v));
    const bits = view.getBigUint64(0);
    const biased = Number((bits >> 52n) & 0x7ffn);
    mant = bits & ((1n << 52n) - 1n);
    exp = biased - 1023;
    if (biased === 0) {
      // Subnormal: normalise so that the leading 1 is implicit.
      exp = -1022;
      while ((mant & (1n << 52n)) === 0n) {
        mant <<= 1n;
        exp--;
      }
      mant &= (1n << 52n) - 1n;
    }
  }
  const frac = mant.toString(16).padStart(13, '0').replace(/0+$/, '');
  const e = Math.abs(exp);
  let s = `0x${v === 0 ? '0' : '1'}${frac === '' ? '' : '.' + frac}p${exp < 0 ? '-' : '+'}${e < 10 ? '0' : ''}${e}`;
  if (upper) s = s.toUpperCase();
  return (neg ? '-' : '') + s;
}

function formatFloatVerb(v: number, verb: string, f: Flags): string {
  let s: string;
  switch (verb) {
    case 'x':
    case 'X':
      s = hexFloat(v, verb === 'X');
      break;
    case 'v':
      s = formatFloat(v, 'g', f.prec ?? -1);
      break;
    case 'g':
    case 'G':
      s = formatFloat(v, verb, f.prec ?? -1);
      break;
    case 'e':
    case 'E':
      s = formatFloat(v, verb, f.prec ?? 6);
      break;
    case 'f':
    case 'F':
      s = formatFloat(v, 'f', f.prec ?? 6);
      break;
    default:
      return badVerb(verb, v);
  }
  if (f.plus && !s.startsWith('-') && !s.startsWith('+')) s = '+' + s;
  else if (f.space && !s.startsWith('-')) s = ' ' + s;
  if (s === '+Inf' && !f.plus) s = 'Inf';
  return pad(s, f, Number.isFinite(v));
}

function formatString(s: string, verb: string, f: Flags): string {
  const cut = f.prec !== null ? [...s].slice(0, f.prec).join('') : s;
  switch (verb) {
    case 'v':
    case 's':
      return pad(cut, f);
    case 'q':
      return pad(f.sharp && !cut.includes('`') ? '`' + cut + '`' : goQuote(cut), f);
    case 'x':
    case 'X': {
      let hex = Buffer.from(cut, 'utf8').toString('hex');
      if (verb === 'X') hex = hex.toUpperCase();
      return pad(hex, f);
    }
    default:
      return badVerb(verb, s);
  }
}

/** Formats one value for a verb: fmt's printValue over the JSON-like kinds. */
export function formatVerb(v: unknown, verb: string, f: Flags, depth = 0): string {
  switch (kindOf(v)) {
    case 'invalid':
    case 'nil':
      if (verb === 'v' || depth > 0) return pad('<nil>', f, false);
      return badVerb(verb, v);
    case 'bool':
      return verb === 'v' || verb === 't' ? pad(String(v), f, false) : badVerb(verb, v);
    case 'int':
      return formatInt(v as bigint, verb, f);
    case 'int64':
      return formatInt((v as Int64).value, verb, f, v);
    case 'float64':
      return formatFloatVerb(v as number, verb, f);
    case 'string':
      return formatString(v as string, verb, f);
    case 'slice': {
      if (verb === 'x' || verb === 'X' || verb === 's' || verb === 'q' || verb === 'v' || verb === 'd') {
        const inner = (v as unknown[]).map((e) => formatVerb(e, verb, f, depth + 1));
        return `[${inner.join(' ')}]`;
      }
      return `[${(v as unknown[]).map((e) => formatVerb(e, verb, f, depth + 1)).join(' ')}]`;
    }
    case 'map': {
      const m = v as GoMap;
      const parts = sortedKeys(m).map((k) => `${formatVerb(k, verb, f, depth + 1)}:${formatVerb(m[k], verb, f, depth + 1)}`);
      return `map[${parts.join(' ')}]`;
    }
    case 'struct': {
      const m = v as GoMap;
      if (typeof (m as { String?: unknown }).String === 'function' && (verb === 'v' || verb === 's')) {
        return formatString(String((m as { String: () => unknown }).String()), verb, f);
      }
      const parts = Object.keys(m)
        .filter((k) => typeof m[k] !== 'function')
        .map((k) => formatVerb(m[k], verb, f, depth + 1));
      return `{${parts.join(' ')}}`;
    }
    case 'func':
      return verb === 'v' || verb === 'p' ? '0x1' : badVerb(verb, v);
  }
}

/** fmt.Sprint: spaces between operands when neither side is a string. */
export function sprint(args: readonly unknown[]): string {
  let out = '';
  args.forEach((a, i) => {
    if (i > 0 && typeof a !== 'string' && typeof args[i - 1] !== 'string') out += ' ';
    out += printValue(a);
  });
  return out;
}

/** fmt.Sprintln: spaces always, newline appended. */
export function sprintln(args: readonly unknown[]): string {
  return args.map((a) => printValue(a)).join(' ') + '\n';
}

/** fmt.Sprintf with Go's verbs, flags, width/precision (incl. `*`) and its %!verb error forms. */
export function sprintf(format: string, args: readonly unknown[]): string {
  let out = '';
  let argi = 0;
  let i = 0;
  let reordered = false;
  while (i < format.length) {
    const pct = format.indexOf('%', i);
    if (pct < 0) {
      out += format.slice(i);
      break;
    }
    out += format.slice(i, pct);
    i = pct + 1;
    const f: Flags = { ...NO_FLAGS };
    for (; i < format.length; i++) {
      const c = format[i];
      if (c === '+') f.plus = true;
      else if (c === '-') f.minus = true;
      else if (c === '#') f.sharp = true;
      else if (c === ' ') f.space = true;
      else if (c === '0') f.zero = !f.minus;
      else break;
    }
    const readNum = (): number | null => {
      if (format[i] === '*') {
        i++;
        const a = args[argi++];
        if (typeof a === 'bigint') return Number(a);
        out += '%!(BADWIDTH)';
        return null;
      }
      const m = /^\d+/.exec(format.slice(i));
      if (m === null) return null;
      i += m[0].length;
      return Number(m[0]);
    };
    f.width = readNum();
    if (f.width !== null && f.width < 0) {
      f.minus = true;
      f.width = -f.width;
    }
    if (format[i] === '.') {
      i++;
      f.prec = readNum() ?? 0;
    }
    const verb = String.fromCodePoint(format.codePointAt(i) ?? 0x25);
    if (i >= format.length) {
      out += '%!(NOVERB)';
      break;
    }
    i += verb.length;
    if (verb === '%') {
      out += '%';
      continue;
    }
    if (verb === '[') reordered = true;
    if (argi >= args.length) {
      out += `%!${verb}(MISSING)`;
      continue;
    }
    const a = args[argi++];
    if (verb === 'T') out += pad(goTypeName(a), f);
    else if (verb === 'v' && f.sharp) out += printValue(a);
    else out += formatVerb(a, verb, f);
  }
  if (!reordered && argi < args.length) {
    out +=
      '%!(EXTRA ' +
      args
        .slice(argi)
        .map((a) => `${goTypeName(a)}=${printValue(a)}`)
        .join(', ') +
      ')';
  }
  return out;
}
