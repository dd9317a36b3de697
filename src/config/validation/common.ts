/**
 * Checks shared by the per-kind validators. Rules and messages follow istiod's
 * pkg/config/validation (and pkg/config/labels), so users see what istioctl would tell them.
 * Each check returns an error message or undefined.
 */
import { isIP } from 'node:net';
import type { Duration } from '@bufbuild/protobuf/wkt';
import { RE2JS } from 're2js';
import { field, index, key, type Issues } from './issues.js';

const DNS1123_LABEL_FMT = '[a-zA-Z0-9](?:[-a-zA-Z0-9]*[a-zA-Z0-9])?';
const DNS1123_LABEL = new RegExp(`^${DNS1123_LABEL_FMT}$`);
const WILDCARD_LABEL = new RegExp(`^(?:\\*|(?:\\*|\\*-)?${DNS1123_LABEL_FMT})$`);
// Kubernetes object names are lower-case only (istio's own label check allows upper case).
const K8S_LABEL = /^[a-z0-9](?:[-a-z0-9]*[a-z0-9])?$/;
const K8S_SUBDOMAIN = /^[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*$/;
const QUALIFIED_NAME = '(?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
const TAG_KEY = new RegExp(`^(${DNS1123_LABEL_FMT}(?:\\.${DNS1123_LABEL_FMT})*/)?(${QUALIFIED_NAME})$`);
const TAG_VALUE = new RegExp(`^(?:${QUALIFIED_NAME})?$`);

export const isDns1123Label = (s: string): boolean => s.length <= 63 && DNS1123_LABEL.test(s);
export const isK8sLabel = (s: string): boolean => s.length <= 63 && K8S_LABEL.test(s);
export const isK8sSubdomain = (s: string): boolean => s.length <= 253 && K8S_SUBDOMAIN.test(s);
export const isIPAddress = (s: string): boolean => isIP(s) !== 0;

function dnsPreconditions(name: string): string | undefined {
  if (name.length > 255) return `domain name "${name}" too long (max 255)`;
  if (name.length === 0) return 'empty domain name not allowed';
  return undefined;
}

/** Checks the labels of `domain`; messages name `shown` (the whole name the user wrote). */
function dns1123Labels(domain: string, shown = domain): string | undefined {
  const parts = domain.split('.');
  const tld = parts[parts.length - 1] ?? '';
  if (/^[+-]?\d+$/.test(tld)) return `domain name "${shown}" invalid (top level domain "${tld}" cannot be all-numeric)`;
  for (let i = 0; i < parts.length; i++) {
    const label = parts[i] ?? '';
    if (i === parts.length - 1 && label === '') return undefined; // trailing dot: `istio.io.`
    if (!isDns1123Label(label)) return `domain name "${shown}" invalid (label "${label}" invalid)`;
  }
  return undefined;
}

/** A fully-qualified (or short) DNS name without wildcards. */
export function checkFQDN(fqdn: string): string | undefined {
  return dnsPreconditions(fqdn) ?? dns1123Labels(fqdn);
}

/** A DNS name that may start with a wildcard label: `*`, `*.foo.com`, `reviews`, `a.b.svc`. */
export function checkWildcardDomain(domain: string): string | undefined {
  const pre = dnsPreconditions(domain);
  if (pre) return pre;
  const dot = domain.indexOf('.');
  const first = dot < 0 ? domain : domain.slice(0, dot);
  if (first.length > 63 || !WILDCARD_LABEL.test(first)) return `domain name "${domain}" invalid (label "${first}" invalid)`;
  return dot < 0 ? undefined : dns1123Labels(domain.slice(dot + 1), domain);
}

export function checkPartialWildcard(host: string): string | undefined {
  return host.includes('*') && host.length !== 1 && !host.startsWith('*.') ? `partial wildcard "${host}" not allowed` : undefined;
}

/** Whether two hostnames overlap (istio host.Name.Matches): one definition, shared with push scoping. */
export { hostsOverlap } from '../hosts.js';

export function checkPort(port: number): string | undefined {
  return Number.isInteger(port) && port >= 1 && port <= 65535 ? undefined : `port number ${port} must be in the range 1..65535`;
}

export function checkPortName(name: string): string | undefined {
  return isDns1123Label(name) ? undefined : `invalid port name: ${name}`;
}

/** Istio protocol names, matched case-insensitively (istio pkg/config/protocol). */
const PROTOCOLS = new Set(['tcp', 'udp', 'grpc', 'grpc-web', 'http', 'http_proxy', 'http2', 'https', 'tls', 'mongo', 'redis', 'mysql']);
export const parseProtocol = (p: string): string | undefined => (PROTOCOLS.has(p.toLowerCase()) ? p.toUpperCase() : undefined);
export const isHTTPProtocol = (p: string | undefined): boolean =>
  p === 'HTTP' || p === 'HTTP2' || p === 'HTTP_PROXY' || p === 'GRPC' || p === 'GRPC-WEB';
export const isTLSProtocol = (p: string | undefined): boolean => p === 'HTTPS' || p === 'TLS';
/** istio protocol.Instance.IsTCP: the protocols carried over plain TCP listeners. */
export const isTCPProtocol = (p: string | undefined): boolean =>
  p === 'TCP' || p === 'HTTPS' || p === 'TLS' || p === 'MONGO' || p === 'REDIS' || p === 'MYSQL';

/** Empty means "sniff the protocol" and is allowed. */
export function checkProtocol(protocol: string): string | undefined {
  return protocol === '' || parseProtocol(protocol) ? undefined : `unsupported protocol: ${protocol}`;
}

export function checkIPSubnet(subnet: string): string | undefined {
  const parts = subnet.split('/');
  if (parts.length === 2) {
    const [ip = '', bits = ''] = parts;
    const family = isIP(ip);
    const max = family === 4 ? 32 : 128;
    if (family === 0 || !/^\d{1,3}$/.test(bits) || Number(bits) > max) return `${subnet} is not a valid CIDR block`;
    return undefined;
  }
  return isIPAddress(subnet) ? undefined : `${subnet} is not a valid IP`;
}

export function checkUnixAddress(addr: string): string | undefined {
  if (addr.length === 0) return 'unix address must not be empty';
  if (addr.startsWith('@')) return undefined; // abstract socket
  if (!addr.startsWith('/') || addr.endsWith('/')) return `${addr} is not an absolute path to a file`;
  return undefined;
}

const NANOS_PER_MS = 1_000_000n;

/** istiod's ValidateDuration: at least 1ms, and a whole number of milliseconds. */
export function checkDuration(d: Duration): string | undefined {
  const nanos = d.seconds * 1_000_000_000n + BigInt(d.nanos);
  if (nanos < NANOS_PER_MS) return 'duration must be greater than 1ms';
  if (nanos % NANOS_PER_MS !== 0n) return 'only durations to ms precision are supported';
  return undefined;
}

export function checkDurationField(issues: Issues, path: string, d: Duration | undefined): void {
  if (d) issues.check(path, checkDuration(d));
}

/** A whole percent 0..100 (int32 fields such as maxEjectionPercent). */
export function checkPercent(value: number): string | undefined {
  return value >= 0 && value <= 100 ? undefined : `percentage ${value} is not in range 0..100`;
}

/** istio.networking.v1alpha3.Percent: 0, or 0.0001..100. */
export function checkPercentage(value: number): string | undefined {
  return value < 0 || value > 100 || (value > 0 && value < 0.0001)
    ? `percentage ${value} is neither 0.0, nor in range [0.0001, 100.0]`
    : undefined;
}

/** Kubernetes-style label keys and values (istio labels.Instance.Validate). */
export function checkLabels(issues: Issues, path: string, labels: Readonly<Record<string, string>>): void {
  for (const [k, v] of Object.entries(labels)) {
    const m = TAG_KEY.exec(k);
    if (!m) issues.add(key(path, k), `invalid tag key: "${k}"`);
    else if (m[1] !== undefined && m[1].length - 1 > 253) issues.add(key(path, k), `invalid tag key: "${k}" (DNS prefix is too long)`);
    else if ((m[2] ?? '').length > 63) issues.add(key(path, k), `invalid tag key: "${k}" (name is too long)`);
    if (!TAG_VALUE.test(v)) issues.add(key(path, k), `invalid tag value: "${v}"`);
  }
}

/** istiod's warning for a selector without labels (it selects every workload of the namespace). */
export const EMPTY_SELECTOR_WARNING = 'workload selector specified without labels';

/** The same warning for the networking kinds' own (alpha) selector: Sidecar, ServiceEntry, EnvoyFilter. */
export const alphaSelectorWarning = (kind: string): string =>
  `${kind}: ${EMPTY_SELECTOR_WARNING}, will be applied to all services in namespace`;

/**
 * Workload selectors may not use wildcards or empty keys. A selector without labels is only a
 * warning (`emptyWarning`, istiod's text for the kind), at the selector itself.
 */
export function checkSelectorLabels(
  issues: Issues,
  path: string,
  labels: Readonly<Record<string, string>>,
  emptyWarning: string = EMPTY_SELECTOR_WARNING,
): void {
  if (Object.keys(labels).length === 0) issues.warn(path.slice(0, path.lastIndexOf('.')), emptyWarning);
  for (const [k, v] of Object.entries(labels)) {
    if (k === '') issues.add(path, `empty key is not supported in selector: "${k}=${v}"`);
    if (k.includes('*') || v.includes('*')) issues.add(key(path, k), `wildcard is not supported in selector: "${k}=${v}"`);
  }
}

const MAX_REGEX_LENGTH = 1024;
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Regexes go to Envoy (RE2) and to proxyless gRPC clients (re2-wasm), and an invalid one
 * crashes grpc-js-xds, so every regex must compile as RE2 before it reaches the store.
 */
export function checkRegex(re: string): string | undefined {
  if (re.length > MAX_REGEX_LENGTH) return `regex is too large, max length allowed is ${MAX_REGEX_LENGTH}`;
  if (LONE_SURROGATE.test(re)) return 'regex contains an unpaired UTF-16 surrogate';
  try {
    RE2JS.compile(re);
    return undefined;
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    return `${msg}; Istio uses RE2 style regex-based match (https://github.com/google/re2/wiki/Syntax)`;
  }
}

export interface StringMatchLike {
  readonly matchType:
    { readonly case: 'exact' | 'prefix' | 'regex'; readonly value: string } | { readonly case: undefined; readonly value?: undefined };
}

/** A StringMatch: regexes must compile; an empty prefix is allowed only where Envoy allows it (uri). */
export function checkStringMatch(issues: Issues, path: string, m: StringMatchLike | undefined, allowEmptyPrefix = false): void {
  if (!m) return;
  const t = m.matchType;
  if (t.case === 'prefix' && t.value === '' && !allowEmptyPrefix)
    issues.add(field(path, 'prefix'), 'prefix string match should not be empty');
  if (t.case === 'regex') {
    if (t.value === '') issues.add(field(path, 'regex'), 'regex string match should not be empty');
    else issues.check(field(path, 'regex'), checkRegex(t.value));
  }
}

const HEADER_NAME = /^[-_A-Za-z0-9]+$/;
const JWT_CLAIM_PREFIX = '@request.auth.claims';

export const isJwtClaimRoute = (name: string): boolean =>
  name.startsWith(`${JWT_CLAIM_PREFIX}.`) || name.startsWith(`${JWT_CLAIM_PREFIX}[`);

export function checkHeaderName(name: string, allowJwtClaim = false): string | undefined {
  if (name === '') return 'header name cannot be empty';
  if (allowJwtClaim && isJwtClaimRoute(name)) return undefined;
  return HEADER_NAME.test(name) ? undefined : `header name ${name} is not a valid header name`;
}

// eslint-disable-next-line no-control-regex
const HEADER_VALUE = /^[^\u0000-\u0008\u000A-\u001F\u007F]*$/;

/** Envoy header values: no control characters, and `%` only as `%%` or a `%VARIABLE%` expression. */
export function checkHeaderValue(value: string): string | undefined {
  if (!HEADER_VALUE.test(value)) return `header value configuration ${value} is invalid`;
  for (let i = 0; i < value.length; i++) {
    if (value[i] !== '%') continue;
    if (value[i + 1] === '%') {
      i++;
      continue;
    }
    const end = value.indexOf('%', i + 1);
    if (end < 0 || end === i + 1)
      return `header value configuration: invalid use of "%" in ${JSON.stringify(value)} (use "%%" for a literal %)`;
    i = end;
  }
  return undefined;
}

const isInternalHeader = (h: string): boolean => h.startsWith(':') || h.toLowerCase() === 'host';
export const isAuthorityHeader = (h: string): boolean => h.toLowerCase() === ':authority' || h.toLowerCase() === 'host';

export interface HeaderOperationsLike {
  readonly set: { readonly [k: string]: string };
  readonly add: { readonly [k: string]: string };
  readonly remove: readonly string[];
}

/** Request headers may set the authority; response headers and removals may touch no pseudo-header. */
export function checkHeaderOperations(issues: Issues, path: string, ops: HeaderOperationsLike | undefined, request: boolean): void {
  if (!ops) return;
  for (const op of ['set', 'add'] as const) {
    for (const [name, value] of Object.entries(ops[op])) {
      const p = key(field(path, op), name);
      if (name === '') issues.add(p, 'header name cannot be empty');
      else if (request ? isInternalHeader(name) && !isAuthorityHeader(name) : name.toLowerCase() === 'host' || isInternalHeader(name))
        issues.add(
          p,
          name.toLowerCase() === 'host'
            ? `invalid header "${name}": cannot set Host header`
            : `invalid header "${name}": header cannot have ":" prefix`,
        );
      issues.check(p, checkHeaderValue(value));
    }
  }
  ops.remove.forEach((name, i) => {
    const p = index(field(path, 'remove'), i);
    if (name === '') issues.add(p, 'header name cannot be empty');
    else if (name.toLowerCase() === 'host') issues.add(p, `invalid header "${name}": cannot set Host header`);
    else if (isInternalHeader(name)) issues.add(p, `invalid header "${name}": header cannot have ":" prefix`);
  });
}

/**
 * exportTo entries: `.` (own namespace), `*` (everyone), a namespace, or `~` (no one; ServiceEntry only).
 */
export function checkExportTo(issues: Issues, path: string, namespace: string, exportTo: readonly string[], allowNone: boolean): void {
  const seen = new Set<string>();
  exportTo.forEach((e, i) => {
    const p = index(path, i);
    const k = e === '.' ? namespace : e;
    if (seen.has(k)) {
      issues.add(
        p,
        k !== e ? `duplicate entries in exportTo: . and current namespace ${namespace}` : `duplicate entries in exportTo for entry ${e}`,
      );
      return;
    }
    if (!(e === '*' || e === '.' || (e === '~' && allowNone) || isK8sLabel(e))) {
      issues.add(p, `only "." , "*"${allowNone ? ', "~"' : ''} or a valid namespace name are allowed in exportTo, got "${e}"`);
      return;
    }
    seen.add(k);
  });
  if (seen.has('*') && exportTo.length > 1) issues.add(path, 'cannot have both public (*) and non-public exportTo values for a resource');
  if (seen.has('~') && exportTo.length > 1) issues.add(path, 'cannot export service entry to no one (~) and someone');
}

/**
 * Sidecar egress and Gateway server hosts: `namespace/dnsName` (Gateways also accept a bare dnsName
 * or IP). Namespace may be `*`, `.`, (sidecars) `~`, or a DNS label.
 */
export function checkNamespaceSlashHost(hostname: string, isGateway: boolean): string[] {
  const errs: string[] = [];
  const slash = hostname.indexOf('/');
  if (slash < 0) {
    if (isGateway) return hostPart(hostname, true);
    return ['host must be of form namespace/dnsName'];
  }
  const ns = hostname.slice(0, slash);
  const host = hostname.slice(slash + 1);
  if (ns === '' || host === '') return ['config namespace and dnsName in host entry cannot be empty'];
  if (ns !== '*' && ns !== '.' && !(ns === '~' && !isGateway) && !isDns1123Label(ns)) {
    errs.push(`invalid namespace value "${ns}" in ${isGateway ? 'gateway' : 'sidecar'}`);
  }
  return errs.concat(hostPart(host, isGateway));
}

function hostPart(hostname: string, isGateway: boolean): string[] {
  const errs: string[] = [];
  if (hostname !== '*' && !hostname.includes('.')) errs.push('short names (non FQDN) are not allowed');
  const err = checkWildcardDomain(hostname);
  if (err && !(isGateway && isIPAddress(hostname))) errs.push(err);
  const partial = checkPartialWildcard(hostname);
  if (partial) errs.push(partial);
  return errs;
}
