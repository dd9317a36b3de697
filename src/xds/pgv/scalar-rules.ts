import type { DescEnum, Message } from '@bufbuild/protobuf';
import { showValue } from './report.js';
import { checkBounds, ruleSet, setRuleFields, showList, type Bounds, type Comparable, type ValueCheck } from './rule-fields.js';

/** The FieldRules cases for numbers (float, int64, fixed32 …): all share one rule shape. */
export const NUMERIC_KINDS: ReadonlySet<string> = new Set([
  'float',
  'double',
  'int32',
  'int64',
  'uint32',
  'uint64',
  'sint32',
  'sint64',
  'fixed32',
  'fixed64',
  'sfixed32',
  'sfixed64',
]);

/** 64-bit fields with `jstype = JS_STRING` hold strings; compare them as bigints. */
function asComparable(raw: unknown): Comparable {
  if (typeof raw === 'string') return BigInt(raw);
  return raw as Comparable;
}

/** const, lt/lte/gt/gte (incl. exclusive ranges), in, not_in, ignore_empty for any numeric kind. */
export function compileNumericRules(kind: string, rules: Message): ValueCheck {
  const r = setRuleFields(rules);
  const ignoreEmpty = r.get('ignore_empty') === true;
  const hasConst = r.has('const');
  const constValue = r.get('const') as Comparable | undefined;
  const inList = (r.get('in') as Comparable[] | undefined) ?? [];
  const notInList = (r.get('not_in') as Comparable[] | undefined) ?? [];
  const inSet = ruleSet(inList);
  const notInSet = ruleSet(notInList);
  const bounds: Bounds = {
    ...(r.has('lt') ? { lt: r.get('lt') as Comparable } : {}),
    ...(r.has('lte') ? { lte: r.get('lte') as Comparable } : {}),
    ...(r.has('gt') ? { gt: r.get('gt') as Comparable } : {}),
    ...(r.has('gte') ? { gte: r.get('gte') as Comparable } : {}),
  };
  const hasBounds = Object.keys(bounds).length > 0;

  return (raw, path, run) => {
    const value = asComparable(raw);
    if (ignoreEmpty && (value === 0 || value === 0n)) return;
    const got = `, got ${showValue(value)}`;
    if (hasConst && value !== constValue) run.report(path, `${kind}.const`, `value must equal ${showValue(constValue)}${got}`);
    if (inSet && !inSet.has(value)) run.report(path, `${kind}.in`, `value must be in list ${showList(inList)}${got}`);
    if (notInSet?.has(value)) run.report(path, `${kind}.not_in`, `value must not be in list ${showList(notInList)}${got}`);
    if (hasBounds) {
      const failure = checkBounds(value, bounds, showValue);
      if (failure) run.report(path, `${kind}.${failure.rule}`, `value ${failure.reason}${got}`);
    }
  };
}

export function compileBoolRules(rules: Message): ValueCheck | undefined {
  const r = setRuleFields(rules);
  if (!r.has('const')) return undefined;
  const expected = r.get('const') === true;
  return (value, path, run) => {
    if (value !== expected) run.report(path, 'bool.const', `value must equal ${expected}, got ${String(value)}`);
  };
}

/** const, defined_only, in, not_in on an enum's number. */
export function compileEnumRules(enumDesc: DescEnum, rules: Message): ValueCheck {
  const r = setRuleFields(rules);
  const hasConst = r.has('const');
  const constValue = r.get('const') as number | undefined;
  const definedOnly = r.get('defined_only') === true;
  const inList = (r.get('in') as number[] | undefined) ?? [];
  const notInList = (r.get('not_in') as number[] | undefined) ?? [];
  const inSet = ruleSet(inList);
  const notInSet = ruleSet(notInList);
  const show = (n: number): string => {
    const name = enumDesc.values.find((v) => v.number === n)?.name;
    return name ? `${name} (${n})` : String(n);
  };
  const shown = (list: number[]): string => `[${list.map(show).join(', ')}]`;

  return (raw, path, run) => {
    const value = raw as number;
    const got = `, got ${show(value)}`;
    if (hasConst && value !== constValue) run.report(path, 'enum.const', `value must equal ${show(constValue!)}${got}`);
    if (definedOnly && !enumDesc.values.some((v) => v.number === value)) {
      run.report(path, 'enum.defined_only', `value must be one of the defined ${enumDesc.typeName} values${got}`);
    }
    if (inSet && !inSet.has(value)) run.report(path, 'enum.in', `value must be in list ${shown(inList)}${got}`);
    if (notInSet?.has(value)) run.report(path, 'enum.not_in', `value must not be in list ${shown(notInList)}${got}`);
  };
}
