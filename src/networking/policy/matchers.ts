import { isIP } from 'node:net';
import type { CidrRangeSchema } from '../../gen/envoy/config/core/v3/address_pb.js';
import type { HeaderMatcherSchema } from '../../gen/envoy/config/route/v3/route_components_pb.js';
import type { MetadataMatcherSchema } from '../../gen/envoy/type/matcher/v3/metadata_pb.js';
import type { StringMatcherSchema } from '../../gen/envoy/type/matcher/v3/string_pb.js';
import type { ValueMatcherSchema } from '../../gen/envoy/type/matcher/v3/value_pb.js';
import type { Init } from '../common.js';

// Matcher builders with the exact shapes istiod's authz/matcher package emits: a value's `*`
// wildcard becomes prefix/suffix/regex matchers the same way, so RBAC output compares field by field.

export type StringMatcherInit = Init<typeof StringMatcherSchema>;
export type ValueMatcherInit = Init<typeof ValueMatcherSchema>;
export type MetadataMatcherInit = Init<typeof MetadataMatcherSchema>;
export type HeaderMatcherInit = Init<typeof HeaderMatcherSchema>;
export type CidrRangeInit = Init<typeof CidrRangeSchema>;

export const exactMatch = (exact: string, ignoreCase = false): StringMatcherInit => ({
  matchPattern: { case: 'exact', value: exact },
  ...(ignoreCase ? { ignoreCase } : {}),
});
export const prefixMatch = (prefix: string, ignoreCase = false): StringMatcherInit => ({
  matchPattern: { case: 'prefix', value: prefix },
  ...(ignoreCase ? { ignoreCase } : {}),
});
export const suffixMatch = (suffix: string, ignoreCase = false): StringMatcherInit => ({
  matchPattern: { case: 'suffix', value: suffix },
  ...(ignoreCase ? { ignoreCase } : {}),
});
export const regexMatch = (regex: string): StringMatcherInit => ({ matchPattern: { case: 'safeRegex', value: { regex } } });

/** Go's regexp.QuoteMeta: escapes every RE2 metacharacter so a literal matches itself. */
export function quoteMeta(literal: string): string {
  return literal.replace(/[\\.+*?()|[\]{}^$]/g, '\\$&');
}

/**
 * A policy value as a string matcher: `*` alone → regex `.+` (present, non-empty); `*x` → suffix;
 * `x*` → prefix; otherwise exact. `prefix` (e.g. `spiffe://`) is put in front of the literal part;
 * for a suffix value with a prefix the result is the regex `<prefix>.*<quoted suffix>`.
 */
export function stringMatcherWithPrefix(value: string, prefix = ''): StringMatcherInit {
  if (value === '*') return regexMatch('.+');
  if (value.startsWith('*')) {
    const rest = value.slice(1);
    return prefix === '' ? suffixMatch(rest) : regexMatch(`${prefix}.*${quoteMeta(rest)}`);
  }
  if (value.endsWith('*')) return prefixMatch(prefix + value.slice(0, -1));
  return exactMatch(prefix + value);
}

export const stringValueMatcher = (m: StringMatcherInit): ValueMatcherInit => ({ matchPattern: { case: 'stringMatch', value: m } });

/** One matcher stays itself; several are OR-ed (istiod's OrMatcher). */
export function orValueMatcher(matchers: ValueMatcherInit[]): ValueMatcherInit {
  if (matchers.length === 1 && matchers[0]) return matchers[0];
  return { matchPattern: { case: 'orMatch', value: { valueMatchers: matchers } } };
}

/** OR of the values, each as a wildcard-aware string matcher. */
export function stringOrMatcher(values: readonly string[]): ValueMatcherInit {
  return orValueMatcher(values.map((v) => stringValueMatcher(stringMatcherWithPrefix(v))));
}

function headerMatcherWith(name: string, value: string, ignoreCase: boolean): HeaderMatcherInit {
  // `*` is checked first: an empty prefix/suffix is invalid in a HeaderMatcher.
  if (value === '*') return { name, headerMatchSpecifier: { case: 'presentMatch', value: true } };
  let m: StringMatcherInit;
  if (value.startsWith('*')) m = suffixMatch(value.slice(1), ignoreCase);
  else if (value.endsWith('*')) m = prefixMatch(value.slice(0, -1), ignoreCase);
  else m = exactMatch(value, ignoreCase);
  return { name, headerMatchSpecifier: { case: 'stringMatch', value: m } };
}

/** A request header (or `:method`) against a policy value, case-sensitive. */
export const headerMatcher = (name: string, value: string): HeaderMatcherInit => headerMatcherWith(name, value, false);
/** `:authority` against a policy host: hosts compare case-insensitively. */
export const hostMatcher = (name: string, value: string): HeaderMatcherInit => headerMatcherWith(name, value, true);

const keyPath = (keys: readonly string[]): NonNullable<MetadataMatcherInit['path']> =>
  keys.map((k) => ({ segment: { case: 'key' as const, value: k } }));

export function metadataValueMatcher(filter: string, keys: readonly string[], value: ValueMatcherInit): MetadataMatcherInit {
  return { filter, path: keyPath(keys), value };
}

/**
 * A metadata matcher for a JWT claim that may be a list or a single value: istiod matches
 * `OR(list one_of <value>, <value>)` so both `"aud": "a"` and `"aud": ["a", "b"]` match.
 */
export function metadataListOrValueMatcher(filter: string, keys: readonly string[], value: ValueMatcherInit): MetadataMatcherInit {
  const list: ValueMatcherInit = { matchPattern: { case: 'listMatch', value: { matchPattern: { case: 'oneOf', value } } } };
  return { filter, path: keyPath(keys), value: { matchPattern: { case: 'orMatch', value: { valueMatchers: [list, value] } } } };
}

/** A metadata matcher requiring a list at the path to contain one element matching `value`. */
export function metadataListMatcher(filter: string, keys: readonly string[], value: StringMatcherInit): MetadataMatcherInit {
  return {
    filter,
    path: keyPath(keys),
    value: { matchPattern: { case: 'listMatch', value: { matchPattern: { case: 'oneOf', value: stringValueMatcher(value) } } } },
  };
}

/**
 * `10.0.0.1` (→ /32 or /128) or `10.0.0.0/8` as a CidrRange, as istiod's AddrStrToCidrRange:
 * the address is kept as written (host bits are not masked), IPv6 in its canonical form.
 * Throws on anything else.
 */
export function cidrRange(addr: string): CidrRangeInit {
  const slash = addr.indexOf('/');
  const ip = slash >= 0 ? addr.slice(0, slash) : addr;
  const family = isIP(ip);
  if (family === 0) throw new Error(`invalid IP address ${JSON.stringify(addr)}`);
  const max = family === 4 ? 32 : 128;
  let bits = max;
  if (slash >= 0) {
    const text = addr.slice(slash + 1);
    if (!/^\d{1,3}$/.test(text) || Number(text) > max) throw new Error(`invalid CIDR prefix length in ${JSON.stringify(addr)}`);
    bits = Number(text);
  }
  return { addressPrefix: family === 6 ? canonicalIPv6(ip) : ip, prefixLen: bits };
}

function canonicalIPv6(ip: string): string {
  // The WHATWG URL parser serializes IPv6 hosts canonically (RFC 5952), as Go's netip does.
  return new URL(`http://[${ip}]/`).hostname.slice(1, -1);
}
