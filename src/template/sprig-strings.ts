/** Sprig's string, encoding, regex and semver functions (Masterminds/sprig v3 semantics). */
import { createHash } from 'node:crypto';
import { RE2JS } from 're2js';
import { FuncError } from './errors.js';
import { printValue } from './fmt.js';
import { spec, type FuncSpec } from './funcs.js';
import { goQuote } from './parse.js';
import { compareStrings, goStringMap, goTypedSlice, isPlainObject, kindOf } from './values.js';

/** Sprig's strval: strings as is, Stringers via String(), everything else as %v. */
export function strval(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v instanceof Error) return v.message;
  if (typeof v === 'object' && v !== null && !isPlainObject(v) && !Array.isArray(v)) {
    const s = (v as { String?: unknown }).String;
    if (typeof s === 'function') return String((s as () => unknown).call(v));
  }
  return printValue(v === undefined ? null : v);
}

/** Sprig's strslice (toStrings): nil elements dropped, others through strval. */
export function strslice(v: unknown): string[] {
  if (Array.isArray(v)) return v.filter((e) => e !== null && e !== undefined).map(strval);
  if (v === null || v === undefined) return [];
  return [strval(v)];
}

const GO_SPACE =
  /^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+|[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+$/g;

/** strings.Trim(s, cutset). */
function trimCutset(s: string, cutset: string): string {
  const set = new Set([...cutset]);
  const ch = [...s];
  let a = 0;
  let b = ch.length;
  while (a < b && set.has(ch[a] ?? '')) a++;
  while (b > a && set.has(ch[b - 1] ?? '')) b--;
  return ch.slice(a, b).join('');
}

/** strings.Title: upper-cases the first letter of each word (Go's deprecated but still used rules). */
function title(s: string): string {
  let prev = ' ';
  let out = '';
  for (const c of s) {
    const sep = /[A-Za-z0-9_]/.test(prev) ? false : prev.charCodeAt(0) < 0x80 ? true : /\s/u.test(prev) || !/[\p{L}\p{N}]/u.test(prev);
    out += sep ? c.toUpperCase() : c;
    prev = c;
  }
  return out;
}

/** strings.Split: an empty separator splits into characters. */
function goSplit(s: string, sep: string): string[] {
  if (sep === '') return [...s];
  return s.split(sep);
}

/** strings.Replace(s, old, new, -1). */
function goReplaceAll(s: string, old: string, repl: string): string {
  if (old === '') return [...s].map((c) => repl + c).join('') + repl;
  return s.split(old).join(repl);
}

/** strconv.CanBackquote: no backquote and no control characters other than tab. */
function canBackquote(s: string): boolean {
  for (const c of s) {
    const cp = c.codePointAt(0) ?? 0;
    if (c === '`' || cp === 0xfeff || cp === 0x7f || (cp < 0x20 && c !== '\t')) return false;
  }
  return true;
}

/**
 * regexp.Compile (must: the error as returned) or regexp.MustCompile (its panic text), which
 * Sprig's must* and plain functions use respectively. re2js words syntax errors as Go does.
 */
export function compileRe(expr: string, must: boolean): RE2JS {
  try {
    return RE2JS.compile(expr);
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    if (must) throw new FuncError(msg);
    const quoted = canBackquote(expr) ? '`' + expr + '`' : goQuote(expr);
    throw new FuncError(`regexp: Compile(${quoted}): ${msg}`);
  }
}

/** regexp.Expand template syntax: $1, $name (longest word), ${name}, $$. */
function expand(
  template: string,
  m: { group(g: string | number): string | null },
  names: Record<string, number>,
  groupCount: number,
): string {
  let out = '';
  for (let i = 0; i < template.length; i++) {
    const c = template[i];
    if (c !== '$') {
      out += c;
      continue;
    }
    const next = template[i + 1];
    if (next === '$') {
      out += '$';
      i++;
      continue;
    }
    let name: string;
    let end: number;
    if (next === '{') {
      const close = template.indexOf('}', i + 2);
      const candidate = close < 0 ? '' : template.slice(i + 2, close);
      if (close < 0 || !/^\w+$/.test(candidate)) {
        out += c;
        continue;
      }
      name = candidate;
      end = close;
    } else {
      const mm = /^\w+/.exec(template.slice(i + 1));
      if (mm === null) {
        out += c;
        continue;
      }
      name = mm[0];
      end = i + mm[0].length;
    }
    i = end;
    let idx: number | undefined;
    if (/^\d+$/.test(name)) idx = Number(name);
    else idx = names[name];
    if (idx !== undefined && idx <= groupCount) out += m.group(idx) ?? '';
  }
  return out;
}

/** Regexp.ReplaceAllString with Go's empty-match rules and Expand. */
export function regexReplaceAll(expr: string, s: string, repl: string, literal: boolean, must: boolean): string {
  const re = compileRe(expr, must);
  const names = re.namedGroups();
  const m = re.matcher(s);
  let out = '';
  let lastEnd = 0;
  let searchPos = 0;
  while (searchPos <= s.length && m.find(searchPos)) {
    const a0 = m.start();
    const a1 = m.end();
    out += s.slice(lastEnd, a0);
    if (a1 > lastEnd || a0 === 0) out += literal ? repl : expand(repl, m, names, m.groupCount());
    lastEnd = a1;
    const width = (s.codePointAt(searchPos) ?? 0) > 0xffff ? 2 : 1;
    if (searchPos + width > a1) searchPos += width;
    else if (searchPos + 1 > a1) searchPos++;
    else searchPos = a1;
  }
  return out + s.slice(lastEnd);
}

function regexMatch(expr: string, s: string): boolean {
  try {
    return RE2JS.compile(expr).matcher(s).find();
  } catch {
    return false;
  }
}

// --- semver (Masterminds/semver v3 constraints, the common forms) ---

interface Version {
  major: number;
  minor: number;
  patch: number;
  pre: string;
}

function parseVersion(s: string): Version | null {
  const m = /^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$/.exec(s.trim());
  if (m === null) return null;
  return { major: Number(m[1]), minor: Number(m[2] ?? 0), patch: Number(m[3] ?? 0), pre: m[4] ?? '' };
}

function comparePre(a: string, b: string): number {
  if (a === b) return 0;
  if (a === '') return 1;
  if (b === '') return -1;
  const pa = a.split('.');
  const pb = b.split('.');
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const x = pa[i];
    const y = pb[i];
    if (x === undefined) return -1;
    if (y === undefined) return 1;
    if (x === y) continue;
    const xn = /^\d+$/.test(x);
    const yn = /^\d+$/.test(y);
    if (xn && yn) return Number(x) < Number(y) ? -1 : 1;
    if (xn) return -1;
    if (yn) return 1;
    return x < y ? -1 : 1;
  }
  return 0;
}

