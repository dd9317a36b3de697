import type { Message } from '@bufbuild/protobuf';
import { RE2JS } from 're2js';
import { KnownRegex } from '../../gen/validate/validate_pb.js';
import { showValue, type Path, type ValidationRun } from './report.js';
import { setRuleFields, showList, type ValueCheck } from './rule-fields.js';
import {
  emailProblem,
  hostnameProblem,
  HTTP_HEADER_LOOSE,
  HTTP_HEADER_NAME_STRICT,
  HTTP_HEADER_VALUE_STRICT,
  isIpAddress,
  isIpv4Address,
  isIpv6Address,
  isUuid,
  uriProblem,
  uriRefProblem,
} from './well-known.js';

type Check<T> = (value: T, report: (rule: string, reason: string) => void) => void;

/**
 * RE2, matched against the whole value as Envoy's C++ validator does (RE2::FullMatch); Go's PGV
 * searches instead, so this is the stricter reading. A pattern that does not compile is a broken
 * descriptor, reported where the rule sits.
 */
function compilePattern(pattern: string, where: string): RE2JS {
  try {
    return RE2JS.compile(pattern);
  } catch (err) {
    throw new Error(`${where}: validate pattern ${JSON.stringify(pattern)} is not RE2: ${(err as Error).message}`, { cause: err });
  }
}

function lengthChecks<T>(
  r: Map<string, unknown>,
  kind: string,
  unit: string,
  names: { len: string; min: string; max: string },
  measure: (v: T) => number,
): Check<T>[] {
  const checks: Check<T>[] = [];
  const exact = r.get(names.len) as bigint | undefined;
  const min = r.get(names.min) as bigint | undefined;
  const max = r.get(names.max) as bigint | undefined;
  if (exact !== undefined) {
    checks.push((v, report) => {
      const n = measure(v);
      if (BigInt(n) !== exact) report(`${kind}.${names.len}`, `value length must be exactly ${exact} ${unit}, got ${n}`);
    });
  }
  if (min !== undefined) {
    checks.push((v, report) => {
      const n = measure(v);
      if (BigInt(n) < min) report(`${kind}.${names.min}`, `value length must be at least ${min} ${unit}, got ${n}`);
    });
  }
  if (max !== undefined) {
    checks.push((v, report) => {
      const n = measure(v);
      if (BigInt(n) > max) report(`${kind}.${names.max}`, `value length must be at most ${max} ${unit}, got ${n}`);
    });
  }
  return checks;
}

function runChecks<T>(checks: Check<T>[], ignoreEmpty: boolean, isEmpty: (v: T) => boolean): ValueCheck | undefined {
  if (checks.length === 0) return undefined;
  return (raw: unknown, path: Path, run: ValidationRun) => {
    const value = raw as T;
    if (ignoreEmpty && isEmpty(value)) return;
    const report = (rule: string, reason: string): void => run.report(path, rule, `${reason} (value ${showValue(value)})`);
    for (const check of checks) check(value, report);
  };
}

const codePoints = (s: string): number => {
  let n = 0;
  for (const _ of s) n++;
  return n;
};

/** Every StringRules rule; `where` names the field for errors about the rules themselves. */
export function compileStringRules(rules: Message, where: string): ValueCheck | undefined {
  const r = setRuleFields(rules);
  const checks: Check<string>[] = [];
  if (r.has('const')) {
    const expected = r.get('const') as string;
    checks.push((v, report) => v !== expected && report('string.const', `value must equal ${showValue(expected)}`));
  }
  const inList = (r.get('in') as string[] | undefined) ?? [];
  if (inList.length > 0) {
    const set = new Set(inList);
    checks.push((v, report) => !set.has(v) && report('string.in', `value must be in list ${showList(inList)}`));
  }
  const notIn = (r.get('not_in') as string[] | undefined) ?? [];
  if (notIn.length > 0) {
    const set = new Set(notIn);
    checks.push((v, report) => set.has(v) && report('string.not_in', `value must not be in list ${showList(notIn)}`));
  }
  checks.push(...lengthChecks<string>(r, 'string', 'characters', { len: 'len', min: 'min_len', max: 'max_len' }, codePoints));
  checks.push(
    ...lengthChecks<string>(r, 'string', 'bytes', { len: 'len_bytes', min: 'min_bytes', max: 'max_bytes' }, (v) =>
      Buffer.byteLength(v, 'utf8'),
    ),
  );
  if (r.has('pattern')) {
    const pattern = r.get('pattern') as string;
    const re = compilePattern(pattern, where);
    checks.push((v, report) => !re.matches(v) && report('string.pattern', `value must match regex ${JSON.stringify(pattern)}`));
  }
  for (const [name, test, verb] of [
    ['prefix', (v: string, s: string) => v.startsWith(s), 'start with'],
    ['suffix', (v: string, s: string) => v.endsWith(s), 'end with'],
    ['contains', (v: string, s: string) => v.includes(s), 'contain'],
    ['not_contains', (v: string, s: string) => !v.includes(s), 'not contain'],
  ] as const) {
    if (!r.has(name)) continue;
    const needle = r.get(name) as string;
    checks.push((v, report) => !test(v, needle) && report(`string.${name}`, `value must ${verb} ${showValue(needle)}`));
  }
  const wellKnown = wellKnownCheck(r, where);
  if (wellKnown) checks.push(wellKnown);
  return runChecks(checks, r.get('ignore_empty') === true, (v) => v === '');
}

