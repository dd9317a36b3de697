import { isFieldSet, type DescMessage, type Message } from '@bufbuild/protobuf';
import { file_validate_validate } from '../../gen/validate/validate_pb.js';
import { showValue, type Path, type ValidationRun } from './report.js';

/** Checks one value (a field's, a list item's, a map key's or value's) and reports what it breaks. */
export type ValueCheck = (value: unknown, path: Path, run: ValidationRun) => void;

const RULE_SCHEMAS: ReadonlyMap<string, DescMessage> = new Map(file_validate_validate.messages.map((m) => [m.typeName, m]));

/**
 * The fields set on a validate.proto rules message, by proto name. validate.proto is proto2, and
 * PGV tests presence (`gt: 0` is a rule, an absent `gt` is not), so read presence, not values.
 */
export function setRuleFields(rules: Message): Map<string, unknown> {
  const desc = RULE_SCHEMAS.get(rules.$typeName);
  if (!desc) throw new Error(`not a validate.proto rules message: ${rules.$typeName}`);
  const out = new Map<string, unknown>();
  for (const field of desc.fields) {
    if (!isFieldSet(rules, field)) continue;
    const record = rules as unknown as Record<string, unknown>;
    out.set(field.name, field.oneof ? (record[field.oneof.localName] as { value: unknown }).value : record[field.localName]);
  }
  return out;
}

export type Comparable = number | bigint;

/** The lt / lte / gt / gte rules of a numeric, duration or timestamp rule set, as comparable values. */
export interface Bounds {
  readonly lt?: Comparable;
  readonly lte?: Comparable;
  readonly gt?: Comparable;
  readonly gte?: Comparable;
}

export interface RangeFailure {
  readonly rule: string;
  readonly reason: string;
}

/**
 * PGV's lt/lte/gt/gte semantics: lt wins over lte and gt over gte when both are given; with an
 * upper and a lower bound the value must lie inside the range when upper > lower, and outside it
 * (the exclusive form) when upper <= lower. Returns the broken rule: the bound crossed for an
 * inside range, `<upper>_<lower>` (e.g. `lt_gt`) for an exclusive one.
 */
export function checkBounds(value: Comparable, bounds: Bounds, show: (v: Comparable) => string): RangeFailure | undefined {
  const upperName = bounds.lt !== undefined ? 'lt' : bounds.lte !== undefined ? 'lte' : undefined;
  const lowerName = bounds.gt !== undefined ? 'gt' : bounds.gte !== undefined ? 'gte' : undefined;
  const upper = upperName === 'lt' ? bounds.lt : bounds.lte;
  const lower = lowerName === 'gt' ? bounds.gt : bounds.gte;
  const belowUpper = upper === undefined || (upperName === 'lt' ? value < upper : value <= upper);
  const aboveLower = lower === undefined || (lowerName === 'gt' ? value > lower : value >= lower);

  if (upper !== undefined && lower !== undefined && upperName && lowerName) {
    const open = lowerName === 'gt' ? '(' : '[';
    const close = upperName === 'lt' ? ')' : ']';
    if (upper > lower) {
      if (belowUpper && aboveLower) return undefined;
      return {
        rule: aboveLower ? upperName : lowerName,
        reason: `must be inside range ${open}${show(lower)}, ${show(upper)}${close}`,
      };
    }
    // Exclusive range: anything but the span between the two bounds.
    if (belowUpper || aboveLower) return undefined;
    const from = upperName === 'lt' ? '[' : '(';
    const to = lowerName === 'gt' ? ']' : ')';
    return {
      rule: `${upperName}_${lowerName}`,
      reason: `must be outside range ${from}${show(upper)}, ${show(lower)}${to}`,
    };
  }
  if (upper !== undefined && !belowUpper) {
    return { rule: upperName!, reason: `must be less than ${upperName === 'lte' ? 'or equal to ' : ''}${show(upper)}` };
  }
  if (lower !== undefined && !aboveLower) {
    return { rule: lowerName!, reason: `must be greater than ${lowerName === 'gte' ? 'or equal to ' : ''}${show(lower)}` };
  }
  return undefined;
}

/** `in` / `not_in` lists as sets (empty list means no rule). */
export function ruleSet<T>(list: unknown, key: (v: T) => unknown = (v) => v): ReadonlySet<unknown> | undefined {
  if (!Array.isArray(list) || list.length === 0) return undefined;
  return new Set((list as T[]).map(key));
}

export function showList(list: readonly unknown[], show: (v: never) => string = showValue): string {
  return `[${list.map((v) => show(v as never)).join(', ')}]`;
}
