import type { Duration } from '@bufbuild/protobuf/wkt';
import {
  JwtAuthenticationSchema,
  type JwtProviderSchema,
  type JwtRequirementSchema,
} from '../../gen/envoy/extensions/filters/http/jwt_authn/v3/config_pb.js';
import type { HttpFilterSchema } from '../../gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager_pb.js';
import type { JWTRule } from '../../gen/security/v1beta1/request_authentication_pb.js';
import type { Config } from '../../config/index.js';
import { MeshError } from '../../util/errors.js';
import { buildClusterName } from '../../model/index.js';
import { durationFromMs, packAny, type Init } from '../common.js';

export const JWT_AUTHN_FILTER = 'envoy.filters.http.jwt_authn';
/** Where the filter writes a verified token's payload in its dynamic metadata; RBAC reads it there. */
export const JWT_PAYLOAD_METADATA_KEY = 'payload';
/** Claims Envoy splits on spaces before RBAC sees them (istiod always adds these two). */
const DEFAULT_SPACE_DELIMITED_CLAIMS = ['permission', 'scope'];
const DEFAULT_JWKS_TIMEOUT_MS = 5000;
const JWKS_CACHE_DURATION_MS = 5 * 60 * 1000;

type HttpFilterInit = Init<typeof HttpFilterSchema>;
type JwtProviderInit = Init<typeof JwtProviderSchema>;
type JwtRequirementInit = Init<typeof JwtRequirementSchema>;

export interface JwtAuthnOptions {
  /** istiod sets clear_route_cache on every proxy but sidecars (gateways, waypoints). */
  readonly clearRouteCache?: boolean;
}

interface JwksUri {
  readonly host: string;
  readonly port: number;
}

function parseJwksUri(uri: string, where: string): JwksUri {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw new MeshError('INVALID_ARGUMENT', `${where}.jwksUri: ${JSON.stringify(uri)} is not a URL`);
  }
  const defaultPort = url.protocol === 'http:' ? 80 : url.protocol === 'https:' ? 443 : undefined;
  if (defaultPort === undefined) {
    throw new MeshError('INVALID_ARGUMENT', `${where}.jwksUri: URI scheme ${JSON.stringify(url.protocol.slice(0, -1))} is not supported`);
  }
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return { host, port: url.port === '' ? defaultPort : Number(url.port) };
}

function spaceDelimitedClaims(claims: readonly string[]): string[] {
  return [...new Set([...claims, ...DEFAULT_SPACE_DELIMITED_CLAIMS])].sort();
}

/**
 * Where Envoy gets the keys. An inline `jwks` is used as is. For `jwksUri`, istiod's default
 * (PILOT_JWT_ENABLE_REMOTE_JWKS=false) fetches the JWKS itself and inlines it; meshpilot does not
 * fetch, so it takes istiod's `envoy` mode instead: Envoy fetches the URI through the
 * `outbound|<port>||<host>` cluster (which needs a ServiceEntry or Service for that host).
 */
function jwksSource(rule: JWTRule, where: string): NonNullable<JwtProviderInit['jwksSourceSpecifier']> {
  if (rule.jwks !== '') return { case: 'localJwks', value: { specifier: { case: 'inlineString', value: rule.jwks } } };
  if (rule.jwksUri === '') {
    throw new MeshError(
      'INVALID_ARGUMENT',
      `${where}: neither jwks nor jwksUri is set (OpenID discovery of the issuer's keys is not supported)`,
    );
  }
  const { host, port } = parseJwksUri(rule.jwksUri, where);
  const timeout: Duration = rule.timeout ?? durationFromMs(DEFAULT_JWKS_TIMEOUT_MS);
  return {
    case: 'remoteJwks',
    value: {
      httpUri: { uri: rule.jwksUri, httpUpstreamType: { case: 'cluster', value: buildClusterName('outbound', port, '', host) }, timeout },
      cacheDuration: durationFromMs(JWKS_CACHE_DURATION_MS),
    },
  };
}

