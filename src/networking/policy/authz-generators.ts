import type { PermissionSchema, PrincipalSchema } from '../../gen/envoy/config/rbac/v3/rbac_pb.js';
import type { Init } from '../common.js';
import { JWT_AUTHN_FILTER, JWT_PAYLOAD_METADATA_KEY } from './jwt-authn.js';
import {
  cidrRange,
  headerMatcher,
  hostMatcher,
  metadataListOrValueMatcher,
  metadataValueMatcher,
  orValueMatcher,
  prefixMatch,
  quoteMeta,
  regexMatch,
  exactMatch,
  stringMatcherWithPrefix,
  stringOrMatcher,
  stringValueMatcher,
  suffixMatch,
  type StringMatcherInit,
  type ValueMatcherInit,
} from './matchers.js';
import { containsPathTemplate, sanitizePathTemplate, uriTemplateAny } from './uri-template.js';
import { MeshError } from '../../util/errors.js';

// One generator per Istio attribute, as istiod's authz/model/generator.go: a `perValue` generator
// turns each value into one matcher (values are OR-ed by the caller); a `whole` generator turns the
// whole value list into one matcher (JWT claims, whose list semantics live inside the matcher).

export type PermissionInit = Init<typeof PermissionSchema>;
export type PrincipalInit = Init<typeof PrincipalSchema>;

/** A value that cannot be expressed for this filter chain (HTTP-only on TCP, a bad IP …). */
export class AttributeError extends MeshError {
  constructor(key: string, message: string) {
    super('INVALID_ARGUMENT', `${key}: ${message}`);
    this.name = 'AttributeError';
  }
}

export type Generator<T> =
  | { readonly kind: 'perValue'; build(key: string, value: string, forTCP: boolean): T }
  | { readonly kind: 'whole'; build(key: string, values: readonly string[], forTCP: boolean): T };

const SPIFFE_PREFIX = 'spiffe://';

const perValue = <T>(build: (key: string, value: string, forTCP: boolean) => T): Generator<T> => ({ kind: 'perValue', build });
const whole = <T>(build: (key: string, values: readonly string[], forTCP: boolean) => T): Generator<T> => ({ kind: 'whole', build });

function httpOnly(key: string, forTCP: boolean): void {
  if (forTCP) throw new AttributeError(key, 'is HTTP only');
}

function cidr(key: string, value: string): ReturnType<typeof cidrRange> {
  try {
    return cidrRange(value);
  } catch (err) {
    throw new AttributeError(key, (err as Error).message);
  }
}

function port(key: string, value: string): number {
  if (!/^\d+$/.test(value) || Number(value) > 65535) throw new AttributeError(key, `invalid port ${JSON.stringify(value)}`);
  return Number(value);
}

const authenticated = (m: StringMatcherInit): PrincipalInit => ({ identifier: { case: 'authenticated', value: { principalName: m } } });
const metadataPrincipal = (m: ReturnType<typeof metadataValueMatcher>): PrincipalInit => ({ identifier: { case: 'metadata', value: m } });
export const principalAnd = (ids: PrincipalInit[]): PrincipalInit => ({ identifier: { case: 'andIds', value: { ids } } });
export const principalOr = (ids: PrincipalInit[]): PrincipalInit => ({ identifier: { case: 'orIds', value: { ids } } });
export const principalNot = (id: PrincipalInit): PrincipalInit => ({ identifier: { case: 'notId', value: id } });
export const principalAny = (): PrincipalInit => ({ identifier: { case: 'any', value: true } });
export const permissionAnd = (rules: PermissionInit[]): PermissionInit => ({ rule: { case: 'andRules', value: { rules } } });
export const permissionOr = (rules: PermissionInit[]): PermissionInit => ({ rule: { case: 'orRules', value: { rules } } });
export const permissionNot = (rule: PermissionInit): PermissionInit => ({ rule: { case: 'notRule', value: rule } });
export const permissionAny = (): PermissionInit => ({ rule: { case: 'any', value: true } });

/** `[name]` → `name`. */
function nameInBrackets(key: string, s: string): string {
  if (!s.startsWith('[') || !s.endsWith(']')) throw new AttributeError(key, `expecting format [<NAME>], but found ${s}`);
  return s.slice(1, -1);
}

