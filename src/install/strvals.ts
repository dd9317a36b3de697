/**
 * Helm's `--set` syntax (helm.sh/helm/v4/pkg/strvals ParseInto), so `meshctl manifest generate
 * --set …` and `helm template --set …` build the same values: `a.b=c,d[0].e=f`, `a={x,y}`, `\`
 * escapes the next character, and a value is typed as strvals' typedVal does (true/false/null any
 * case, "0" and decimal integers without a leading zero → int64, everything else a string).
 */
import { Int64 } from '../template/index.js';
import { MeshError } from '../util/errors.js';

const MAX_INDEX = 65536;
const MAX_NESTED_NAME_LEVEL = 30;

type GoMap = Record<string, unknown>;

/** Control flow of the parser (never escapes it). */
class EndOfInput extends MeshError {
  constructor() {
    super('INVALID_ARGUMENT', 'end of input');
  }
}
class NotAList extends MeshError {
  constructor() {
    super('INVALID_ARGUMENT', 'not a list');
  }
}

/** A rune reader over the expression (Go's strings.Reader). */
class Reader {
  #pos = 0;
  constructor(private readonly runes: readonly string[]) {}
  read(): string | undefined {
    return this.runes[this.#pos++];
  }
  unread(): void {
    this.#pos--;
  }
}

function runesUntil(r: Reader, stop: string): { value: string; last: string | undefined } {
  let value = '';
  for (;;) {
    const c = r.read();
    if (c === undefined) return { value, last: undefined };
    if (stop.includes(c)) return { value, last: c };
    if (c === '\\') {
      const next = r.read();
      if (next === undefined) return { value, last: undefined };
      value += next;
    } else value += c;
  }
}

export function typedVal(val: string): unknown {
  const lower = val.toLowerCase();
  if (lower === 'true') return true;
  if (lower === 'false') return false;
  if (lower === 'null') return null;
  if (val === '0') return new Int64(0n);
  if (val !== '' && val[0] !== '0' && /^[+-]?\d+$/.test(val)) {
    const n = BigInt(val);
    if (n >= -(2n ** 63n) && n < 2n ** 63n) return new Int64(n);
  }
  return val;
}

function setKey(data: GoMap, key: string, val: unknown): void {
  if (key !== '') data[key] = val;
}

function setIndex(list: unknown[], index: number, val: unknown): unknown[] {
  if (index < 0) throw new MeshError('INVALID_ARGUMENT', `negative ${index} index not allowed`);
  if (index > MAX_INDEX)
    throw new MeshError('INVALID_ARGUMENT', `index of ${index} is greater than maximum supported index of ${MAX_INDEX}`);
  const out = list.length <= index ? [...list, ...new Array<unknown>(index + 1 - list.length).fill(null)] : list;
  out[index] = val;
  return out;
}

/** Go asserts the type of what a key already holds (`data[k].(map[string]any)`) and fails on a mismatch. */
function existingMap(v: unknown): GoMap {
  if (v === undefined) return {};
  if (typeof v === 'object' && v !== null && !Array.isArray(v)) return v as GoMap;
  throw new MeshError(
    'INVALID_ARGUMENT',
    `unable to parse key: interface conversion: interface {} is ${Array.isArray(v) ? '[]interface {}' : 'not a map'}, not map[string]interface {}`,
  );
}

function existingList(v: unknown): unknown[] {
  if (v === undefined || v === null) return [];
  if (Array.isArray(v)) return v;
  throw new MeshError('INVALID_ARGUMENT', 'unable to parse key: interface conversion: interface {} is not []interface {}');
}

class Parser {
  constructor(private readonly r: Reader) {}

  parse(data: GoMap): void {
    for (;;) {
      try {
        this.key(data, 0);
      } catch (err) {
        if (err instanceof EndOfInput) return;
        throw err;
      }
    }
  }

