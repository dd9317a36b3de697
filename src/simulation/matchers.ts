import type { DescMessage, JsonObject, JsonValue, MessageShape } from '@bufbuild/protobuf';
import { anyUnpack, type Any } from '@bufbuild/protobuf/wkt';
import { isIP } from 'node:net';
import { RE2JS } from 're2js';
import type { CidrRange } from '../gen/envoy/config/core/v3/address_pb.js';
import type { HeaderMatcher } from '../gen/envoy/config/route/v3/route_components_pb.js';
import type { MetadataMatcher } from '../gen/envoy/type/matcher/v3/metadata_pb.js';
import type { RegexMatcher } from '../gen/envoy/type/matcher/v3/regex_pb.js';
import type { StringMatcher } from '../gen/envoy/type/matcher/v3/string_pb.js';
import type { ValueMatcher } from '../gen/envoy/type/matcher/v3/value_pb.js';

// Envoy's common matchers (source/common/common/matchers.cc, http/header_utility.cc), shared by
// route matching and RBAC.

/** Lower-cased request headers, pseudo-headers (`:path`, `:authority`, …) included. */
export type Headers = ReadonlyMap<string, string>;
/** Dynamic metadata by filter namespace (what MetadataMatcher.filter names). */
export type DynamicMetadata = Readonly<Record<string, JsonObject>>;

const regexCache = new Map<string, RE2JS>();

export function re2(pattern: string): RE2JS {
  let re = regexCache.get(pattern);
  if (!re) {
    re = RE2JS.compile(pattern);
    regexCache.set(pattern, re);
  }
  return re;
}

/** Envoy's safe_regex matches the whole value. */
export function regexMatches(m: RegexMatcher, value: string): boolean {
  return re2(m.regex).matches(value);
}

/** StringMatcher; `custom` extensions are not modelled and never match. */
export function stringMatches(m: StringMatcher, value: string): boolean {
  const p = m.matchPattern;
  if (p.case === 'safeRegex') return regexMatches(p.value, value);
  if (p.case === undefined || p.case === 'custom') return false;
  const v = m.ignoreCase ? value.toLowerCase() : value;
  const want = m.ignoreCase ? p.value.toLowerCase() : p.value;
  switch (p.case) {
    case 'exact':
      return v === want;
    case 'prefix':
      return v.startsWith(want);
    case 'suffix':
      return v.endsWith(want);
    case 'contains':
      return v.includes(want);
  }
}

/**
 * HeaderMatcher, as HeaderUtility::matchHeaders: a missing header matches only a presence
 * check (`present_match: false`, or inverted `present_match: true`), unless
 * treat_missing_header_as_empty makes it "".
 */
export function headerMatches(m: HeaderMatcher, headers: Headers): boolean {
  const spec = m.headerMatchSpecifier;
  const isPresence = spec.case === 'presentMatch' || spec.case === undefined;
  const present = spec.case === 'presentMatch' ? spec.value : true;
  let value = headers.get(m.name.toLowerCase());
  if (value === undefined) {
    if (isPresence) return m.invertMatch ? present : !present;
    if (!m.treatMissingHeaderAsEmpty) return false;
    value = '';
  }
  let match: boolean;
  switch (spec.case) {
    case undefined:
    case 'presentMatch':
      match = present;
      break;
    case 'exactMatch':
      match = spec.value === '' || value === spec.value;
      break;
    case 'prefixMatch':
      match = value.startsWith(spec.value);
      break;
    case 'suffixMatch':
      match = value.endsWith(spec.value);
      break;
    case 'containsMatch':
      match = value.includes(spec.value);
      break;
    case 'safeRegexMatch':
      match = regexMatches(spec.value, value);
      break;
    case 'stringMatch':
      match = stringMatches(spec.value, value);
      break;
    case 'rangeMatch': {
      const n = /^[+-]?\d+$/.test(value) ? BigInt(value) : undefined;
      match = n !== undefined && n >= spec.value.start && n < spec.value.end;
      break;
    }
  }
  return match !== m.invertMatch;
}