/** `[a][b]` → `[a, b]` (a nested claim); anything else must be one `[name]`. */
function namesInNestedBrackets(key: string, s: string): string[] {
  const names: string[] = [];
  let begin = 0;
  while (begin < s.length) {
    const end = s[begin] === '[' ? s.indexOf(']', begin + 1) : -1;
    if (end === -1 || s.slice(begin + 1, end).includes('[')) return [nameInBrackets(key, s)];
    names.push(s.slice(begin + 1, end));
    begin = end + 1;
  }
  return names;
}

const jwtClaimMatcher = (claim: string, m: StringMatcherInit): PrincipalInit =>
  metadataPrincipal(metadataValueMatcher(JWT_AUTHN_FILTER, [JWT_PAYLOAD_METADATA_KEY, claim], stringValueMatcher(m)));
const jwtListClaimMatcher = (claims: readonly string[], v: ValueMatcherInit): PrincipalInit =>
  metadataPrincipal(metadataListOrValueMatcher(JWT_AUTHN_FILTER, [JWT_PAYLOAD_METADATA_KEY, ...claims], v));

const MATCH_ANY = (): StringMatcherInit => regexMatch('.+');

/**
 * `<iss>/<sub>` (split at the last `/`, an issuer may be a URL) as `iss AND sub` on the JWT
 * payload, with istiod's wildcard rules: `*` anything; `*x` / `x*` on the issuer or subject side.
 */
function requestPrincipal(value: string): PrincipalInit {
  const idx = value.lastIndexOf('/');
  const found = idx >= 0;
  const iss = found ? value.slice(0, idx) : value;
  const sub = found ? value.slice(idx + 1) : '';
  let matchIss: StringMatcherInit;
  let matchSub: StringMatcherInit;
  if (value === '*') {
    matchIss = MATCH_ANY();
    matchSub = MATCH_ANY();
  } else if (value.startsWith('*')) {
    if (found) {
      matchIss = iss === '*' ? MATCH_ANY() : suffixMatch(iss.slice(1));
      matchSub = exactMatch(sub);
    } else {
      matchIss = MATCH_ANY();
      matchSub = suffixMatch(value.slice(1));
    }
  } else if (value.endsWith('*')) {
    if (found) {
      matchIss = exactMatch(iss);
      matchSub = sub === '*' ? MATCH_ANY() : prefixMatch(sub.slice(0, -1));
    } else {
      matchIss = prefixMatch(value.slice(0, -1));
      matchSub = MATCH_ANY();
    }
  } else {
    matchIss = exactMatch(iss);
    matchSub = exactMatch(sub);
  }
  return principalAnd([jwtClaimMatcher('iss', matchIss), jwtClaimMatcher('sub', matchSub)]);
}

/** Principal (`<td>/ns/<ns>/sa/<sa>`) of the peer certificate, with `*` wildcards. */
export const srcPrincipal = perValue<PrincipalInit>((_k, v) => authenticated(stringMatcherWithPrefix(v, SPIFFE_PREFIX)));

export const srcNamespace = perValue<PrincipalInit>((_k, v) =>
  authenticated(regexMatch(`.*/ns/${v.split('*').map(quoteMeta).join('.*')}/.*`)),
);

/** `<sa>` (in the policy's namespace) or `<ns>/<sa>`. */
export const srcServiceAccount = (policyNamespace: string): Generator<PrincipalInit> =>
  perValue((_k, v) => {
    const slash = v.indexOf('/');
    const ns = slash >= 0 ? v.slice(0, slash) : policyNamespace;
    const sa = slash >= 0 ? v.slice(slash + 1) : v;
    return authenticated(regexMatch(`spiffe://.+/ns/${quoteMeta(ns)}/(.+/|)sa/${quoteMeta(sa)}(/.+)?`));
  });

export const srcTrustDomain = perValue<PrincipalInit>((_k, v) => {
  if (v === '*') return authenticated(prefixMatch(SPIFFE_PREFIX));
  if (!v.includes('*')) return authenticated(prefixMatch(`${SPIFFE_PREFIX}${v}/`));
  const star = v.indexOf('*');
  return authenticated(regexMatch(`spiffe://${quoteMeta(v.slice(0, star))}[^/]*${quoteMeta(v.slice(star + 1))}/.*`));
});

