/**
 * The Go value model of the engine. Data is JSON-like and maps onto what Go's text/template sees
 * when it executes over decoded JSON/YAML:
 *   undefined  → an invalid reflect.Value (a missing map key: prints "<no value>")
 *   null       → nil (interface{} holding nothing)
 *   string     → string
 *   number     → float64 (what encoding/json and sigs.k8s.io/yaml decode every number to)
 *   bigint     → int (template integer literals, len, and the int64 results of Sprig arithmetic)
 *   boolean    → bool
 *   Array      → []interface{}
 *   plain object → map[string]interface{}
 *   function   → a func (callable with `call`); a function-valued property is a method
 *   other objects (class instances) → a struct: fields are its properties, methods its prototype's
 * Keeping float64 and int apart is what makes `1e+06`, `eq 1 1.0` (an error in Go) and `%d` of a
 * float (`%!d(float64=1)`) come out as Go prints them.
 */

export type GoKind = 'invalid' | 'nil' | 'string' | 'float64' | 'int' | 'int64' | 'bool' | 'slice' | 'map' | 'func' | 'struct';

/**
 * A Go int64 (what Sprig's arithmetic returns and Helm's --set parses integers to), as distinct
 * from int (a bigint): Go prints them alike but names them apart (`kindOf`, "got int64"), and an
 * int64 is not accepted where a function wants an int (`until (add 1 2)` fails in Go too).
 */
export class Int64 {
  constructor(readonly value: bigint) {}
}

/** The integer value of an int or int64, else null. */
export function intValue(v: unknown): bigint | null {
  if (typeof v === 'bigint') return v;
  return v instanceof Int64 ? v.value : null;
}

export type GoMap = Record<string, unknown>;

export function isPlainObject(v: unknown): v is GoMap {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v) as unknown;
  return proto === Object.prototype || proto === null;
}

const STRING_ELEMS = Symbol.for('meshpilot.template.stringMap');

/**
 * Marks a plain object as a Go map[string]string (Kubernetes labels, annotations): a missing key
 * then reads as "" where Go yields the element's zero value (`index`, missingkey=zero), `%T` says
 * map[string]string, and Sprig's map[string]interface{} parameters refuse it as Go does.
 */
export function goStringMap<T extends Record<string, string>>(m: T): T {
  Object.defineProperty(m, STRING_ELEMS, { value: true, enumerable: false });
  return m;
}

const SLICE_ELEM = Symbol.for('meshpilot.template.sliceElem');

/** Marks an array as a Go []string or []int (what some Sprig functions return; only %T and typeOf differ). */
export function goTypedSlice<T extends unknown[]>(a: T, elem: 'string' | 'int'): T {
  Object.defineProperty(a, SLICE_ELEM, { value: elem, enumerable: false });
  return a;
}

export function sliceElem(v: unknown): string {
  const e = Array.isArray(v) ? (v as unknown as Record<symbol, unknown>)[SLICE_ELEM] : undefined;
  return typeof e === 'string' ? e : 'interface {}';
}

export function isStringMap(v: unknown): boolean {
  return typeof v === 'object' && v !== null && (v as Record<symbol, unknown>)[STRING_ELEMS] === true;
}

/** The zero value Go yields for a missing key of this map: "" for map[string]string, else nil. */
export function mapZero(m: object): unknown {
  return isStringMap(m) ? '' : null;
}

export function kindOf(v: unknown): GoKind {
  if (v === undefined) return 'invalid';
  if (v === null) return 'nil';
  switch (typeof v) {
    case 'string':
      return 'string';
    case 'number':
      return 'float64';
    case 'bigint':
      return 'int';
    case 'boolean':
      return 'bool';
    case 'function':
      return 'func';
    default:
      if (Array.isArray(v)) return 'slice';
      if (v instanceof Int64) return 'int64';
      return isPlainObject(v) ? 'map' : 'struct';
  }
}

