/**
 * Sprig's collection, default, numeric and type functions, plus Helm's own functions (toYaml,
 * fromYaml, toJson, fromJson, include, tpl, required, fail). Sprig's env/expandenv are left out on
 * purpose (Helm removes them too; istiod supplies its own `env`).
 */
import { FuncError } from './errors.js';
import { spec, type FuncSpec } from './funcs.js';
import { marshalJson, unmarshalJson } from './gojson.js';
import { marshalYaml } from './goyaml.js';
import { decodeYamlLikeGo } from './goyaml-decode.js';
import { parseGoInt, parseGoFloat } from './literals.js';
import { extraFuncs } from './sprig-extra.js';
import { SPRIG_STRINGS, strslice, strval } from './sprig-strings.js';
import { deepCopy, goTypedSlice, goTypeName, Int64, isPlainObject, kindOf, setKey, sliceElem, type GoMap } from './values.js';

/** Sprig's empty: zero values, empty collections and nil are empty; structs never are. */
export function isEmpty(v: unknown): boolean {
  switch (kindOf(v)) {
    case 'invalid':
    case 'nil':
      return true;
    case 'string':
      return (v as string).length === 0;
    case 'slice':
      return (v as unknown[]).length === 0;
    case 'map':
      return Object.keys(v as GoMap).length === 0;
    case 'bool':
      return !(v as boolean);
    case 'int':
      return (v as bigint) === 0n;
    case 'int64':
      return (v as Int64).value === 0n;
    case 'float64':
      return (v as number) === 0;
    default:
      return false;
  }
}

const INT64_MAX = (1n << 63n) - 1n;
const INT64_MIN = -(1n << 63n);

/** cast.ToInt64 as Sprig uses it: errors become 0. */
export function toInt64(v: unknown): bigint {
  switch (kindOf(v)) {
    case 'int':
      return v as bigint;
    case 'int64':
      return (v as Int64).value;
    case 'float64': {
      const f = v as number;
      if (!Number.isFinite(f)) return INT64_MIN;
      const t = BigInt(Math.trunc(f));
      return t > INT64_MAX || t < INT64_MIN ? INT64_MIN : t;
    }
    case 'bool':
      return v ? 1n : 0n;
    case 'string': {
      let s = v as string;
      if (/^[^.]*\.0*$/.test(s) && s.includes('.')) s = s.slice(0, s.indexOf('.'));
      return parseGoInt(s) ?? 0n;
    }
    default:
      return 0n;
  }
}

/** cast.ToFloat64. */
export function toFloat64(v: unknown): number {
  switch (kindOf(v)) {
    case 'int':
      return Number(v as bigint);
    case 'int64':
      return Number((v as Int64).value);
    case 'float64':
      return v as number;
    case 'bool':
      return v ? 1 : 0;
    case 'string':
      return parseGoFloat(v as string) ?? 0;
    default:
      return 0;
  }
}

/** An int64 result, wrapped around as Go's int64 arithmetic does. */
function wrapInt64(v: bigint): Int64 {
  return new Int64(BigInt.asIntN(64, v));
}

/** reflect.DeepEqual over the JSON-like kinds (types must match: 1 and 1.0 differ). */
export function deepEqual(a: unknown, b: unknown): boolean {
  const ka = kindOf(a);
  if (ka !== kindOf(b)) return (a === null || a === undefined) && (b === null || b === undefined);
  if (ka === 'slice') {
    if (sliceElem(a) !== sliceElem(b)) return false;
    const x = a as unknown[];
    const y = b as unknown[];
    return x.length === y.length && x.every((e, i) => deepEqual(e, y[i]));
  }
  if (ka === 'int64') return (a as Int64).value === (b as Int64).value;
  if (ka === 'map') {
    const x = a as GoMap;
    const y = b as GoMap;
    const kx = Object.keys(x);
    return kx.length === Object.keys(y).length && kx.every((k) => Object.prototype.hasOwnProperty.call(y, k) && deepEqual(x[k], y[k]));
  }
  return a === b;
}

