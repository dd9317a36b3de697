/**
 * Validates a JSON value against a Kubernetes structural schema (the OpenAPI v3 subset CRDs use):
 * type, properties, required, additionalProperties, items, enum, pattern, min/maxLength,
 * min/maxItems, min/maxProperties, minimum/maximum, oneOf/anyOf/not (as required-field
 * alternatives), and list uniqueness from `x-kubernetes-list-type` set/map. CEL rules
 * (`x-kubernetes-validations`) are not evaluated: the API server does that on a cluster; in
 * directory mode the translation rejects what it cannot use. Unknown fields are errors, as with
 * Istio kinds (the API server would prune them silently — a typo should not vanish).
 */
import { field, index, key, Issues } from '../validation/issues.js';

export interface StructuralSchema {
  readonly type?: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';
  readonly properties?: Readonly<Record<string, StructuralSchema>>;
  readonly required?: readonly string[];
  readonly additionalProperties?: StructuralSchema | boolean;
  readonly items?: StructuralSchema;
  readonly enum?: readonly unknown[];
  readonly pattern?: string;
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly minItems?: number;
  readonly maxItems?: number;
  readonly minProperties?: number;
  readonly maxProperties?: number;
  readonly minimum?: number;
  readonly maximum?: number;
  readonly format?: string;
  readonly oneOf?: readonly StructuralSchema[];
  readonly anyOf?: readonly StructuralSchema[];
  readonly not?: StructuralSchema;
  readonly 'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  readonly 'x-kubernetes-list-map-keys'?: readonly string[];
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'an object';
  return `${typeof v} ${JSON.stringify(v)}`;
}

/** CRD patterns are Go RE2; the ones Gateway API uses are valid JavaScript too. Compiled once each. */
const patterns = new Map<string, RegExp | null>();
function compiled(pattern: string): RegExp | null {
  let re = patterns.get(pattern);
  if (re === undefined) {
    try {
      re = new RegExp(pattern, 'u');
    } catch {
      re = null; // an RE2-only construct: not checked here, the API server checks it on a cluster
    }
    patterns.set(pattern, re);
  }
  return re;
}

/** Reports every problem of `value` under `path`. */
export function validateStructural(schema: StructuralSchema, value: unknown, path: string, issues: Issues): void {
  if (value === null || value === undefined) return; // null means unset, as the API server reads it
  if (!checkType(schema, value, path, issues)) return;
  if (schema.enum && !schema.enum.includes(value)) {
    issues.add(path, `unsupported value ${JSON.stringify(value)}: must be one of ${schema.enum.map((e) => JSON.stringify(e)).join(', ')}`);
  }
  if (typeof value === 'string') checkString(schema, value, path, issues);
  else if (typeof value === 'number') checkNumber(schema, value, path, issues);
  else if (Array.isArray(value)) checkArray(schema, value, path, issues);
  else if (isRecord(value)) checkObject(schema, value, path, issues);
  checkAlternatives(schema, value, path, issues);
}

function checkType(schema: StructuralSchema, value: unknown, path: string, issues: Issues): boolean {
  const t = schema.type;
  if (t === undefined) return true;
  const ok =
    (t === 'object' && isRecord(value)) ||
    (t === 'array' && Array.isArray(value)) ||
    (t === 'string' && typeof value === 'string') ||
    (t === 'boolean' && typeof value === 'boolean') ||
    (t === 'number' && typeof value === 'number') ||
    (t === 'integer' && typeof value === 'number' && Number.isInteger(value));
  if (!ok)
    issues.add(
      path,
      `expected ${t === 'integer' || t === 'array' || t === 'object' ? `an ${t === 'array' ? 'list' : t}` : `a ${t}`}, got ${describe(value)}`,
    );
  return ok;
}

function checkString(schema: StructuralSchema, value: string, path: string, issues: Issues): void {
  const len = [...value].length;
  if (schema.minLength !== undefined && len < schema.minLength)
    issues.add(path, `must be at least ${schema.minLength} characters, got ${len}`);
  if (schema.maxLength !== undefined && len > schema.maxLength)
    issues.add(path, `must be at most ${schema.maxLength} characters, got ${len}`);
  const re = schema.pattern !== undefined ? compiled(schema.pattern) : null;
  if (re && !re.test(value)) issues.add(path, `${JSON.stringify(value)} does not match the pattern ${schema.pattern}`);
}

