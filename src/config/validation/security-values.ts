/**
 * Value checks of AuthorizationPolicy fields and `when` conditions, following istio
 * pkg/config/security (ValidateIPs, ValidatePorts, CheckServiceAccount, CheckTrustDomainValues,
 * CheckValidPathTemplate, ValidateAttribute). Each check looks at one value and returns an error
 * message or undefined, so callers can name the exact list index.
 */
import { isIP } from 'node:net';

/** `source.ip`-style values: one address, or a CIDR prefix (netip.ParsePrefix rules). */
export function checkIPOrCIDR(v: string): string | undefined {
  const slash = v.indexOf('/');
  if (slash < 0) return isIP(v) === 0 ? `bad IP address (${v})` : undefined;
  const addr = v.slice(0, slash);
  const bits = v.slice(slash + 1);
  const family = isIP(addr);
  if (family === 0 || addr.includes('%')) return `bad CIDR range (${v}): invalid address "${addr}"`;
  // Decimal without leading zeros, as Go's netip requires.
  if (!/^(0|[1-9]\d{0,2})$/.test(bits) || Number(bits) > (family === 4 ? 32 : 128)) return `bad CIDR range (${v}): bad bits "${bits}"`;
  return undefined;
}

/** `ports`/`destination.port`: a decimal 0..65535 (strconv.ParseUint then a range check). */
export function checkAuthzPort(v: string): string | undefined {
  return /^\d+$/.test(v) && Number(v) <= 65535 ? undefined : `bad port (${v}): must be an integer in 0..65535`;
}

export const checkNotEmpty = (v: string): string | undefined => (v === '' ? 'empty value not allowed' : undefined);

/** One wildcard at most, and only at the start or end (exact, `foo*`, `*foo`, `*`). */
export function checkWildcardValue(v: string): string | undefined {
  if (v === '') return 'empty value not allowed';
  const count = v.split('*').length - 1;
  if (count > 1) return `at most one wildcard is allowed, found in "${v}"`;
  if (count === 1 && !v.startsWith('*') && !v.endsWith('*')) return `wildcard is only allowed at the start or end, found in "${v}"`;
  return undefined;
}

export function checkTrustDomain(v: string): string | undefined {
  return checkWildcardValue(v) ?? (v.includes('/') ? `trust domain must not contain '/', found "${v}"` : undefined);
}

/** At most this many serviceAccounts values per list (istiod's limit, also the CRD's maxItems). */
export const MAX_SERVICE_ACCOUNTS = 16;
const MAX_SERVICE_ACCOUNT_LENGTH = 320;

/** `serviceAccount` or `namespace/serviceAccount`, no wildcards. */
export function checkServiceAccount(v: string): string | undefined {
  if (v === '') return 'empty value not allowed';
  if (v.includes('*')) return `wildcard not allowed, found "${v}"`;
  const slashes = v.split('/').length - 1;
  if (slashes > 1) return `expected format 'serviceAccount' or 'namespace/serviceAccount', found "${v}"`;
  if (v.length > MAX_SERVICE_ACCOUNT_LENGTH) return `value cannot exceed ${MAX_SERVICE_ACCOUNT_LENGTH} characters, found "${v}"`;
  if (slashes === 1) {
    const [ns = '', sa = ''] = v.split('/');
    if (ns === '') return `expected format 'serviceAccount' or 'namespace/serviceAccount', found empty namespace "${v}"`;
    if (sa === '') return `expected format 'serviceAccount' or 'namespace/serviceAccount', found empty serviceAccount "${v}"`;
  }
  return undefined;
}

const MATCH_ONE = '{*}';
const MATCH_ANY = '{**}';
// RFC 3986 pchar, which Envoy's URI template matcher accepts in a literal segment.
const VALID_LITERAL = /^[a-zA-Z0-9\-._~%!$&'()+,;:@=]+$/;

/** Path templates: `{*}` one segment, `{**}` the rest (last operator only); no other braces. */
export function checkPathTemplate(path: string): string | undefined {
  const hasTemplate = path.includes(MATCH_ONE) || path.includes(MATCH_ANY);
  const trimmed = path.replace(/^\/+|\/+$/g, '');
  let seenAny = false;
  for (const glob of trimmed.split('/')) {
    if (glob === MATCH_ONE || glob === MATCH_ANY) {
      if (seenAny) return `invalid or unsupported path ${path}: {**} is not the last operator`;
      seenAny = glob === MATCH_ANY;
      continue;
    }
    if (glob.includes('{') || glob.includes('}'))
      return `invalid or unsupported path ${path}: contains '{' or '}' beyond a supported path template`;
    if (hasTemplate && !VALID_LITERAL.test(glob))
      return `invalid or unsupported path ${path}: contains segment "${glob}" with invalid string literal`;
  }
  return undefined;
}

/** Attributes istiod accepts in `when.key`, and how each one's values are checked. */
type ValueCheck = (v: string) => string | undefined;
const EXACT_KEYS: ReadonlyMap<string, ValueCheck> = new Map<string, ValueCheck>([
  ['source.ip', checkIPOrCIDR],
  ['remote.ip', checkIPOrCIDR],
  ['source.namespace', checkNotEmpty],
  ['source.serviceAccount', checkServiceAccount],
  ['source.principal', checkNotEmpty],
  ['source.trustDomain', checkWildcardValue],
  ['request.auth.principal', checkNotEmpty],
  ['request.auth.audiences', checkNotEmpty],
  ['request.auth.presenter', checkNotEmpty],
  ['destination.ip', checkIPOrCIDR],
  ['destination.port', (v) => checkNotEmpty(v) ?? checkAuthzPort(v)],
  ['connection.sni', checkNotEmpty],
]);
// Keys of the form `prefix[name]` (istiod's validateMapKey).
const MAP_KEY_PREFIXES = ['request.headers', 'request.auth.claims', 'experimental.envoy.filters.'];

/** Why `key` is not a usable `when.key`, or undefined when it is. */
export function checkAttributeKey(k: string): string | undefined {
  if (k === '') return '`key` must not be empty';
  if (EXACT_KEYS.has(k)) return undefined;
  if (MAP_KEY_PREFIXES.some((p) => k.startsWith(p))) {
    const open = k.indexOf('[');
    return k.endsWith(']') && open > 0 && open < k.length - 2 ? undefined : `bad key (${k}): should have format a[b]`;
  }
  if (k === 'destination.namespace') return `attribute ${k} is replaced by the metadata.namespace`;
  if (k.startsWith('destination.labels')) return `attribute ${k} is replaced by the workload selector`;
  if (k === 'destination.name' || k === 'destination.user') return `deprecated attribute ${k}: only supported in v1alpha1`;
  return `unknown attribute: ${k}`;
}

/** Checks one value of a `when` condition whose key is valid. */
export function checkAttributeValue(k: string, v: string): string | undefined {
  return (EXACT_KEYS.get(k) ?? checkNotEmpty)(v);
}
