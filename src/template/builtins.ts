/** Go text/template's predefined functions (funcs.go), with Go's comparison rules and error texts. */
import { FuncError } from './errors.js';
import { AND_OR } from './exec.js';
import { formatVerb, sprint, sprintf, sprintln } from './fmt.js';
import { spec, type CallContext, type FuncSpec } from './funcs.js';
import { goLen, goTypeName, intValue, isTrue, kindOf, mapZero, type GoMap } from './values.js';

type BasicKind = 'invalid' | 'bool' | 'int' | 'float' | 'string';

function basicKind(v: unknown): BasicKind {
  switch (kindOf(v)) {
    case 'bool':
      return 'bool';
    case 'int':
    case 'int64':
      return 'int';
    case 'float64':
      return 'float';
    case 'string':
      return 'string';
    default:
      return 'invalid';
  }
}

const errBadComparisonType = 'invalid type for comparison';
const errBadComparison = 'incompatible types for comparison';
const errNoComparison = 'missing argument for comparison';

/** Go formats the operands of these errors with %s. */
function asS(v: unknown): string {
  return formatVerb(v, 's', { plus: false, minus: false, sharp: false, space: false, zero: false, width: null, prec: null });
}

function isNilish(v: unknown): boolean {
  return v === undefined || v === null;
}

function eq(args: unknown[]): boolean {
  const [a1, ...rest] = args;
  if (rest.length === 0) throw new FuncError(errNoComparison);
  const k1 = basicKind(a1);
  for (const a of rest) {
    const k2 = basicKind(a);
    let truth = false;
    if (k1 !== k2) {
      if (!isNilish(a1) && !isNilish(a)) throw new FuncError(`${errBadComparison}: ${goTypeName(a1)} and ${goTypeName(a)}`);
    } else if (k1 === 'invalid') {
      // Non-basic kinds: comparable only against nil or the same kind; maps, slices, funcs never by value.
      const r1 = isNilish(a1) ? 'invalid' : kindOf(a1);
      const r2 = isNilish(a) ? 'invalid' : kindOf(a);
      if (r1 !== r2 && r1 !== 'invalid' && r2 !== 'invalid') {
        throw new FuncError(`non-comparable types ${asS(a1)}: ${goTypeName(a1)}, ${goTypeName(a)}: ${asS(a)}`);
      }
      if (isNilish(a1) || isNilish(a)) {
        truth = isNilish(a1) === isNilish(a);
      } else {
        if (r2 === 'slice' || r2 === 'map' || r2 === 'func') throw new FuncError(`non-comparable type ${asS(a)}: ${goTypeName(a)}`);
        truth = a1 === a;
      }
    } else {
      truth = k1 === 'int' ? intValue(a1) === intValue(a) : a1 === a;
    }
    if (truth) return true;
  }
  return false;
}

function lt(a: unknown, b: unknown): boolean {
  const k1 = basicKind(a);
  const k2 = basicKind(b);
  if (k1 === 'invalid' || k2 === 'invalid') throw new FuncError(errBadComparisonType);
  if (k1 !== k2) throw new FuncError(`${errBadComparison}: ${goTypeName(a)} and ${goTypeName(b)}`);
  if (k1 === 'bool') throw new FuncError(errBadComparisonType);
  if (k1 === 'string') return (a as string) < (b as string);
  if (k1 === 'int') return (intValue(a) ?? 0n) < (intValue(b) ?? 0n);
  return (a as number) < (b as number);
}

function indexArg(index: unknown, cap: number): number {
  if (index === undefined || index === null) throw new FuncError('cannot index slice/array with nil');
  const i = intValue(index);
  if (i === null) throw new FuncError(`cannot index slice/array with type ${goTypeName(index)}`);
  if (i < 0n || i >= BigInt(cap)) throw new FuncError(`index out of range: ${i}`);
  return Number(i);
}

function index(args: unknown[]): unknown {
  let item = args[0];
  if (item === undefined || item === null) throw new FuncError('index of untyped nil');
  for (const ix of args.slice(1)) {
    if (item === undefined || item === null) throw new FuncError('index of untyped nil');
    switch (kindOf(item)) {
      case 'slice': {
        const arr = item as unknown[];
        item = arr[indexArg(ix, arr.length)];
        break;
      }
      case 'string': {
        const bytes = Buffer.from(item as string, 'utf8');
        item = BigInt(bytes[indexArg(ix, bytes.length)] ?? 0);
        break;
      }
      case 'map': {
        if (typeof ix !== 'string') {
          if (ix === undefined || ix === null) throw new FuncError('value is nil; should be of type string');
          throw new FuncError(`value has type ${goTypeName(ix)}; should be string`);
        }
        const m = item as GoMap;
        item = Object.prototype.hasOwnProperty.call(m, ix) ? m[ix] : mapZero(m);
        break;
      }
      default:
        throw new FuncError(`can't index item of type ${goTypeName(item)}`);
    }
  }
  return item;
}