function provider(rule: JWTRule, where: string, clearRouteCache: boolean): JwtProviderInit {
  return {
    issuer: rule.issuer,
    audiences: rule.audiences,
    forward: rule.forwardOriginalToken,
    forwardPayloadHeader: rule.outputPayloadToHeader,
    payloadInMetadata: JWT_PAYLOAD_METADATA_KEY,
    normalizePayloadInMetadata: { spaceDelimitedClaims: spaceDelimitedClaims(rule.spaceDelimitedClaims) },
    clearRouteCache,
    claimToHeaders: rule.outputClaimToHeaders.map((c) => ({ headerName: c.header, claimName: c.claim })),
    fromHeaders: rule.fromHeaders.map((h) => ({ name: h.name, valuePrefix: h.prefix })),
    fromParams: rule.fromParams,
    fromCookies: rule.fromCookies,
    jwksSourceSpecifier: jwksSource(rule, where),
  };
}

const requireProvider = (name: string): JwtRequirementInit => ({ requiresType: { case: 'providerName', value: name } });
const requiresAny = (requirements: JwtRequirementInit[]): JwtRequirementInit => ({
  requiresType: { case: 'requiresAny', value: { requirements } },
});
const requiresAll = (requirements: JwtRequirementInit[]): JwtRequirementInit => ({
  requiresType: { case: 'requiresAll', value: { requirements } },
});
const ALLOW_MISSING: JwtRequirementInit = { requiresType: { case: 'allowMissing', value: {} } };

/**
 * The requirement istiod puts on every path: a token, if present, must be valid for some provider;
 * no token at all passes (AuthorizationPolicy decides whether one is needed). One provider P:
 * `P OR allow_missing`. Several: `P1 OR P2 … OR (P1|missing AND P2|missing …)`; the AND rejects a
 * bad token in any provider's location, the plain ORs let a good token pass when providers share
 * a location (where the AND would fail on the others).
 */
function requirement(names: readonly string[]): JwtRequirementInit {
  const perProvider = names.map((n) => requiresAny([requireProvider(n), ALLOW_MISSING]));
  if (perProvider.length === 1 && perProvider[0]) return perProvider[0];
  return requiresAny([...names.map(requireProvider), requiresAll(perProvider)]);
}

/**
 * The jwt_authn filter of the RequestAuthentications that apply to a workload (istiod's authn
 * policy applier), or undefined when they have no JWT rule. One provider `origins-<i>` per rule,
 * rules sorted by issuer. istiod also adds its own `istio_authn` filter, an Istio proxy extension
 * that Envoy does not have, so it is left out.
 */
export function buildJwtAuthnFilter(
  ras: readonly Config<'RequestAuthentication'>[],
  opts: JwtAuthnOptions = {},
): HttpFilterInit | undefined {
  const rules = ras.flatMap((ra) =>
    ra.spec.jwtRules.map((rule, i) => ({ rule, where: `RequestAuthentication ${ra.meta.namespace}/${ra.meta.name} jwtRules[${i}]` })),
  );
  if (rules.length === 0) return undefined;
  // Stable, by issuer, so the output is deterministic whatever the input order.
  rules.sort((a, b) => (a.rule.issuer < b.rule.issuer ? -1 : a.rule.issuer > b.rule.issuer ? 1 : 0));
  const providers: Record<string, JwtProviderInit> = {};
  const names = rules.map((r, i) => {
    const name = `origins-${i}`;
    providers[name] = provider(r.rule, r.where, opts.clearRouteCache ?? false);
    return name;
  });
  const config = packAny(JwtAuthenticationSchema, {
    providers,
    rules: [{ match: { pathSpecifier: { case: 'prefix', value: '/' } }, requirementType: { case: 'requires', value: requirement(names) } }],
    bypassCorsPreflight: true,
  });
  return { name: JWT_AUTHN_FILTER, configType: { case: 'typedConfig', value: config } };
}
