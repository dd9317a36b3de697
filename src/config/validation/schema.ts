/**
 * Decodes a spec through protobuf-es (proto3 JSON, which is what Istio YAML is) and, when that
 * fails, walks the JSON beside the message descriptor to say which field is wrong and why.
 * protobuf-es stops at the first problem and names it by proto type; users need every problem,
 * each with the path they wrote (`spec.http[0].route[1].weight`).
 */
import { fromJson, type DescField, type DescMessage, type JsonValue } from '@bufbuild/protobuf';
import { normalizeDurations } from './durations.js';
import { field as fieldPath, index, key, type Issues } from './issues.js';

export interface DecodedSpec<T> {
  /** The spec, when it decoded cleanly. */
  readonly value?: T;
  /**
   * When the only problems were unknown fields: the spec without them, so semantic checks can
   * still run and report everything in one go (the object stays rejected).
   */
  readonly lenient?: T;
}

export function decodeSpec<T>(schema: DescMessage, input: unknown, path: string, issues: Issues): DecodedSpec<T> {
  const json = normalizeDurations(schema, input);
  try {
    return { value: fromJson(schema, json as JsonValue) as T };
  } catch (err) {
    const before = issues.count;
    locate(schema, json, path, issues);
    if (issues.count === before) issues.add(path, cleanMessage(errorText(err), schema));
    try {
      return { lenient: fromJson(schema, json as JsonValue, { ignoreUnknownFields: true }) as T };
    } catch {
      return {};
    }
  }
}

// Well-known types have their own JSON forms ("5s", wrappers as bare values): treat them as leaves.
const isWellKnown = (m: DescMessage): boolean => m.typeName.startsWith('google.protobuf.');

function locate(desc: DescMessage, json: unknown, path: string, issues: Issues): void {
  if (json === null || json === undefined) return;
  if (typeof json !== 'object' || Array.isArray(json)) {
    issues.add(path, `expected an object, got ${describe(json)}`);
    return;
  }
  const before = issues.count;
  for (const [name, value] of Object.entries(json as Record<string, unknown>)) {
    const f = desc.fields.find((x) => x.jsonName === name || x.name === name);
    const p = fieldPath(path, name);
    if (!f) {
      issues.add(p, unknownFieldMessage(desc, name));
      continue;
    }
    if (value === null) continue; // proto3 JSON: null means "unset"
    locateField(desc, f, name, value, p, issues);
  }
  // Fields are fine one by one, so the problem is between them (a oneof set twice).
  if (issues.count === before) {
    try {
      fromJson(desc, json as JsonValue);
    } catch (err) {
      issues.add(path, cleanMessage(errorText(err), desc));
    }
  }
}

function locateField(desc: DescMessage, f: DescField, name: string, value: unknown, p: string, issues: Issues): void {
  switch (f.fieldKind) {
    case 'message':
      if (isWellKnown(f.message)) leaf(desc, f, name, value, value, p, issues);
      else locate(f.message, value, p, issues);
      return;
    case 'list':
      if (!Array.isArray(value)) {
        issues.add(p, `expected a list, got ${describe(value)}`);
        return;
      }
      value.forEach((el, i) => {
        const ep = index(p, i);
        if (el === null) issues.add(ep, 'list items may not be null');
        else if (f.listKind === 'message' && !isWellKnown(f.message)) locate(f.message, el, ep, issues);
        else leaf(desc, f, name, [el], el, ep, issues);
      });
      return;
    case 'map':
      if (typeof value !== 'object' || Array.isArray(value)) {
        issues.add(p, `expected a map, got ${describe(value)}`);
        return;
      }
      for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
        const ep = key(p, k);
        if (f.mapKind === 'message' && !isWellKnown(f.message)) locate(f.message, v, ep, issues);
        else leaf(desc, f, name, { [k]: v }, v, ep, issues);
      }
      return;
    default:
      leaf(desc, f, name, value, value, p, issues);
  }
}

/** Decodes just one field of the parent message, so the error is that field's own. */
function leaf(desc: DescMessage, f: DescField, name: string, value: unknown, shown: unknown, path: string, issues: Issues): void {
  try {
    fromJson(desc, { [name]: value } as JsonValue);
  } catch (err) {
    const e = enumOf(f);
    if (e && typeof shown === 'string') {
      issues.add(path, `unknown value "${shown}"; expected one of ${e.values.map((v) => v.name).join(', ')}`);
      return;
    }
    issues.add(path, cleanMessage(errorText(err)));
  }
}

function enumOf(f: DescField): { values: readonly { name: string }[] } | undefined {
  if (f.fieldKind === 'enum') return f.enum;
  if (f.fieldKind === 'list' && f.listKind === 'enum') return f.enum;
  if (f.fieldKind === 'map' && f.mapKind === 'enum') return f.enum;
  return undefined;
}

const squash = (s: string): string => s.replace(/[_-]/g, '').toLowerCase();

function unknownFieldMessage(desc: DescMessage, name: string): string {
  // Catch the common slip of writing snake_case or a wrong case: `host_name`, `Hosts`.
  const near = desc.fields.find((f) => squash(f.jsonName) === squash(name));
  return near ? `unknown field "${name}" (did you mean "${near.jsonName}"?)` : `unknown field "${name}"`;
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Drops protobuf-es's "cannot decode field istio.….weight from JSON:" prefix: the path says where. */
function cleanMessage(msg: string, desc?: DescMessage): string {
  const oneof = /oneof set multiple times by (\w+) and (\w+)/.exec(msg);
  if (oneof) {
    // protobuf-es names the members by proto name; users wrote the JSON names.
    const json = (n: string): string => desc?.fields.find((f) => f.name === n)?.jsonName ?? n;
    return `only one of "${json(oneof[1] ?? '')}" and "${json(oneof[2] ?? '')}" may be set`;
  }
  const m = /^cannot decode (?:field|message|oneof) ([\w.]+) from JSON: (.*)$/s.exec(msg);
  if (!m) return msg;
  const [, type = '', detail = ''] = m;
  // The path already says which list item or map entry.
  const rest = detail.replace(/^(?:list item #\d+|map entry "[^"]*"): /, '');
  if (type === 'google.protobuf.Duration') return `invalid duration ${rest} (use e.g. "5s", "250ms" or "1m30s")`;
  if (type.startsWith('google.protobuf.')) return `invalid ${type.slice('google.protobuf.'.length)} ${rest}`;
  return rest;
}

function describe(v: unknown): string {
  if (Array.isArray(v)) return 'a list';
  if (v === null) return 'null';
  if (typeof v === 'object') return 'an object';
  return `${typeof v} ${JSON.stringify(v)}`;
}