/** reflect's Slice keeps the element type: []string in, []string out. */
function likeSlice(src: unknown, out: unknown[]): unknown[] {
  const elem = sliceElem(src);
  return elem === 'string' || elem === 'int' ? goTypedSlice(out, elem) : out;
}

function listOf(fnName: string, v: unknown): unknown[] {
  if (v === null || v === undefined) throw new FuncError('runtime error: invalid memory address or nil pointer dereference');
  if (!Array.isArray(v)) throw new FuncError(`Cannot ${fnName} on type ${goKindName(v)}`);
  return v;
}

/** reflect.Kind.String() of a value (what Sprig's kindOf and its error messages print). */
export function goKindName(v: unknown): string {
  const k = kindOf(v);
  return k === 'nil' ? 'invalid' : k;
}

/** mergo.Merge / MergeWithOverwrite over map[string]interface{}, as Sprig's merge and mergeOverwrite. */
function mergeInto(dst: GoMap, src: GoMap, overwrite: boolean): void {
  for (const k of Object.keys(src)) {
    const s = src[k];
    if (s === null || s === undefined) {
      if (overwrite) setKey(dst, k, null);
      continue;
    }
    const d = dst[k];
    const has = Object.prototype.hasOwnProperty.call(dst, k);
    if (isPlainObject(s) && isPlainObject(d)) {
      mergeInto(d, s, overwrite);
      if (!isEmpty(d)) continue;
    }
    if (overwrite || !has || isEmpty(d)) setKey(dst, k, s);
  }
}

function untilStep(start: bigint, stop: bigint, step: bigint): bigint[] {
  const out: bigint[] = [];
  if (step === 0n) return out;
  if (stop < start) {
    if (step >= 0n) return out;
    for (let i = start; i > stop; i += step) out.push(i);
    return out;
  }
  if (step <= 0n) return out;
  for (let i = start; i < stop; i += step) out.push(i);
  return out;
}

function seq(params: bigint[]): string {
  const [a, b, c] = params;
  let r: bigint[] = [];
  if (params.length === 1 && a !== undefined) {
    const inc = a < 1n ? -1n : 1n;
    r = untilStep(1n, a + inc, inc);
  } else if (params.length === 2 && a !== undefined && b !== undefined) {
    const step = b < a ? -1n : 1n;
    r = untilStep(a, b + step, step);
  } else if (params.length === 3 && a !== undefined && b !== undefined && c !== undefined) {
    let inc = 1n;
    if (c < a) {
      inc = -1n;
      if (b > 0n) return '';
    }
    r = untilStep(a, c + inc, b);
  }
  return r.join(' ');
}

function mapArg(v: unknown): GoMap {
  return isPlainObject(v) ? v : {};
}

function fromYaml(text: string): unknown {
  // Helm: yaml.Unmarshal into a map; errors are reported in the map under "Error".
  try {
    const v = decodeYamlLikeGo(text);
    if (v === null) return {};
    if (!isPlainObject(v))
      return {
        Error: `error unmarshaling JSON: while decoding JSON: json: cannot unmarshal ${Array.isArray(v) ? 'array' : jsonKind(v)} into Go value of type map[string]interface {}`,
      };
    return v;
  } catch (e) {
    return { Error: e instanceof Error ? e.message : String(e) };
  }
}

/** encoding/json's name for a JSON value's kind in "cannot unmarshal" errors. */
export function jsonKind(v: unknown): string {
  if (typeof v === 'boolean') return 'bool';
  return typeof v === 'object' ? 'object' : typeof v;
}

function safeJson(v: unknown, indent = '', escapeHTML = true): string {
  try {
    return marshalJson(v, indent, escapeHTML);
  } catch {
    return '';
  }
}