function wellKnownCheck(r: Map<string, unknown>, where: string): Check<string> | undefined {
  const problem =
    (fn: (v: string) => string | undefined, rule: string, what: string): Check<string> =>
    (v, report) => {
      const why = fn(v);
      if (why !== undefined) report(`string.${rule}`, `value must be a valid ${what}: ${why}`);
    };
  const predicate =
    (fn: (v: string) => boolean, rule: string, what: string): Check<string> =>
    (v, report) =>
      !fn(v) && report(`string.${rule}`, `value must be a valid ${what}`);

  if (r.get('email') === true) return problem(emailProblem, 'email', 'email address');
  if (r.get('hostname') === true) return problem(hostnameProblem, 'hostname', 'hostname');
  if (r.get('ip') === true) return predicate(isIpAddress, 'ip', 'IP address');
  if (r.get('ipv4') === true) return predicate(isIpv4Address, 'ipv4', 'IPv4 address');
  if (r.get('ipv6') === true) return predicate(isIpv6Address, 'ipv6', 'IPv6 address');
  if (r.get('uri') === true) return problem(uriProblem, 'uri', 'URI');
  if (r.get('uri_ref') === true) return problem(uriRefProblem, 'uri_ref', 'URI reference');
  if (r.get('address') === true) {
    return predicate((v) => hostnameProblem(v) === undefined || isIpAddress(v), 'address', 'hostname or IP address');
  }
  if (r.get('uuid') === true) return predicate(isUuid, 'uuid', 'UUID');
  const known = r.get('well_known_regex') as KnownRegex | undefined;
  if (known === KnownRegex.HTTP_HEADER_NAME || known === KnownRegex.HTTP_HEADER_VALUE) {
    // `strict` defaults to true (proto2 default), so an absent `strict` is strict.
    const strict = r.get('strict') !== false;
    const name = known === KnownRegex.HTTP_HEADER_NAME ? 'HTTP_HEADER_NAME' : 'HTTP_HEADER_VALUE';
    const pattern = !strict
      ? HTTP_HEADER_LOOSE
      : known === KnownRegex.HTTP_HEADER_NAME
        ? HTTP_HEADER_NAME_STRICT
        : HTTP_HEADER_VALUE_STRICT;
    const re = compilePattern(pattern, where);
    return (v, report) => !re.matches(v) && report('string.well_known_regex', `value must be a valid ${strict ? '' : 'loose '}${name}`);
  }
  return undefined;
}

const bytesEqual = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && a.every((x, i) => x === b[i]);
const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

/** Every BytesRules rule. Patterns match the bytes as UTF-8, as RE2 does. */
export function compileBytesRules(rules: Message, where: string): ValueCheck | undefined {
  const r = setRuleFields(rules);
  const checks: Check<Uint8Array>[] = [];
  if (r.has('const')) {
    const expected = r.get('const') as Uint8Array;
    checks.push((v, report) => !bytesEqual(v, expected) && report('bytes.const', `value must equal ${showValue(expected)}`));
  }
  const inList = (r.get('in') as Uint8Array[] | undefined) ?? [];
  if (inList.length > 0) {
    const set = new Set(inList.map(hex));
    checks.push((v, report) => !set.has(hex(v)) && report('bytes.in', `value must be in list ${showList(inList)}`));
  }
  const notIn = (r.get('not_in') as Uint8Array[] | undefined) ?? [];
  if (notIn.length > 0) {
    const set = new Set(notIn.map(hex));
    checks.push((v, report) => set.has(hex(v)) && report('bytes.not_in', `value must not be in list ${showList(notIn)}`));
  }
  checks.push(...lengthChecks<Uint8Array>(r, 'bytes', 'bytes', { len: 'len', min: 'min_len', max: 'max_len' }, (v) => v.length));
  if (r.has('pattern')) {
    const pattern = r.get('pattern') as string;
    const re = compilePattern(pattern, where);
    checks.push((v, report) => !re.matches(v) && report('bytes.pattern', `value must match regex ${JSON.stringify(pattern)}`));
  }
  for (const [name, test, verb] of [
    ['prefix', (v: Uint8Array, s: Uint8Array) => bytesEqual(v.subarray(0, s.length), s), 'start with'],
    ['suffix', (v: Uint8Array, s: Uint8Array) => v.length >= s.length && bytesEqual(v.subarray(v.length - s.length), s), 'end with'],
    ['contains', (v: Uint8Array, s: Uint8Array) => Buffer.from(v).includes(Buffer.from(s)), 'contain'],
  ] as const) {
    if (!r.has(name)) continue;
    const needle = r.get(name) as Uint8Array;
    checks.push((v, report) => !test(v, needle) && report(`bytes.${name}`, `value must ${verb} ${showValue(needle)}`));
  }
  if (r.get('ip') === true)
    checks.push((v, report) => v.length !== 4 && v.length !== 16 && report('bytes.ip', 'value must be 4 or 16 bytes (an IP address)'));
  if (r.get('ipv4') === true) checks.push((v, report) => v.length !== 4 && report('bytes.ipv4', 'value must be 4 bytes (an IPv4 address)'));
  if (r.get('ipv6') === true)
    checks.push((v, report) => v.length !== 16 && report('bytes.ipv6', 'value must be 16 bytes (an IPv6 address)'));
  return runChecks(checks, r.get('ignore_empty') === true, (v) => v.length === 0);
}
