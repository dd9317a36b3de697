/**
 * The rest of what charts commonly call: Sprig's must* variants (the same functions; their errors
 * name the must* function as Go's do), path and regex helpers, and Helm's extra functions
 * (fromYamlArray, fromJsonArray, mustToYaml, mustToJson, and lookup, which without a cluster
 * connection answers an empty map as `helm template` does).
 */
import { spec, type FuncSpec } from './funcs.js';
import { marshalJson, unmarshalJson } from './gojson.js';
import { marshalYaml } from './goyaml.js';
import { compileRe } from './sprig-strings.js';
import { decodeYamlLikeGo } from './goyaml-decode.js';
import { goTypedSlice } from './values.js';
import { jsonKind } from './sprig.js';

/** Go's path.Clean. */
export function cleanPath(p: string): string {
  if (p === '') return '.';
  const rooted = p.startsWith('/');
  const out: string[] = [];
  for (const part of p.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (out.length > 0 && out[out.length - 1] !== '..') out.pop();
      else if (!rooted) out.push('..');
      continue;
    }
    out.push(part);
  }
  const joined = out.join('/');
  if (rooted) return '/' + joined;
  return joined === '' ? '.' : joined;
}

function basePath(p: string): string {
  if (p === '') return '.';
  const trimmed = p.replace(/\/+$/, '');
  if (trimmed === '') return '/';
  return trimmed.slice(trimmed.lastIndexOf('/') + 1);
}

function dirPath(p: string): string {
  return cleanPath(p.slice(0, p.lastIndexOf('/') + 1));
}

function extPath(p: string): string {
  for (let i = p.length - 1; i >= 0 && p[i] !== '/'; i--) if (p[i] === '.') return p.slice(i);
  return '';
}

/** Regexp.FindAllStringIndex(s, n) with Go's rule against an empty match right after a match. */
function findAllIndex(expr: string, s: string, n: number, must: boolean): Array<[number, number]> {
  const m = compileRe(expr, must).matcher(s);
  const out: Array<[number, number]> = [];
  let prevEnd = -1;
  let pos = 0;
  while ((n < 0 || out.length < n) && pos <= s.length && m.find(pos)) {
    const start = m.start();
    const end = m.end();
    let accept = true;
    if (end === pos && start === end) {
      if (start === prevEnd) accept = false;
      pos += (s.codePointAt(pos) ?? 0) > 0xffff ? 2 : 1;
    } else {
      pos = end;
    }
    prevEnd = end;
    if (accept) out.push([start, end]);
  }
  return out;
}

/** Regexp.Split(s, n). */
function regexSplit(expr: string, s: string, n: number): string[] {
  if (n === 0) return [];
  if (expr.length > 0 && s.length === 0) return [''];
  const out: string[] = [];
  let beg = 0;
  let end = 0;
  for (const [a, b] of findAllIndex(expr, s, n, false)) {
    if (n > 0 && out.length === n - 1) break;
    end = a;
    if (b !== 0) out.push(s.slice(beg, end));
    beg = b;
  }
  if (end !== s.length) out.push(s.slice(beg));
  return out;
}

function yamlArray(text: string): unknown[] {
  try {
    const v = decodeYamlLikeGo(text);
    if (v === null) return [];
    if (!Array.isArray(v))
      return [`error unmarshaling JSON: while decoding JSON: json: cannot unmarshal ${jsonKind(v)} into Go value of type []interface {}`];
    return v;
  } catch (e) {
    return [e instanceof Error ? e.message : String(e)];
  }
}

/** must* names that are the same function as their plain Sprig counterpart. */
const MUST_ALIASES: ReadonlyArray<[string, string]> = [
  ['mustMerge', 'merge'],
  ['mustMergeOverwrite', 'mergeOverwrite'],
  ['mustDeepCopy', 'deepCopy'],
  ['mustAppend', 'append'],
  ['mustPush', 'push'],
  ['mustPrepend', 'prepend'],
  ['mustFirst', 'first'],
  ['mustLast', 'last'],
  ['mustRest', 'rest'],
  ['mustInitial', 'initial'],
  ['mustReverse', 'reverse'],
  ['mustUniq', 'uniq'],
  ['mustWithout', 'without'],
  ['mustHas', 'has'],
  ['mustSlice', 'slice'],
  ['mustCompact', 'compact'],
  ['mustToPrettyJson', 'toPrettyJson'],
  ['mustToRawJson', 'toRawJson'],
];

export function extraFuncs(base: ReadonlyMap<string, FuncSpec>): Array<[string, FuncSpec]> {
  const out: Array<[string, FuncSpec]> = [];
  for (const [alias, name] of MUST_ALIASES) {
    const f = base.get(name);
    if (f !== undefined) out.push([alias, f]);
  }
  out.push(
    ['mustToJson', spec(['any'], ([v]) => marshalJson(v))],
    ['mustFromJson', spec(['string'], ([s]) => unmarshalJson(s as string))],
    ['mustToYaml', spec(['any'], ([v]) => marshalYaml(v).replace(/\n$/, ''))],
    [
      'fromJsonArray',
      spec(['string'], ([s]) => {
        try {
          const v = unmarshalJson(s as string);
          return Array.isArray(v)
            ? v
            : [
                `json: cannot unmarshal ${v === null ? 'null' : typeof v === 'object' ? 'object' : typeof v} into Go value of type []interface {}`,
              ];
        } catch (e) {
          return [e instanceof Error ? e.message : String(e)];
        }
      }),
    ],
    ['fromYamlArray', spec(['string'], ([s]) => yamlArray(s as string))],
    ['lookup', spec(['string', 'string', 'string', 'string'], () => ({}))],
    ['base', spec(['string'], ([p]) => basePath(p as string))],
    ['dir', spec(['string'], ([p]) => dirPath(p as string))],
    ['ext', spec(['string'], ([p]) => extPath(p as string))],
    ['clean', spec(['string'], ([p]) => cleanPath(p as string))],
    ['isAbs', spec(['string'], ([p]) => (p as string).startsWith('/'))],
    ['nospace', spec(['string'], ([s]) => (s as string).replace(/\s/gu, ''))],
    [
      'regexFind',
      spec(['string', 'string'], ([re, s]) => {
        const [m] = findAllIndex(re as string, s as string, 1, false);
        return m === undefined ? '' : (s as string).slice(m[0], m[1]);
      }),
    ],
    [
      'regexFindAll',
      spec(['string', 'string', 'int'], ([re, s, n]) =>
        goTypedSlice(
          findAllIndex(re as string, s as string, Number(n), false).map(([a, b]) => (s as string).slice(a, b)),
          'string',
        ),
      ),
    ],
    [
      'regexSplit',
      spec(['string', 'string', 'int'], ([re, s, n]) => goTypedSlice(regexSplit(re as string, s as string, Number(n)), 'string')),
    ],
  );
  return out;
}
