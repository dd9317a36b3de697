import { isIPv4, isIPv6 } from 'node:net';

/**
 * PGV's well-known string formats. Envoy validates with PGV's C++ code and the rest of the world
 * with its Go code; where they differ these follow the C++ side (IPs as inet_pton reads them), and
 * email / uri / uri_ref (which C++ PGV does not implement) follow Go's shape approximately.
 */

/** RFC 1034 as PGV reads it: ≤ 253 chars, one trailing dot allowed, labels 1..63 of [A-Za-z0-9-] not starting/ending with '-'. */
export function hostnameProblem(host: string): string | undefined {
  if (host.length > 253) return 'hostname cannot exceed 253 characters';
  const trimmed = host.endsWith('.') ? host.slice(0, -1) : host;
  for (const label of trimmed.split('.')) {
    if (label.length === 0 || label.length > 63) return 'hostname labels must be 1 to 63 characters';
    if (label.startsWith('-') || label.endsWith('-')) return 'hostname labels cannot begin or end with a hyphen';
    if (!/^[A-Za-z0-9-]+$/.test(label)) return 'hostname labels can only contain letters, digits and hyphens';
  }
  return undefined;
}

export function isIpv4Address(s: string): boolean {
  return isIPv4(s);
}

/** inet_pton(AF_INET6): no brackets, no zone id. */
export function isIpv6Address(s: string): boolean {
  return !s.includes('%') && isIPv6(s);
}

export function isIpAddress(s: string): boolean {
  return isIpv4Address(s) || isIpv6Address(s);
}

const ATOM = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+";
const LOCAL_PART = new RegExp(`^(?:${ATOM}(?:\\.${ATOM})*|"(?:[^"\\\\\\r\\n]|\\\\.)*")$`);

/** RFC 5322 addr-spec (optionally `Name <addr>`), local part ≤ 64, whole ≤ 254, domain a hostname. */
export function emailProblem(input: string): string | undefined {
  const angle = /^[^<>]*<([^<>]+)>\s*$/.exec(input);
  const addr = angle ? angle[1]! : input;
  if (addr.length > 254) return 'email addresses cannot exceed 254 characters';
  const at = addr.lastIndexOf('@');
  if (at <= 0) return 'email address needs a local part and a domain';
  const local = addr.slice(0, at);
  if (local.length > 64) return 'email address local part cannot exceed 64 characters';
  if (!LOCAL_PART.test(local)) return 'email address local part is not a dot-atom or quoted string';
  return hostnameProblem(addr.slice(at + 1));
}

const URI_CHARS = /^(?:[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*$/;
const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:/;

/** RFC 3986 URI-reference: only URI characters, well-formed escapes, no ':' in a relative first segment. */
export function uriRefProblem(s: string): string | undefined {
  if (!URI_CHARS.test(s)) return 'value has characters a URI cannot hold (or a bad % escape)';
  if (!SCHEME.test(s)) {
    const firstSegment = s.split(/[/?#]/, 1)[0] ?? '';
    if (firstSegment.includes(':')) return 'first path segment of a relative URI cannot contain a colon';
  }
  return undefined;
}

/** RFC 3986 absolute URI: a URI-reference with a scheme. */
export function uriProblem(s: string): string | undefined {
  return uriRefProblem(s) ?? (SCHEME.test(s) ? undefined : 'value must be an absolute URI (with a scheme)');
}

const UUID = /^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$/;

export function isUuid(s: string): boolean {
  return UUID.test(s);
}

/**
 * validate.proto's KnownRegex patterns (RE2). Strict: RFC 7230 token (with an optional leading ':'
 * for pseudo-headers) for names, no control characters but tab for values. `strict: false` only
 * forbids NUL, CR and LF in both. The `+-.` range is PGV's own (it admits ',' too).
 */
export const HTTP_HEADER_NAME_STRICT = "^:?[0-9a-zA-Z!#$%&'*+-.^_|~\\x60]+$";
export const HTTP_HEADER_VALUE_STRICT = '^[^\\x00-\\x08\\x0A-\\x1F\\x7F]*$';
export const HTTP_HEADER_LOOSE = '^[^\\x00\\x0A\\x0D]*$';
