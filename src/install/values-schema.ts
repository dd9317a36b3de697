/**
 * JSON Schema validation of a chart's coalesced values, as Helm does with values.schema.json
 * before rendering. The keywords the charts use: type (one or a list), properties,
 * additionalProperties (false or a schema), items, enum, required, minimum/maximum, $ref to
 * `#/$defs/<name>`, anyOf. Values are checked as Helm checks them — after a round trip through
 * JSON, so an integral float64 counts as an integer. Errors name the value by its dotted key.
 */
import { intValue } from '../template/index.js';
import { isMap, type GoMap } from './values.js';
import { MeshError } from '../util/errors.js';

export interface SchemaViolation {
  /** Dotted path of the value (`pilot.replicaCount`, `service.ports[0].port`); '' is the root. */
  readonly key: string;
  readonly message: string;
}

type Schema = GoMap;

function jsonType(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'boolean') return 'boolean';
  if (typeof v === 'string') return 'string';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  if (intValue(v) !== null) return 'integer';
  if (Array.isArray(v)) return 'array';
  if (isMap(v)) return 'object';
  return 'unknown';
}

function numeric(v: unknown): number | undefined {
  if (typeof v === 'number') return v;
  const i = intValue(v);
  return i === null ? undefined : Number(i);
}

function typeMatches(actual: string, wanted: unknown): boolean {
  const list = Array.isArray(wanted) ? wanted : [wanted];
  return list.some((t) => t === actual || (t === 'number' && actual === 'integer'));
}

function child(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}

function plain(v: unknown): unknown {
  const i = intValue(v);
  return i === null ? v : Number(i);
}

export class SchemaValidator {
  readonly #root: Schema;
  constructor(root: unknown) {
    if (!isMap(root)) throw new MeshError('INVALID_ARGUMENT', 'values.schema.json: not an object');
    this.#root = root;
  }

  validate(values: unknown): SchemaViolation[] {
    const out: SchemaViolation[] = [];
    this.#check(this.#root, values, '', out);
    return out;
  }

  #resolve(s: Schema): Schema {
    const ref = s.$ref;
    if (typeof ref !== 'string') return s;
    const m = /^#\/\$defs\/(.+)$/.exec(ref);
    const defs = this.#root.$defs;
    const target = m && isMap(defs) ? defs[m[1] ?? ''] : undefined;
    if (!isMap(target)) throw new MeshError('INVALID_ARGUMENT', `values.schema.json: unresolvable $ref ${ref}`);
    return this.#resolve(target);
  }

  #check(schemaIn: Schema, v: unknown, path: string, out: SchemaViolation[]): void {
    const s = this.#resolve(schemaIn);
    const actual = jsonType(v);
    if (s.type !== undefined && !typeMatches(actual, s.type)) {
      out.push({ key: path, message: `got ${actual}, want ${Array.isArray(s.type) ? s.type.join(' or ') : String(s.type)}` });
      return;
    }
    if (Array.isArray(s.enum) && !s.enum.some((e) => e === plain(v))) {
      out.push({
        key: path,
        message: `value ${JSON.stringify(plain(v))} is not one of ${s.enum.map((e) => JSON.stringify(e)).join(', ')}`,
      });
    }
    const n = numeric(v);
    if (n !== undefined && typeof s.minimum === 'number' && n < s.minimum)
      out.push({ key: path, message: `minimum: got ${n}, want ${s.minimum}` });
    if (n !== undefined && typeof s.maximum === 'number' && n > s.maximum)
      out.push({ key: path, message: `maximum: got ${n}, want ${s.maximum}` });
    if (Array.isArray(s.anyOf)) {
      const ok = s.anyOf.some((alt) => isMap(alt) && this.#quiet(alt, v, path));
      if (!ok) out.push({ key: path, message: 'does not match any of the allowed forms (anyOf)' });
    }
    if (isMap(v)) this.#checkObject(s, v, path, out);
    if (Array.isArray(v) && isMap(s.items)) v.forEach((item, i) => this.#check(s.items as Schema, item, `${path}[${i}]`, out));
  }

  #checkObject(s: Schema, v: GoMap, path: string, out: SchemaViolation[]): void {
    const props = isMap(s.properties) ? s.properties : {};
    if (Array.isArray(s.required)) {
      for (const r of s.required)
        if (typeof r === 'string' && !Object.hasOwn(v, r)) out.push({ key: child(path, r), message: 'missing required property' });
    }
    for (const [k, val] of Object.entries(v)) {
      const ps = props[k];
      if (isMap(ps)) this.#check(ps, val, child(path, k), out);
      else if (s.additionalProperties === false)
        out.push({ key: child(path, k), message: 'unknown key (additional properties are not allowed here)' });
      else if (isMap(s.additionalProperties)) this.#check(s.additionalProperties, val, child(path, k), out);
    }
  }

  #quiet(s: Schema, v: unknown, path: string): boolean {
    const errs: SchemaViolation[] = [];
    this.#check(s, v, path, errs);
    return errs.length === 0;
  }
}