function compareVersions(a: Version, b: Version): number {
  for (const k of ['major', 'minor', 'patch'] as const) if (a[k] !== b[k]) return a[k] < b[k] ? -1 : 1;
  return comparePre(a.pre, b.pre);
}

function checkOne(op: string, raw: string, v: Version): boolean {
  const parts = raw.replace(/^v/, '').split('.');
  const wild = (p: string | undefined): boolean => p === undefined || p === 'x' || p === 'X' || p === '*';
  const c = parseVersion(parts.map((p) => (wild(p) ? '0' : p)).join('.'));
  if (c === null) throw new FuncError(`improper constraint: ${op}${raw}`);
  // A prerelease only satisfies a constraint that itself has a prerelease.
  if (v.pre !== '' && c.pre === '') return false;
  const cmp = compareVersions(v, c);
  const minorWild = wild(parts[1]);
  const patchWild = wild(parts[2]);
  switch (op) {
    case '':
    case '=':
      if (minorWild) return v.major === c.major;
      if (patchWild) return v.major === c.major && v.minor === c.minor;
      return cmp === 0;
    case '!=':
      return cmp !== 0;
    case '>':
      return cmp > 0;
    case '<':
      return cmp < 0;
    case '>=':
    case '=>':
      return cmp >= 0;
    case '<=':
    case '=<':
      return cmp <= 0;
    case '~':
    case '~>':
      if (cmp < 0) return false;
      if (minorWild) return v.major === c.major;
      return v.major === c.major && v.minor === c.minor;
    case '^':
      if (cmp < 0) return false;
      if (c.major > 0 || minorWild) return v.major === c.major;
      if (c.minor > 0 || patchWild) return v.major === 0 && v.minor === c.minor;
      return v.major === 0 && v.minor === 0 && v.patch === c.patch;
    default:
      throw new FuncError(`improper constraint: ${op}${raw}`);
  }
}