function slice(args: unknown[]): unknown {
  const item = args[0];
  if (item === undefined || item === null) throw new FuncError('slice of untyped nil');
  const idx = args.slice(1);
  if (idx.length > 3) throw new FuncError(`too many slice indexes: ${idx.length}`);
  const k = kindOf(item);
  if (k !== 'string' && k !== 'slice') throw new FuncError(`can't slice item of type ${goTypeName(item)}`);
  if (k === 'string' && idx.length > 2) throw new FuncError(`cannot 3-index slice a string`);
  const len = k === 'string' ? Buffer.byteLength(item as string) : (item as unknown[]).length;
  const cap = len;
  const pos = [0, len];
  idx.forEach((x, i) => {
    const n = indexArg(x, cap + 1);
    pos[i] = n;
  });
  const [lo = 0, hi = len] = pos;
  if (lo > hi) throw new FuncError(`invalid slice index: ${lo} > ${hi}`);
  if (idx.length === 3) {
    const max = Number(intValue(idx[2]) ?? 0n);
    if (hi > max) throw new FuncError(`invalid slice index: ${hi} > ${max}`);
  }
  if (k === 'string')
    return Buffer.from(item as string, 'utf8')
      .subarray(lo, hi)
      .toString('utf8');
  return (item as unknown[]).slice(lo, hi);
}

/** Go's evalArgs for html/js/urlquery: one string as is, otherwise fmt.Sprint of the arguments. */
function evalArgs(args: unknown[]): string {
  if (args.length === 1 && typeof args[0] === 'string') return args[0];
  return sprint(args.map((a) => (a === undefined || a === null ? '<no value>' : a)));
}

function htmlEscape(s: string): string {
  return s.replace(/[\0"'&<>]/g, (c) => ({ '\0': '\uFFFD', '"': '&#34;', "'": '&#39;', '&': '&amp;', '<': '&lt;', '>': '&gt;' })[c] ?? c);
}

function jsEscape(s: string): string {
  let out = '';
  for (const ch of s) {
    const cp = ch.codePointAt(0) ?? 0;
    const named: Record<string, string> = {
      '\\': '\\\\',
      "'": "\\'",
      '"': '\\"',
      '<': '\\u003C',
      '>': '\\u003E',
      '&': '\\u0026',
      '=': '\\u003D',
    };
    const n = named[ch];
    if (n !== undefined) out += n;
    else if (cp < 0x20) out += '\\u00' + cp.toString(16).toUpperCase().padStart(2, '0');
    else if (cp >= 0x80 && !/[\p{L}\p{M}\p{N}\p{P}\p{S}]|\u0020/u.test(ch)) out += '\\u' + cp.toString(16).toUpperCase().padStart(4, '0');
    else out += ch;
  }
  return out;
}

/** url.QueryEscape. */
export function queryEscape(s: string): string {
  let out = '';
  for (const b of Buffer.from(s, 'utf8')) {
    const c = String.fromCharCode(b);
    if (/[A-Za-z0-9\-_.~]/.test(c)) out += c;
    else if (c === ' ') out += '+';
    else out += '%' + b.toString(16).toUpperCase().padStart(2, '0');
  }
  return out;
}

function call(args: unknown[], ctx: CallContext): unknown {
  const fn = args[0];
  if (fn === undefined || fn === null) throw new FuncError('call of nil');
  if (typeof fn !== 'function') throw new FuncError(`non-function ${ctx.argText(0)} of type ${goTypeName(fn)}`);
  return (fn as (...a: unknown[]) => unknown)(...args.slice(1).map((a) => (a === undefined ? null : a)));
}

export const BUILTINS: ReadonlyMap<string, FuncSpec> = new Map<string, FuncSpec>([
  ...AND_OR,
  ['not', spec(['value'], ([a]) => !isTrue(a))],
  [
    'len',
    spec(['value'], ([a]) => {
      if (a === null) throw new FuncError('len of nil pointer');
      if (a === undefined) throw new FuncError('reflect: call of reflect.Value.Type on zero Value');
      const n = goLen(a);
      if (n === null) throw new FuncError(`len of type ${goTypeName(a)}`);
      return BigInt(n);
    }),
  ],
  ['index', spec(['value'], index, 'value')],
  ['slice', spec(['value'], slice, 'value')],
  ['print', spec([], (a) => sprint(a), 'any')],
  ['printf', spec(['string'], ([f, ...rest]) => sprintf(f as string, rest), 'any')],
  ['println', spec([], (a) => sprintln(a), 'any')],
  ['eq', spec(['value'], eq, 'value')],
  ['ne', spec(['value', 'value'], ([a, b]) => !eq([a, b]))],
  ['lt', spec(['value', 'value'], ([a, b]) => lt(a, b))],
  ['le', spec(['value', 'value'], ([a, b]) => lt(a, b) || eq([a, b]))],
  ['gt', spec(['value', 'value'], ([a, b]) => !lt(a, b) && !eq([a, b]))],
  ['ge', spec(['value', 'value'], ([a, b]) => !lt(a, b))],
  ['html', spec([], (a) => htmlEscape(evalArgs(a)), 'any')],
  ['js', spec([], (a) => jsEscape(evalArgs(a)), 'any')],
  ['urlquery', spec([], (a) => queryEscape(evalArgs(a)), 'any')],
  ['call', spec(['value'], call, 'value')],
]);
