import { ScalarType, toBinary, type DescEnum, type DescField, type DescMessage } from '@bufbuild/protobuf';
import type { FieldRules, MapRules, RepeatedRules } from '../../gen/validate/validate_pb.js';
import { compileMessageElement, compileScalarCheck, type FieldCheck } from './plan.js';
import { fieldPath, suffixPath } from './report.js';
import { setRuleFields, type ValueCheck } from './rule-fields.js';

type ListField = DescField & { fieldKind: 'list' };
type MapField = DescField & { fieldKind: 'map' };

interface ElementShape {
  readonly listKind: 'scalar' | 'enum' | 'message';
  readonly scalar?: ScalarType | undefined;
  readonly enum?: DescEnum | undefined;
  readonly message?: DescMessage | undefined;
}

/** The check for one element of a list or one value of a map, from `items` / `values` rules. */
function elementCheck(shape: ElementShape, rules: FieldRules | undefined, where: string): ValueCheck | undefined {
  if (shape.listKind === 'message') {
    const desc = shape.message!;
    // Elements are always present, so a `required` in items/values has nothing to catch.
    return compileMessageElement(desc, rules, where, false, desc.typeName === 'google.protobuf.Struct').check;
  }
  if (shape.listKind === 'enum') return compileScalarCheck({ enum: shape.enum! }, rules, where);
  return compileScalarCheck({ scalar: shape.scalar! }, rules, where);
}

function typedRules(rules: FieldRules | undefined, expected: 'repeated' | 'map', where: string, fieldType: string) {
  const ruleCase = rules?.type.case;
  if (ruleCase === undefined) return undefined;
  if (ruleCase !== expected) throw new Error(`${where}: (validate.rules).${ruleCase} on a ${fieldType} field`);
  return rules!.type.value!;
}

/** repeated: min_items, max_items, unique, items (on each element), ignore_empty; plus descent into message elements. */
export function compileListCheck(field: ListField, rules: FieldRules | undefined, where: string): FieldCheck | undefined {
  const repeated = typedRules(rules, 'repeated', where, 'repeated') as RepeatedRules | undefined;
  const r = repeated ? setRuleFields(repeated) : new Map<string, unknown>();
  const min = r.get('min_items') as bigint | undefined;
  const max = r.get('max_items') as bigint | undefined;
  const unique = r.get('unique') === true;
  const ignoreEmpty = r.get('ignore_empty') === true;
  const shape: ElementShape =
    field.listKind === 'scalar'
      ? { listKind: 'scalar', scalar: field.scalar }
      : field.listKind === 'enum'
        ? { listKind: 'enum', enum: field.enum }
        : { listKind: 'message', message: field.message };
  const items = elementCheck(shape, repeated?.items, `${where}[]`);
  if (min === undefined && max === undefined && !unique && !items) return undefined;
  const uniqueKey = (v: unknown): unknown => {
    if (v instanceof Uint8Array) return Buffer.from(v).toString('hex');
    if (field.listKind === 'message') return Buffer.from(toBinary(field.message, v as never)).toString('hex');
    return v;
  };

  return (message, path, run) => {
    const list = message[field.localName] as unknown[];
    if (ignoreEmpty && list.length === 0) return;
    const at = fieldPath(path, field.name);
    const n = BigInt(list.length);
    if (min !== undefined && n < min) run.report(at, 'repeated.min_items', `value must contain at least ${min} item(s), got ${n}`);
    if (max !== undefined && n > max) run.report(at, 'repeated.max_items', `value must contain no more than ${max} item(s), got ${n}`);
    if (unique) {
      const seen = new Map<unknown, number>();
      list.forEach((item, i) => {
        const key = uniqueKey(item);
        const first = seen.get(key);
        if (first === undefined) seen.set(key, i);
        else
          run.report(
            suffixPath(at, `[${i}]`),
            'repeated.unique',
            `repeated value must contain unique items; item ${i} repeats item ${first}`,
          );
      });
    }
    if (items) for (let i = 0; i < list.length; i++) items(list[i], suffixPath(at, `[${i}]`), run);
  };
}

/** Object keys of a protobuf-es map back to the key's proto type. */
function keyConverter(key: ScalarType): (k: string) => unknown {
  switch (key) {
    case ScalarType.STRING:
      return (k) => k;
    case ScalarType.BOOL:
      return (k) => k === 'true';
    case ScalarType.INT64:
    case ScalarType.UINT64:
    case ScalarType.SINT64:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
      return (k) => BigInt(k);
    default:
      return (k) => Number(k);
  }
}

/** map: min_pairs, max_pairs, no_sparse, keys, values, ignore_empty; plus descent into message values. */
export function compileMapCheck(field: MapField, rules: FieldRules | undefined, where: string): FieldCheck | undefined {
  const mapRules = typedRules(rules, 'map', where, 'map') as MapRules | undefined;
  const r = mapRules ? setRuleFields(mapRules) : new Map<string, unknown>();
  const min = r.get('min_pairs') as bigint | undefined;
  const max = r.get('max_pairs') as bigint | undefined;
  const noSparse = r.get('no_sparse') === true;
  const ignoreEmpty = r.get('ignore_empty') === true;
  const keys = compileScalarCheck({ scalar: field.mapKey }, mapRules?.keys, `${where}<key>`);
  const shape: ElementShape =
    field.mapKind === 'scalar'
      ? { listKind: 'scalar', scalar: field.scalar }
      : field.mapKind === 'enum'
        ? { listKind: 'enum', enum: field.enum }
        : { listKind: 'message', message: field.message };
  const values = elementCheck(shape, mapRules?.values, `${where}<value>`);
  if (min === undefined && max === undefined && !noSparse && !keys && !values) return undefined;
  const toKey = keyConverter(field.mapKey);
  const showKey = field.mapKey === ScalarType.STRING ? (k: string) => JSON.stringify(k) : (k: string) => k;

  return (message, path, run) => {
    const map = message[field.localName] as Record<string, unknown>;
    const entries = Object.keys(map);
    if (ignoreEmpty && entries.length === 0) return;
    const at = fieldPath(path, field.name);
    const n = BigInt(entries.length);
    if (min !== undefined && n < min) run.report(at, 'map.min_pairs', `value must contain at least ${min} pair(s), got ${n}`);
    if (max !== undefined && n > max) run.report(at, 'map.max_pairs', `value must contain no more than ${max} pair(s), got ${n}`);
    for (const k of entries) {
      const entryPath = suffixPath(at, `[${showKey(k)}]`);
      const value = map[k];
      if (keys) run.withMessagePrefix('map key: ', () => keys(toKey(k), entryPath, run));
      if (value === undefined || value === null) {
        if (noSparse) run.report(entryPath, 'map.no_sparse', 'map values cannot be unset (sparse)');
        continue;
      }
      values?.(value, entryPath, run);
    }
  };
}
