import { getOption, hasOption, ScalarType, type DescEnum, type DescField, type DescMessage, type DescOneof } from '@bufbuild/protobuf';
import { isWrapperDesc } from '@bufbuild/protobuf/wkt';
import { disabled, ignored, required as requiredOneof, rules as rulesExt, type FieldRules } from '../../gen/validate/validate_pb.js';
import { fieldPath, type Path, type ValidationRun } from './report.js';
import type { ValueCheck } from './rule-fields.js';
import { compileBoolRules, compileEnumRules, compileNumericRules, NUMERIC_KINDS } from './scalar-rules.js';
import { compileBytesRules, compileStringRules } from './string-rules.js';
import { compileAnyRules, compileDurationRules, compileTimestampRules, requiresPresence } from './wkt-rules.js';
import { compileListCheck, compileMapCheck } from './collection-rules.js';
import { visitAny, visitMessage } from './walk.js';

/** Checks one field of a message (reads it itself: oneof selection, presence). */
export type FieldCheck = (message: Record<string, unknown>, path: Path, run: ValidationRun) => void;

/** Everything the walker needs to know about one message type, computed once per descriptor. */
export interface MessagePlan {
  /** `(validate.disabled)` or `(validate.ignored)`: PGV neither checks nor descends. */
  readonly skip: boolean;
  /** Only the fields that have rules or lead to something that has (or to an Any). */
  readonly fields: readonly FieldCheck[];
  /** Real oneofs marked `(validate.required)`. */
  readonly requiredOneofs: readonly DescOneof[];
}

const plans = new WeakMap<DescMessage, MessagePlan>();

export function messagePlan(desc: DescMessage): MessagePlan {
  let plan = plans.get(desc);
  if (!plan) {
    plan = buildPlan(desc);
    plans.set(desc, plan);
  }
  return plan;
}

const ANY = 'google.protobuf.Any';
const DURATION = 'google.protobuf.Duration';
const TIMESTAMP = 'google.protobuf.Timestamp';
// Explicit presence values of google.protobuf.FeatureSet.FieldPresence; only IMPLICIT (2) lacks it.
const IMPLICIT_PRESENCE = 2;

function isSkipped(desc: DescMessage): boolean {
  return (hasOption(desc, disabled) && getOption(desc, disabled)) || (hasOption(desc, ignored) && getOption(desc, ignored));
}

function fieldRules(field: DescField): FieldRules | undefined {
  return hasOption(field, rulesExt) ? getOption(field, rulesExt) : undefined;
}

function buildPlan(desc: DescMessage): MessagePlan {
  if (isSkipped(desc)) return { skip: true, fields: [], requiredOneofs: [] };
  const fields: FieldCheck[] = [];
  for (const field of desc.fields) {
    const check = compileField(field);
    if (check) fields.push(check);
  }
  return { skip: false, fields, requiredOneofs: desc.oneofs.filter(isRequiredOneof) };
}

function isRequiredOneof(oneof: DescOneof): boolean {
  return hasOption(oneof, requiredOneof) && getOption(oneof, requiredOneof);
}

/** The FieldRules case a scalar type takes in validate.proto. */
function scalarRuleKind(scalar: ScalarType): string {
  return ScalarType[scalar].toLowerCase();
}

/** A rule check for one scalar or enum value, or undefined when the rules hold none for it. */
export function compileScalarCheck(
  type: { scalar: ScalarType } | { enum: DescEnum },
  rules: FieldRules | undefined,
  where: string,
): ValueCheck | undefined {
  const ruleCase = rules?.type.case;
  if (!rules || ruleCase === undefined) return undefined;
  const expected = 'enum' in type ? 'enum' : scalarRuleKind(type.scalar);
  if (ruleCase !== expected) throw new Error(`${where}: (validate.rules).${ruleCase} on a field of type ${expected}`);
  const value = rules.type.value;
  if ('enum' in type) return compileEnumRules(type.enum, value!);
  if (NUMERIC_KINDS.has(expected)) return compileNumericRules(expected, value!);
  if (expected === 'bool') return compileBoolRules(value!);
  if (expected === 'string') return compileStringRules(value!, where);
  if (expected === 'bytes') return compileBytesRules(value!, where);
  return undefined;
}

export interface MessageElement {
  /** Check of a set value (rules on it, then descent), or undefined when there is nothing to look at. */
  readonly check: ValueCheck | undefined;
  /** The rule that a missing value breaks (`message.required`, `duration.required` …), if any. */
  readonly requiredRule: string | undefined;
}

/**
 * Checks for a message-typed value: wrapper rules on the wrapped scalar, Any/Duration/Timestamp
 * rules, then descent (into Any through the registry) unless `message.skip`. `unboxed`: the value
 * is the wrapped scalar itself, as protobuf-es stores singular wrapper fields outside oneofs.
 */