  private key(data: GoMap, level: number): void {
    for (;;) {
      const { value: k, last } = runesUntil(this.r, '=[,.');
      if (last === undefined) {
        if (k.length === 0) throw new EndOfInput();
        throw new MeshError('INVALID_ARGUMENT', `key "${k}" has no value`);
      }
      if (last === '[') {
        const i = this.keyIndex();
        const done = this.listItem(existingList(data[k]), i, level);
        setKey(data, k, done.list);
        if (done.end) throw new EndOfInput();
        return;
      }
      if (last === '=') {
        this.assign(data, k);
        return;
      }
      if (last === ',') {
        setKey(data, k, '');
        throw new MeshError('INVALID_ARGUMENT', `key "${k}" has no value (cannot end with ,)`);
      }
      // '.'
      if (level + 1 > MAX_NESTED_NAME_LEVEL)
        throw new MeshError(
          'INVALID_ARGUMENT',
          `value name nested level is greater than maximum supported nested level of ${MAX_NESTED_NAME_LEVEL}`,
        );
      const inner = existingMap(data[k]);
      let end = false;
      try {
        this.key(inner, level + 1);
      } catch (err) {
        if (!(err instanceof EndOfInput)) throw err;
        end = true;
      }
      if (!end && Object.keys(inner).length === 0) throw new MeshError('INVALID_ARGUMENT', `key map "${k}" has no value`);
      if (Object.keys(inner).length > 0) setKey(data, k, inner);
      if (end) throw new EndOfInput();
      return;
    }
  }

  /** After `key=`: a `{a,b}` list or a scalar up to the next comma. */
  private assign(data: GoMap, k: string): void {
    const list = this.valList();
    if (list === undefined) {
      setKey(data, k, '');
      throw new EndOfInput();
    }
    if (list !== NOT_A_LIST) {
      setKey(data, k, list);
      return;
    }
    // The end of input after a scalar is found by the next key (Go's reader drops val()'s EOF).
    setKey(data, k, typedVal(runesUntil(this.r, ',').value));
  }

  private keyIndex(): number {
    const { value } = runesUntil(this.r, ']');
    if (!/^[+-]?\d+$/.test(value))
      throw new MeshError('INVALID_ARGUMENT', `error parsing index: strconv.Atoi: parsing "${value}": invalid syntax`);
    return Number(value);
  }

  private listItem(list: unknown[], i: number, level: number): { list: unknown[]; end: boolean } {
    if (i < 0) throw new MeshError('INVALID_ARGUMENT', `negative ${i} index not allowed`);
    const { value: k, last } = runesUntil(this.r, '[.=');
    if (k.length > 0) throw new MeshError('INVALID_ARGUMENT', `unexpected data at end of array index: "${k}"`);
    if (last === undefined) return { list, end: true };
    if (last === '=') {
      const vl = this.valList();
      if (vl === undefined) return { list: setIndex(list, i, ''), end: true };
      if (vl !== NOT_A_LIST) return { list: setIndex(list, i, vl), end: false };
      return { list: setIndex(list, i, typedVal(runesUntil(this.r, ',').value)), end: false };
    }
    if (last === '[') {
      const next = this.keyIndex();
      const done = this.listItem(existingList(list[i] ?? undefined), next, level);
      return { list: setIndex(list, i, done.list), end: done.end };
    }
    const existing = list[i];
    const inner: GoMap = typeof existing === 'object' && existing !== null && !Array.isArray(existing) ? (existing as GoMap) : {};
    let end = false;
    try {
      this.key(inner, level);
    } catch (err) {
      if (!(err instanceof EndOfInput)) throw err;
      end = true;
    }
    return { list: setIndex(list, i, inner), end };
  }

  /** undefined at end of input, NOT_A_LIST when the value does not start with '{'. */
  private valList(): unknown[] | typeof NOT_A_LIST | undefined {
    const c = this.r.read();
    if (c === undefined) return undefined;
    if (c !== '{') {
      this.r.unread();
      return NOT_A_LIST;
    }
    const list: unknown[] = [];
    for (;;) {
      const { value, last } = runesUntil(this.r, ',}');
      if (last === undefined) throw new MeshError('INVALID_ARGUMENT', "list must terminate with '}'");
      list.push(typedVal(value));
      if (last === '}') {
        const after = this.r.read();
        if (after !== undefined && after !== ',') this.r.unread();
        return list;
      }
    }
  }
}

const NOT_A_LIST = new NotAList();

/** Parses one `--set` argument into `into` (merging, as Helm applies several --set in order). */
export function parseSetInto(expr: string, into: GoMap): void {
  try {
    new Parser(new Reader([...expr])).parse(into);
  } catch (err) {
    throw new MeshError('INVALID_ARGUMENT', `failed parsing --set data: ${(err as Error).message}`, { cause: err });
  }
}

/** The top-level key a `--set` expression assigns (what it is routed by), unescaped. */
export function setTopKey(expr: string): string {
  return runesUntil(new Reader([...expr]), '=[,.').value;
}