export const srcIp = perValue<PrincipalInit>((k, v) => ({ identifier: { case: 'directRemoteIp', value: cidr(k, v) } }));
export const remoteIp = perValue<PrincipalInit>((k, v) => ({ identifier: { case: 'remoteIp', value: cidr(k, v) } }));

export const requestPrincipals = whole<PrincipalInit>((k, values, forTCP) => {
  httpOnly(k, forTCP);
  const ors = values.map(requestPrincipal);
  return ors.length === 1 && ors[0] ? ors[0] : principalOr(ors);
});

export const requestAudiences = whole<PrincipalInit>((k, values, forTCP) => {
  httpOnly(k, forTCP);
  return jwtListClaimMatcher(['aud'], stringOrMatcher(values));
});

export const requestPresenter = whole<PrincipalInit>((k, values, forTCP) => {
  httpOnly(k, forTCP);
  return jwtListClaimMatcher(['azp'], stringOrMatcher(values));
});

export const requestClaims = whole<PrincipalInit>((k, values, forTCP) => {
  httpOnly(k, forTCP);
  return jwtListClaimMatcher(namesInNestedBrackets(k, k.slice('request.auth.claims'.length)), stringOrMatcher(values));
});

export const requestHeader = perValue<PrincipalInit>((k, v, forTCP) => {
  httpOnly(k, forTCP);
  const name = nameInBrackets(k, k.slice('request.headers'.length));
  return { identifier: { case: 'header', value: headerMatcher(name, v) } };
});

export const destIp = perValue<PermissionInit>((k, v) => ({ rule: { case: 'destinationIp', value: cidr(k, v) } }));
export const destPort = perValue<PermissionInit>((k, v) => ({ rule: { case: 'destinationPort', value: port(k, v) } }));
export const connSni = perValue<PermissionInit>((_k, v) => ({ rule: { case: 'requestedServerName', value: stringMatcherWithPrefix(v) } }));

export const hosts = perValue<PermissionInit>((k, v, forTCP) => {
  httpOnly(k, forTCP);
  return { rule: { case: 'header', value: hostMatcher(':authority', v) } };
});

export const methods = perValue<PermissionInit>((k, v, forTCP) => {
  httpOnly(k, forTCP);
  return { rule: { case: 'header', value: headerMatcher(':method', v) } };
});

/** Paths: `{*}` / `{**}` templates become Envoy's uri_template matcher, others a url_path matcher. */
export const paths = perValue<PermissionInit>((k, v, forTCP) => {
  httpOnly(k, forTCP);
  if (containsPathTemplate(v)) {
    return { rule: { case: 'uriTemplate', value: { name: 'uri-template', typedConfig: uriTemplateAny(sanitizePathTemplate(v)) } } };
  }
  return { rule: { case: 'urlPath', value: { rule: { case: 'path', value: stringMatcherWithPrefix(v) } } } };
});

/**
 * `experimental.envoy.filters.<filter>[<key>]`: dynamic metadata of another filter. A value in
 * brackets `[v]` matches a list containing v.
 */
export const envoyFilterMetadata = whole<PermissionInit>((k, values) => {
  const inner = k.slice('experimental.'.length).replace(/\]$/, '');
  const open = inner.indexOf('[');
  if (open < 0) throw new AttributeError(k, 'invalid key');
  const matchers = values.map((v): ValueMatcherInit => {
    if (v.startsWith('[') && v.endsWith(']')) {
      const one = stringValueMatcher(stringMatcherWithPrefix(v.replace(/^[[\]]+|[[\]]+$/g, '')));
      return { matchPattern: { case: 'listMatch', value: { matchPattern: { case: 'oneOf', value: one } } } };
    }
    return stringValueMatcher(stringMatcherWithPrefix(v));
  });
  return {
    rule: { case: 'metadata', value: metadataValueMatcher(inner.slice(0, open), [inner.slice(open + 1)], orValueMatcher(matchers)) },
  };
});