/** Go's %T: the dynamic type's name. */
export function goTypeName(v: unknown): string {
  switch (kindOf(v)) {
    case 'invalid':
    case 'nil':
      return '<nil>';
    case 'slice':
      return `[]${sliceElem(v)}`;
    case 'map':
      return isStringMap(v) ? 'map[string]string' : 'map[string]interface {}';
    case 'func':
      return 'func(...interface {}) interface {}';
    case 'struct':
      return (v as object).constructor?.name ?? 'struct';
    default:
      return kindOf(v);
  }
}

/** Go's template truth (isTrue): empty values are false; structs and funcs are true. */
export function isTrue(v: unknown): boolean {
  switch (kindOf(v)) {
    case 'invalid':
    case 'nil':
      return false;
    case 'string':
      return (v as string).length > 0;
    case 'float64':
      return (v as number) !== 0;
    case 'int':
      return (v as bigint) !== 0n;
    case 'int64':
      return (v as Int64).value !== 0n;
    case 'bool':
      return v as boolean;
    case 'slice':
      return (v as unknown[]).length > 0;
    case 'map':
      return Object.keys(v as GoMap).length > 0;
    default:
      return true;
  }
}

/** Keys of a map or the fields of a struct, in Go's sorted order (strings compare by code point). */
export function sortedKeys(m: object): string[] {
  return Object.keys(m).sort(compareStrings);
}

/** Byte-wise UTF-8 order, which is code point order. */
export function compareStrings(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.codePointAt(i) ?? 0;
    const y = b.codePointAt(i) ?? 0;
    if (x !== y) return x < y ? -1 : 1;
    if (x > 0xffff) i++;
  }
  return a.length < b.length ? -1 : a.length > b.length ? 1 : 0;
}

/** Go's reflect.Value.Len for strings (bytes), slices and maps; null for other kinds. */
export function goLen(v: unknown): number | null {
  switch (kindOf(v)) {
    case 'string':
      return Buffer.byteLength(v as string, 'utf8');
    case 'slice':
      return (v as unknown[]).length;
    case 'map':
      return Object.keys(v as GoMap).length;
    default:
      return null;
  }
}

/** Field lookup: own properties of a map/struct; functions on a struct's prototype are methods. */
export function lookupField(obj: object, name: string): { found: boolean; value: unknown; isMethod: boolean } {
  if (Object.prototype.hasOwnProperty.call(obj, name)) {
    const value = (obj as GoMap)[name];
    return { found: true, value, isMethod: typeof value === 'function' };
  }
  if (!isPlainObject(obj) && !Array.isArray(obj)) {
    const value = (obj as GoMap)[name];
    if (typeof value === 'function' && !(name in Object.prototype)) return { found: true, value, isMethod: true };
  }
  return { found: false, value: undefined, isMethod: false };
}

/**
 * Sets a map entry as an own property even for the key "__proto__" (data keys must never reach
 * an object's prototype).
 */
export function setKey(m: GoMap, k: string, v: unknown): void {
  if (k === '__proto__') Object.defineProperty(m, k, { value: v, enumerable: true, writable: true, configurable: true });
  else m[k] = v;
}

/** Deep copy of JSON-like data (maps and slices copied, scalars shared). */
export function deepCopy(v: unknown): unknown {
  if (Array.isArray(v)) {
    const copy = v.map(deepCopy);
    const elem = sliceElem(v);
    return elem === 'string' || elem === 'int' ? goTypedSlice(copy, elem) : copy;
  }
  if (isPlainObject(v)) {
    const out: GoMap = {};
    for (const k of Object.keys(v)) setKey(out, k, deepCopy(v[k]));
    return isStringMap(v) ? goStringMap(out as Record<string, string>) : out;
  }
  return v;
}

/** YAML decoded through JSON, as sigs.k8s.io/yaml does: every number a float64. */
export function jsonNumbers(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(jsonNumbers);
  if (isPlainObject(v)) {
    const out: GoMap = {};
    for (const k of Object.keys(v)) setKey(out, k, jsonNumbers(v[k]));
    return out;
  }
  if (typeof v === 'bigint') return Number(v);
  if (v instanceof Date) return v.toISOString().replace('.000Z', 'Z');
  return v;
}