export function semverCompare(constraint: string, version: string): boolean {
  const v = parseVersion(version);
  if (v === null) throw new FuncError('Invalid Semantic Version');
  return constraint.split('||').some((alt) => {
    const terms = alt
      .trim()
      .split(/\s*,\s*|\s+(?=[<>=!~^])/)
      .filter((t) => t !== '');
    return terms.every((t) => {
      const m = /^(!=|>=|=>|<=|=<|~>|[=><~^])?\s*(\S+)$/.exec(t.trim());
      if (m === null) throw new FuncError(`improper constraint: ${t}`);
      return checkOne(m[1] ?? '', m[2] ?? '', v);
    });
  });
}

function b64dec(s: string): string {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(s) || s.length % 4 !== 0) {
    const bad = s.search(/[^A-Za-z0-9+/=]/);
    return `illegal base64 data at input byte ${bad < 0 ? Math.max(s.length - (s.length % 4), 0) : bad}`;
  }
  return Buffer.from(s, 'base64').toString('utf8');
}

export const SPRIG_STRINGS: ReadonlyArray<[string, FuncSpec]> = [
  ['trim', spec(['string'], ([s]) => (s as string).replace(GO_SPACE, ''))],
  ['trimAll', spec(['string', 'string'], ([c, s]) => trimCutset(s as string, c as string))],
  ['trimall', spec(['string', 'string'], ([c, s]) => trimCutset(s as string, c as string))],
  [
    'trimPrefix',
    spec(['string', 'string'], ([p, s]) => ((s as string).startsWith(p as string) ? (s as string).slice((p as string).length) : s)),
  ],
  [
    'trimSuffix',
    spec(['string', 'string'], ([p, s]) =>
      (s as string).endsWith(p as string) && (p as string) !== '' ? (s as string).slice(0, -(p as string).length) : s,
    ),
  ],
  ['upper', spec(['string'], ([s]) => (s as string).toUpperCase())],
  ['lower', spec(['string'], ([s]) => (s as string).toLowerCase())],
  ['title', spec(['string'], ([s]) => title(s as string))],
  [
    'repeat',
    spec(['int', 'string'], ([n, s]) => {
      if ((n as bigint) < 0n) throw new FuncError('strings: negative Repeat count');
      return (s as string).repeat(Number(n));
    }),
  ],
  [
    'substr',
    spec(['int', 'int', 'string'], ([a, b, s]) => {
      const start = Number(a);
      const end = Number(b);
      const str = s as string;
      if (start < 0) return str.slice(0, end);
      if (end < 0 || end > str.length) return str.slice(start);
      return str.slice(start, end);
    }),
  ],
  [
    'trunc',
    spec(['int', 'string'], ([n, s]) => {
      const c = Number(n);
      const str = s as string;
      if (c < 0 && str.length + c > 0) return str.slice(str.length + c);
      if (c >= 0 && str.length > c) return str.slice(0, c);
      return str;
    }),
  ],
  ['contains', spec(['string', 'string'], ([sub, s]) => (s as string).includes(sub as string))],
  ['hasPrefix', spec(['string', 'string'], ([p, s]) => (s as string).startsWith(p as string))],
  ['hasSuffix', spec(['string', 'string'], ([p, s]) => (s as string).endsWith(p as string))],
  [
    'quote',
    spec(
      [],
      (args) =>
        args
          .filter((a) => a !== null && a !== undefined)
          .map((a) => goQuote(strval(a)))
          .join(' '),
      'any',
    ),
  ],
  [
    'squote',
    spec(
      [],
      (args) =>
        args
          .filter((a) => a !== null && a !== undefined)
          .map((a) => `'${printValue(a)}'`)
          .join(' '),
      'any',
    ),
  ],
  [
    'cat',
    spec(
      [],
      (args) =>
        args
          .filter((a) => a !== null && a !== undefined)
          .map((a) => printValue(a))
          .join(' '),
      'any',
    ),
  ],
  [
    'indent',
    spec(['int', 'string'], ([n, s]) => {
      const pad = ' '.repeat(Number(n));
      return pad + (s as string).split('\n').join('\n' + pad);
    }),
  ],
  [
    'nindent',
    spec(['int', 'string'], ([n, s]) => {
      const pad = ' '.repeat(Number(n));
      return '\n' + pad + (s as string).split('\n').join('\n' + pad);
    }),
  ],
  ['replace', spec(['string', 'string', 'string'], ([o, n, s]) => goReplaceAll(s as string, o as string, n as string))],
  ['toString', spec(['any'], ([v]) => strval(v))],
  ['toStrings', spec(['any'], ([v]) => goTypedSlice(strslice(v), 'string'))],
  [
    'split',
    spec(['string', 'string'], ([sep, s]) => {
      const out: Record<string, unknown> = {};
      goSplit(s as string, sep as string).forEach((p, i) => {
        out['_' + String(i)] = p;
      });
      return goStringMap(out as Record<string, string>);
    }),
  ],
  ['splitList', spec(['string', 'string'], ([sep, s]) => goTypedSlice(goSplit(s as string, sep as string), 'string'))],
  ['join', spec(['string', 'any'], ([sep, v]) => strslice(v).join(sep as string))],
  [
    'sortAlpha',
    spec(['any'], ([v]) => {
      if (kindOf(v) === 'slice') return goTypedSlice(strslice(v).sort(compareStrings), 'string');
      return goTypedSlice([strval(v)], 'string');
    }),
  ],
  ['b64enc', spec(['string'], ([s]) => Buffer.from(s as string, 'utf8').toString('base64'))],
  ['b64dec', spec(['string'], ([s]) => b64dec(s as string))],
  [
    'sha256sum',
    spec(['string'], ([s]) =>
      createHash('sha256')
        .update(s as string, 'utf8')
        .digest('hex'),
    ),
  ],
  [
    'sha1sum',
    spec(['string'], ([s]) =>
      createHash('sha1')
        .update(s as string, 'utf8')
        .digest('hex'),
    ),
  ],
  ['regexMatch', spec(['string', 'string'], ([re, s]) => regexMatch(re as string, s as string))],
  [
    'mustRegexMatch',
    spec(['string', 'string'], ([re, s]) => {
      compileRe(re as string, true);
      return regexMatch(re as string, s as string);
    }),
  ],
  [
    'regexReplaceAll',
    spec(['string', 'string', 'string'], ([re, s, r]) => regexReplaceAll(re as string, s as string, r as string, false, false)),
  ],
  [
    'regexReplaceAllLiteral',
    spec(['string', 'string', 'string'], ([re, s, r]) => regexReplaceAll(re as string, s as string, r as string, true, false)),
  ],
  [
    'mustRegexReplaceAll',
    spec(['string', 'string', 'string'], ([re, s, r]) => regexReplaceAll(re as string, s as string, r as string, false, true)),
  ],
  [
    'mustRegexReplaceAllLiteral',
    spec(['string', 'string', 'string'], ([re, s, r]) => regexReplaceAll(re as string, s as string, r as string, true, true)),
  ],
  ['semverCompare', spec(['string', 'string'], ([c, v]) => semverCompare(c as string, v as string))],
];