/** An IP as a bigint plus its family; undefined for anything that is not an IP. */
function ipBits(ip: string): { family: 4 | 6; bits: bigint } | undefined {
  const family = isIP(ip);
  if (family === 4) {
    return { family, bits: ip.split('.').reduce((acc, o) => (acc << 8n) | BigInt(Number(o)), 0n) };
  }
  if (family !== 6) return undefined;
  let text = ip.toLowerCase();
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4?.[1]) {
    const b = ipBits(v4[1])!.bits;
    text = `${text.slice(0, -v4[1].length)}${(b >> 16n).toString(16)}:${(b & 0xffffn).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const h = head === '' ? [] : head.split(':');
  const t = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? h : [...h, ...new Array<string>(8 - h.length - t.length).fill('0'), ...t];
  return { family: 6, bits: groups.reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g, 16)), 0n) };
}

/** The prefix length by which `range` contains `ip`, or -1. prefix_len unset means /0. */
export function cidrMatchLength(range: CidrRange, ip: string | undefined): number {
  if (ip === undefined) return -1;
  const a = ipBits(ip);
  const r = ipBits(range.addressPrefix);
  if (!a || !r || a.family !== r.family) return -1;
  const width = a.family === 4 ? 32 : 128;
  const len = Math.min(range.prefixLen ?? 0, width);
  const shift = BigInt(width - len);
  return a.bits >> shift === r.bits >> shift ? len : -1;
}

export const cidrContains = (range: CidrRange, ip: string | undefined): boolean => cidrMatchLength(range, ip) >= 0;

export function isLoopback(ip: string): boolean {
  return ip.startsWith('127.') || ip === '::1';
}

/** The value at `path` under `filter`, or undefined when any step is missing. */
function metadataValue(md: DynamicMetadata, m: MetadataMatcher): JsonValue | undefined {
  let v: JsonValue | undefined = md[m.filter];
  for (const seg of m.path) {
    if (seg.segment.case !== 'key' || v === null || typeof v !== 'object' || Array.isArray(v)) return undefined;
    v = v[seg.segment.value];
  }
  return v;
}

/** ValueMatcher over a JSON (google.protobuf.Value) value; undefined is Envoy's "kind not set". */
export function valueMatches(m: ValueMatcher, v: JsonValue | undefined): boolean {
  const p = m.matchPattern;
  switch (p.case) {
    case 'nullMatch':
      return v === null;
    case 'presentMatch':
      return p.value === (v !== undefined);
    case 'boolMatch':
      return typeof v === 'boolean' && v === p.value;
    case 'stringMatch':
      return typeof v === 'string' && stringMatches(p.value, v);
    case 'doubleMatch': {
      if (typeof v !== 'number') return false;
      const d = p.value.matchPattern;
      if (d.case === 'exact') return v === d.value;
      if (d.case === 'range') return v >= d.value.start && v < d.value.end;
      return false;
    }
    case 'listMatch': {
      const inner = p.value.matchPattern;
      return Array.isArray(v) && inner.case === 'oneOf' && v.some((e) => valueMatches(inner.value, e));
    }
    case 'orMatch':
      return p.value.valueMatchers.some((vm) => valueMatches(vm, v));
    case undefined:
      return false;
  }
}

export function metadataMatches(m: MetadataMatcher, md: DynamicMetadata): boolean {
  const matched = m.value !== undefined && valueMatches(m.value, metadataValue(md, m));
  return matched !== m.invert;
}

/** Path without query string and fragment, as Envoy's path matchers see it. */
export function pathOnly(path: string): string {
  const q = path.search(/[?#]/);
  return q >= 0 ? path.slice(0, q) : path;
}

const unpacked = new WeakMap<Any, unknown>();

/** anyUnpack memoized per Any (simulations run many requests over one config). */
export function unpack<D extends DescMessage>(any: Any | undefined, schema: D): MessageShape<D> | undefined {
  if (!any || any.typeUrl.slice(any.typeUrl.lastIndexOf('/') + 1) !== schema.typeName) return undefined;
  let m = unpacked.get(any) as MessageShape<D> | undefined;
  if (!m) {
    m = anyUnpack(any, schema);
    if (m) unpacked.set(any, m);
  }
  return m;
}

/** The fully qualified message name an Any carries. */
export const anyTypeName = (any: Any): string => any.typeUrl.slice(any.typeUrl.lastIndexOf('/') + 1);