export function compileMessageElement(
  desc: DescMessage,
  rules: FieldRules | undefined,
  where: string,
  unboxed: boolean,
  jsonStruct: boolean,
): MessageElement {
  const skip = rules?.message?.skip === true;
  let requiredRule = rules?.message?.required === true ? 'message.required' : undefined;
  const ruleCase = rules?.type.case;
  const mismatch = (): Error => new Error(`${where}: (validate.rules).${ruleCase} on a field of type ${desc.typeName}`);

  if (isWrapperDesc(desc)) {
    const inner = compileScalarCheck({ scalar: desc.fields[0].scalar }, rules, where);
    const check: ValueCheck | undefined = inner && (unboxed ? inner : (v, path, run) => inner((v as { value: unknown }).value, path, run));
    return { check, requiredRule };
  }
  if (desc.typeName === ANY) {
    if (ruleCase !== undefined && ruleCase !== 'any') throw mismatch();
    const anyRules = ruleCase === 'any' ? rules!.type.value! : undefined;
    if (anyRules && requiresPresence(anyRules)) requiredRule ??= 'any.required';
    const ruleCheck = anyRules ? compileAnyRules(anyRules) : undefined;
    const check: ValueCheck = (v, path, run) => {
      ruleCheck?.(v, path, run);
      if (!skip) visitAny(v as never, path, run);
    };
    return { check, requiredRule };
  }
  if (desc.typeName === DURATION || desc.typeName === TIMESTAMP) {
    const kind = desc.typeName === DURATION ? 'duration' : 'timestamp';
    if (ruleCase !== undefined && ruleCase !== kind) throw mismatch();
    const typed = ruleCase === kind ? rules!.type.value! : undefined;
    if (typed && requiresPresence(typed)) requiredRule ??= `${kind}.required`;
    const check = typed ? (kind === 'duration' ? compileDurationRules(typed) : compileTimestampRules(typed)) : undefined;
    return { check, requiredRule };
  }
  if (ruleCase === 'any' || ruleCase === 'duration' || ruleCase === 'timestamp') {
    // Envoy has `(validate.rules).any = {required: true}` on a plain message field
    // (ExtensionConfigSource.config_source); PGV's templates then enforce just the `required`.
    if (requiresPresence(rules!.type.value!)) requiredRule ??= `${ruleCase}.required`;
  } else if (ruleCase !== undefined) {
    throw mismatch();
  }
  // Struct fields hold plain JSON objects in protobuf-es; Struct carries no rules to descend for.
  if (skip || jsonStruct || !needsVisit(desc)) return { check: undefined, requiredRule };
  return { check: (v, path, run) => visitMessage(desc, v as never, path, run), requiredRule };
}

function compileField(field: DescField): FieldCheck | undefined {
  const rules = fieldRules(field);
  const where = `${field.parent.typeName}.${field.name}`;
  switch (field.fieldKind) {
    case 'scalar':
    case 'enum': {
      const check = compileScalarCheck(field.fieldKind === 'enum' ? { enum: field.enum } : { scalar: field.scalar }, rules, where);
      if (!check) return undefined;
      return singularCheck(field, check, undefined);
    }
    case 'message': {
      const unboxed = !field.oneof && isWrapperDesc(field.message);
      const jsonStruct = field.message.typeName === 'google.protobuf.Struct';
      const elem = compileMessageElement(field.message, rules, where, unboxed, jsonStruct);
      if (!elem.check && !elem.requiredRule) return undefined;
      return singularCheck(field, elem.check, elem.requiredRule);
    }
    case 'list':
      return compileListCheck(field, rules, where);
    case 'map':
      return compileMapCheck(field, rules, where);
  }
}

/** A singular field: only the selected oneof member is checked, and unset explicit-presence scalars are skipped. */
function singularCheck(field: DescField, check: ValueCheck | undefined, requiredRule: string | undefined): FieldCheck {
  const name = field.localName;
  const oneofName = field.oneof?.localName;
  const isMessage = field.fieldKind === 'message';
  const explicitScalar = !isMessage && !field.oneof && field.presence !== IMPLICIT_PRESENCE;
  return (message, path, run) => {
    let value: unknown;
    if (oneofName !== undefined) {
      const oneof = message[oneofName] as { case: string | undefined; value?: unknown };
      if (oneof.case !== name) return;
      value = oneof.value;
    } else {
      value = message[name];
      if (explicitScalar && !Object.prototype.hasOwnProperty.call(message, name)) value = undefined;
    }
    const at = fieldPath(path, field.name);
    if (value === undefined) {
      if (requiredRule) run.report(at, requiredRule, 'value is required');
      return;
    }
    check?.(value, at, run);
  };
}

const visitNeeded = new WeakMap<DescMessage, boolean>();

function messageChildren(desc: DescMessage): DescMessage[] {
  const out: DescMessage[] = [];
  for (const f of desc.fields) {
    if (
      f.fieldKind === 'message' ||
      (f.fieldKind === 'list' && f.listKind === 'message') ||
      (f.fieldKind === 'map' && f.mapKind === 'message')
    ) {
      out.push(f.message);
    }
  }
  return out;
}

function hasOwnWork(desc: DescMessage): boolean {
  if (isSkipped(desc)) return false;
  if (desc.typeName === ANY) return true;
  if (desc.oneofs.some(isRequiredOneof)) return true;
  return desc.fields.some((f) => fieldRules(f) !== undefined) || messageChildren(desc).some((m) => m.typeName === ANY);
}

/**
 * Whether anything under messages of this type can break a rule (own rules, a required oneof, an
 * Any to unpack, or such a message reachable through fields). Types recurse, so this is a fixed
 * point over the reachable graph, computed once and cached for every type it touched.
 */
export function needsVisit(root: DescMessage): boolean {
  const cached = visitNeeded.get(root);
  if (cached !== undefined) return cached;
  const pending = new Map<DescMessage, boolean>();
  const stack = [root];
  while (stack.length) {
    const d = stack.pop()!;
    if (pending.has(d) || visitNeeded.has(d)) continue;
    pending.set(d, hasOwnWork(d));
    if (!isSkipped(d)) stack.push(...messageChildren(d));
  }
  for (let changed = true; changed;) {
    changed = false;
    for (const [d, flag] of pending) {
      if (flag || isSkipped(d)) continue;
      if (messageChildren(d).some((c) => visitNeeded.get(c) ?? pending.get(c))) {
        pending.set(d, true);
        changed = true;
      }
    }
  }
  for (const [d, flag] of pending) visitNeeded.set(d, flag);
  return visitNeeded.get(root)!;
}