const SPRIG_CORE: ReadonlyArray<[string, FuncSpec]> = [
  // defaults
  ['default', spec(['any'], ([d, ...given]) => (given.length === 0 || isEmpty(given[0]) ? d : given[0]), 'any')],
  ['empty', spec(['any'], ([v]) => isEmpty(v))],
  ['coalesce', spec([], (args) => args.find((a) => !isEmpty(a)) ?? null, 'any')],
  ['ternary', spec(['any', 'any', 'bool'], ([t, f, c]) => (c ? t : f))],
  [
    'deepCopy',
    spec(['any'], ([v]) => {
      if (v === null || v === undefined) throw new FuncError('reflect: call of reflect.Value.Type on zero Value');
      return deepCopy(v);
    }),
  ],
  ['toJson', spec(['any'], ([v]) => safeJson(v))],
  ['toPrettyJson', spec(['any'], ([v]) => safeJson(v, '  '))],
  ['toRawJson', spec(['any'], ([v]) => safeJson(v, '', false))],
  [
    'fromJson',
    spec(['string'], ([s]) => {
      try {
        const v = unmarshalJson(s as string);
        return isPlainObject(v)
          ? v
          : { Error: `json: cannot unmarshal ${Array.isArray(v) ? 'array' : typeof v} into Go value of type map[string]interface {}` };
      } catch (e) {
        return { Error: e instanceof Error ? e.message : String(e) };
      }
    }),
  ],
  [
    'toYaml',
    spec(['any'], ([v]) => {
      try {
        return marshalYaml(v).replace(/\n$/, '');
      } catch {
        return '';
      }
    }),
  ],
  ['fromYaml', spec(['string'], ([s]) => fromYaml(s as string))],
  // types
  ['typeOf', spec(['any'], ([v]) => goTypeName(v))],
  ['kindOf', spec(['any'], ([v]) => goKindName(v))],
  ['kindIs', spec(['string', 'any'], ([t, v]) => t === goKindName(v))],
  ['typeIs', spec(['string', 'any'], ([t, v]) => t === goTypeName(v))],
  // numbers
  ['int', spec(['any'], ([v]) => toInt64(v))],
  ['int64', spec(['any'], ([v]) => new Int64(toInt64(v)))],
  ['float64', spec(['any'], ([v]) => toFloat64(v))],
  [
    'atoi',
    spec(['string'], ([s]) => (/^[+-]?\d+$/.test(s as string) ? (parseGoInt((s as string).replace(/^([+-]?)0+(?=\d)/, '$1')) ?? 0n) : 0n)),
  ],
  ['add', spec([], (args) => wrapInt64(args.reduce<bigint>((a, b) => a + toInt64(b), 0n)), 'any')],
  ['add1', spec(['any'], ([v]) => wrapInt64(toInt64(v) + 1n))],
  ['sub', spec(['any', 'any'], ([a, b]) => wrapInt64(toInt64(a) - toInt64(b)))],
  ['mul', spec(['any'], ([a, ...rest]) => wrapInt64(rest.reduce<bigint>((x, y) => x * toInt64(y), toInt64(a))), 'any')],
  [
    'div',
    spec(['any', 'any'], ([a, b]) => {
      const d = toInt64(b);
      if (d === 0n) throw new FuncError('runtime error: integer divide by zero');
      return wrapInt64(toInt64(a) / d);
    }),
  ],
  [
    'mod',
    spec(['any', 'any'], ([a, b]) => {
      const d = toInt64(b);
      if (d === 0n) throw new FuncError('runtime error: integer divide by zero');
      return wrapInt64(toInt64(a) % d);
    }),
  ],
  ['max', spec(['any'], ([a, ...rest]) => new Int64(rest.reduce<bigint>((x, y) => (toInt64(y) > x ? toInt64(y) : x), toInt64(a))), 'any')],
  ['min', spec(['any'], ([a, ...rest]) => new Int64(rest.reduce<bigint>((x, y) => (toInt64(y) < x ? toInt64(y) : x), toInt64(a))), 'any')],
  ['until', spec(['int'], ([n]) => goTypedSlice(untilStep(0n, n as bigint, (n as bigint) < 0n ? -1n : 1n), 'int'))],
  ['untilStep', spec(['int', 'int', 'int'], ([a, b, c]) => goTypedSlice(untilStep(a as bigint, b as bigint, c as bigint), 'int'))],
  ['seq', spec([], (args) => seq(args as bigint[]), 'int')],
  // lists
  ['list', spec([], (args) => args, 'any')],
  ['tuple', spec([], (args) => args, 'any')],
  ['append', spec(['any', 'any'], ([l, v]) => [...listOf('push', l), v])],
  ['push', spec(['any', 'any'], ([l, v]) => [...listOf('push', l), v])],
  ['prepend', spec(['any', 'any'], ([l, v]) => [v, ...listOf('prepend', l)])],
  ['first', spec(['any'], ([l]) => listOf('find first', l)[0] ?? null)],
  [
    'last',
    spec(['any'], ([l]) => {
      const a = listOf('find last', l);
      return a.length === 0 ? null : a[a.length - 1];
    }),
  ],
  [
    'rest',
    spec(['any'], ([l]) => {
      const a = listOf('find rest', l);
      return a.length === 0 ? null : likeSlice(a, a.slice(1));
    }),
  ],
  [
    'initial',
    spec(['any'], ([l]) => {
      const a = listOf('find initial', l);
      return a.length === 0 ? null : likeSlice(a, a.slice(0, -1));
    }),
  ],
  ['reverse', spec(['any'], ([l]) => [...listOf('find reverse', l)].reverse())],
  [
    'concat',
    spec(
      [],
      (lists) =>
        lists.flatMap((l) => {
          if (l === null || l === undefined) throw new FuncError('runtime error: invalid memory address or nil pointer dereference');
          if (!Array.isArray(l)) throw new FuncError(`Cannot concat type ${goKindName(l)} as list`);
          return l;
        }),
      'any',
    ),
  ],
  [
    'has',
    spec(['any', 'any'], ([needle, hay]) => {
      if (hay === null || hay === undefined) return false;
      return listOf('find has', hay).some((e) => deepEqual(needle, e));
    }),
  ],
  [
    'uniq',
    spec(['any'], ([l]) => {
      const out: unknown[] = [];
      for (const e of listOf('find uniq', l)) if (!out.some((o) => deepEqual(o, e))) out.push(e);
      return out;
    }),
  ],
  ['without', spec(['any'], ([l, ...omit]) => listOf('find without', l).filter((e) => !omit.some((o) => deepEqual(o, e))), 'any')],
  ['compact', spec(['any'], ([l]) => listOf('compact', l).filter((e) => !isEmpty(e)))],
  [
    'slice',
    spec(
      ['any'],
      ([l, ...ix]) => {
        if (l === null || l === undefined) throw new FuncError('runtime error: invalid memory address or nil pointer dereference');
        if (!Array.isArray(l)) throw new FuncError(`list should be type of slice or array but ${goKindName(l)}`);
        if (l.length === 0) return null;
        const start = ix.length > 0 ? Number(toInt64(ix[0])) : 0;
        const end = ix.length > 1 ? Number(toInt64(ix[1])) : l.length;
        if (start < 0 || end > l.length || start > end) throw new FuncError(`reflect: slice index out of range`);
        return likeSlice(l, l.slice(start, end));
      },
      'any',
    ),
  ],
  // dicts
  [
    'dict',
    spec(
      [],
      (args) => {
        const d: GoMap = {};
        for (let i = 0; i < args.length; i += 2) setKey(d, strval(args[i]), i + 1 < args.length ? args[i + 1] : '');
        return d;
      },
      'any',
    ),
  ],
  [
    'get',
    spec(['map', 'string'], ([d, k]) => {
      const m = mapArg(d);
      return Object.prototype.hasOwnProperty.call(m, k as string) ? m[k as string] : '';
    }),
  ],
  [
    'set',
    spec(['map', 'string', 'any'], ([d, k, v]) => {
      if (!isPlainObject(d)) throw new FuncError('assignment to entry in nil map');
      setKey(d, k as string, v);
      return d;
    }),
  ],
  [
    'unset',
    spec(['map', 'string'], ([d, k]) => {
      if (isPlainObject(d)) delete d[k as string];
      return d ?? {};
    }),
  ],
  ['hasKey', spec(['map', 'string'], ([d, k]) => Object.prototype.hasOwnProperty.call(mapArg(d), k as string))],
  [
    'pluck',
    spec(
      ['string'],
      ([k, ...ds]) =>
        ds
          .map(mapArg)
          .filter((m) => Object.prototype.hasOwnProperty.call(m, k as string))
          .map((m) => m[k as string]),
      'map',
    ),
  ],
  // Go's map order is random; sorted keys keep output deterministic (templates sortAlpha them anyway).
  [
    'keys',
    spec(
      [],
      (ds) =>
        goTypedSlice(
          ds.flatMap((d) => Object.keys(mapArg(d)).sort()),
          'string',
        ),
      'map',
    ),
  ],
  [
    'values',
    spec(['map'], ([d]) =>
      Object.keys(mapArg(d))
        .sort()
        .map((k) => mapArg(d)[k]),
    ),
  ],
  [
    'pick',
    spec(
      ['map'],
      ([d, ...ks]) => {
        const m = mapArg(d);
        const out: GoMap = {};
        for (const k of ks as string[]) if (Object.prototype.hasOwnProperty.call(m, k)) setKey(out, k, m[k]);
        return out;
      },
      'string',
    ),
  ],
  [
    'omit',
    spec(
      ['map'],
      ([d, ...ks]) => {
        const m = mapArg(d);
        const out: GoMap = {};
        for (const k of Object.keys(m)) if (!(ks as string[]).includes(k)) setKey(out, k, m[k]);
        return out;
      },
      'string',
    ),
  ],
  [
    'merge',
    spec(
      ['map'],
      ([d, ...srcs]) => {
        const dst = isPlainObject(d) ? d : {};
        for (const s of srcs) mergeInto(dst, mapArg(s), false);
        return dst;
      },
      'map',
    ),
  ],
  [
    'mergeOverwrite',
    spec(
      ['map'],
      ([d, ...srcs]) => {
        const dst = isPlainObject(d) ? d : {};
        for (const s of srcs) mergeInto(dst, mapArg(s), true);
        return dst;
      },
      'map',
    ),
  ],
  [
    'dig',
    spec(
      ['any'],
      (args) => {
        const dictArg = args[args.length - 1];
        const def = args[args.length - 2];
        const path = args.slice(0, -2).map((p) => strval(p));
        let cur: unknown = dictArg;
        for (const p of path) {
          if (!isPlainObject(cur) || !Object.prototype.hasOwnProperty.call(cur, p)) return def;
          cur = cur[p];
        }
        return cur;
      },
      'any',
    ),
  ],
  // Helm
  [
    'required',
    spec(['string', 'any'], ([warn, v]) => {
      if (v === null || v === undefined || v === '') throw new FuncError(warn as string, true);
      return v;
    }),
  ],
  [
    'fail',
    spec(['string'], ([msg]) => {
      throw new FuncError(msg as string, true);
    }),
  ],
  ['include', spec(['string', 'any'], ([name, data], ctx) => ctx.executeTemplate(name as string, data))],
  ['tpl', spec(['string', 'any'], ([text, data], ctx) => ctx.executeText(text as string, data))],
];

const CORE: ReadonlyMap<string, FuncSpec> = new Map<string, FuncSpec>([...SPRIG_STRINGS, ...SPRIG_CORE]);

/** The Sprig subset plus Helm's functions, keyed by name. */
export const SPRIG: ReadonlyMap<string, FuncSpec> = new Map<string, FuncSpec>([...CORE, ...extraFuncs(CORE)]);

export { strslice };