function checkNumber(schema: StructuralSchema, value: number, path: string, issues: Issues): void {
  if (schema.minimum !== undefined && value < schema.minimum) issues.add(path, `must be at least ${schema.minimum}, got ${value}`);
  if (schema.maximum !== undefined && value > schema.maximum) issues.add(path, `must be at most ${schema.maximum}, got ${value}`);
}

function checkArray(schema: StructuralSchema, value: readonly unknown[], path: string, issues: Issues): void {
  if (schema.minItems !== undefined && value.length < schema.minItems)
    issues.add(path, `must have at least ${schema.minItems} items, got ${value.length}`);
  if (schema.maxItems !== undefined && value.length > schema.maxItems)
    issues.add(path, `must have at most ${schema.maxItems} items, got ${value.length}`);
  const items = schema.items;
  if (items) value.forEach((v, i) => validateStructural(items, v, index(path, i), issues));
  const listType = schema['x-kubernetes-list-type'];
  if (listType === 'set' || listType === 'map') {
    const keys = schema['x-kubernetes-list-map-keys'];
    const seen = new Map<string, number>();
    value.forEach((v, i) => {
      const id = listType === 'map' && keys && isRecord(v) ? JSON.stringify(keys.map((k) => v[k] ?? null)) : JSON.stringify(v);
      const first = seen.get(id);
      if (first !== undefined)
        issues.add(
          index(path, i),
          `duplicate entry (same ${listType === 'map' && keys ? keys.join('/') : 'value'} as ${index(path, first)})`,
        );
      else seen.set(id, i);
    });
  }
}

function checkObject(schema: StructuralSchema, value: Readonly<Record<string, unknown>>, path: string, issues: Issues): void {
  for (const r of schema.required ?? []) {
    if (value[r] === undefined || value[r] === null) issues.add(field(path, r), `${r} is required`);
  }
  const n = Object.keys(value).length;
  if (schema.minProperties !== undefined && n < schema.minProperties)
    issues.add(path, `must have at least ${schema.minProperties} fields, got ${n}`);
  if (schema.maxProperties !== undefined && n > schema.maxProperties)
    issues.add(path, `must have at most ${schema.maxProperties} fields, got ${n}`);
  const props = schema.properties;
  const extra = schema.additionalProperties;
  for (const [k, v] of Object.entries(value)) {
    const sub = props?.[k];
    if (sub) validateStructural(sub, v, field(path, k), issues);
    else if (isRecord(extra)) validateStructural(extra, v, key(path, k), issues);
    else if (props !== undefined && extra !== true) {
      issues.add(field(path, k), `unknown field "${k}" (known: ${Object.keys(props).join(', ')})`);
    }
  }
}

/**
 * Structural schemas use oneOf/anyOf/not only to say which fields go together (the types are
 * declared once, outside them), so an alternative matches when it reports nothing on the value.
 */
function checkAlternatives(schema: StructuralSchema, value: unknown, path: string, issues: Issues): void {
  const matches = (alt: StructuralSchema): boolean => {
    const probe = new Issues();
    // An alternative lists only the fields it constrains: the others are not unknown to it.
    validateStructural(
      alt.properties !== undefined && alt.additionalProperties === undefined ? { ...alt, additionalProperties: true } : alt,
      value,
      path,
      probe,
    );
    return probe.count === 0;
  };
  if (schema.oneOf) {
    const n = schema.oneOf.filter(matches).length;
    if (n !== 1)
      issues.add(
        path,
        n === 0
          ? `must match exactly one of: ${schema.oneOf.map(summary).join('; ')}`
          : `matches more than one of: ${schema.oneOf.map(summary).join('; ')}`,
      );
  }
  if (schema.anyOf && !schema.anyOf.some(matches)) issues.add(path, `must match at least one of: ${schema.anyOf.map(summary).join('; ')}`);
  if (schema.not && matches(schema.not)) issues.add(path, `must not match: ${summary(schema.not)}`);
}

function summary(s: StructuralSchema): string {
  if (s.required) return `fields ${s.required.join(', ')} set`;
  return JSON.stringify(s);
}
