import type { JsonObject } from '@bufbuild/protobuf';
import type { Any } from '@bufbuild/protobuf/wkt';
import { FilterConfigSchema, type Route, type VirtualHost } from '../gen/envoy/config/route/v3/route_components_pb.js';
import type { RouteConfiguration } from '../gen/envoy/config/route/v3/route_pb.js';
import type { HTTPFault } from '../gen/envoy/extensions/filters/http/fault/v3/fault_pb.js';
import type {
  JwtAuthentication,
  JwtProvider,
  JwtRequirement,
  PerRouteConfig,
} from '../gen/envoy/extensions/filters/http/jwt_authn/v3/config_pb.js';
import { FractionalPercent_DenominatorType, type FractionalPercent } from '../gen/envoy/type/v3/percent_pb.js';
import type { HttpRequest } from './context.js';
import { anyTypeName, headerMatches, unpack } from './matchers.js';
import { routeMatches } from './route-match.js';

/** The dynamic metadata namespace jwt_authn writes verified payloads under. */
export const JWT_AUTHN_NAMESPACE = 'envoy.filters.http.jwt_authn';

/** Where per-filter overrides can sit: route, virtual host, route configuration. */
export interface RouteScope {
  readonly rc: RouteConfiguration | undefined;
  readonly vh: VirtualHost | undefined;
  readonly route: Route | undefined;
}

export type PerFilter = { kind: 'none' } | { kind: 'disabled' } | { kind: 'config'; any: Any };

/**
 * typed_per_filter_config for a filter (by its HCM name): route, then virtual host, then route
 * configuration. A FilterConfig wrapper may disable the filter for that scope.
 */
export function perFilterConfig(name: string, s: RouteScope): PerFilter {
  const any = s.route?.typedPerFilterConfig[name] ?? s.vh?.typedPerFilterConfig[name] ?? s.rc?.typedPerFilterConfig[name];
  if (!any) return { kind: 'none' };
  if (anyTypeName(any) !== FilterConfigSchema.typeName) return { kind: 'config', any };
  const fc = unpack(any, FilterConfigSchema);
  if (!fc || fc.disabled) return { kind: 'disabled' };
  return fc.config ? { kind: 'config', any: fc.config } : { kind: 'none' };
}

type TokenState = 'missing' | 'unknown-issuer' | 'bad-audience' | 'valid';

function audiencesOf(claims: JsonObject): string[] {
  const aud = claims['aud'];
  if (typeof aud === 'string') return [aud];
  return Array.isArray(aud) ? aud.filter((a): a is string => typeof a === 'string') : [];
}

/** The token's state for a provider: its issuer must be the provider's, its audience allowed. */
function tokenState(p: JwtProvider | undefined, claims: JsonObject | undefined, audiences?: readonly string[]): TokenState {
  if (!claims) return 'missing';
  if (!p) return 'unknown-issuer';
  if (p.issuer !== '' && claims['iss'] !== p.issuer) return 'unknown-issuer';
  const allowed = audiences ?? p.audiences;
  if (allowed.length > 0 && !audiencesOf(claims).some((a) => allowed.includes(a))) return 'bad-audience';
  return 'valid';
}

interface JwtCtx {
  readonly cfg: JwtAuthentication;
  readonly claims: JsonObject | undefined;
}

/** A token that no configured provider's issuer claims counts as missing (Envoy: JwtUnknownIssuer). */
function requirementPasses(r: JwtRequirement, c: JwtCtx): TokenState {
  const t = r.requiresType;
  switch (t.case) {
    case 'providerName':
      return tokenState(c.cfg.providers[t.value], c.claims);
    case 'providerAndAudiences':
      return tokenState(c.cfg.providers[t.value.providerName], c.claims, t.value.audiences);
    case 'allowMissingOrFailed':
      return 'valid';
    case 'allowMissing': {
      const states = Object.values(c.cfg.providers).map((p) => tokenState(p, c.claims));
      return states.includes('valid') || states.every((s) => s === 'missing' || s === 'unknown-issuer') ? 'valid' : 'bad-audience';
    }
    case 'requiresAny': {
      const states = t.value.requirements.map((x) => requirementPasses(x, c));
      return states.includes('valid') ? 'valid' : (states[states.length - 1] ?? 'missing');
    }
    case 'requiresAll':
      return t.value.requirements.map((x) => requirementPasses(x, c)).find((s) => s !== 'valid') ?? 'valid';
    case undefined:
      return 'valid';
  }
}

function normalizedPayload(p: JwtProvider, claims: JsonObject): JsonObject {
  const out: JsonObject = { ...claims };
  for (const name of p.normalizePayloadInMetadata?.spaceDelimitedClaims ?? []) {
    const v = out[name];
    if (typeof v === 'string') out[name] = v.split(' ').filter((s) => s !== '');
  }
  return out;
}

export interface JwtOutcome {
  /** 401 (no or bad token), 403 (audience not allowed) when the requirement fails. */
  readonly status?: number;
  /** Payloads of the providers the token is valid for, by payload_in_metadata key. */
  readonly metadata?: JsonObject;
}

/**
 * jwt_authn: the requirement is the per-route one (PerRouteConfig), else the first rule whose
 * route match fits; none means the filter does nothing. `claims` stands for a token with a valid
 * signature: which providers accept it is decided by issuer and audiences.
 */
export function evaluateJwt(
  cfg: JwtAuthentication,
  perRoute: PerRouteConfig | undefined,
  req: HttpRequest,
  claimsIn: Readonly<Record<string, unknown>> | undefined,
): JwtOutcome {
  let requirement: JwtRequirement | undefined;
  if (perRoute) {
    const s = perRoute.requirementSpecifier;
    if (s.case === 'disabled' && s.value) return {};
    if (s.case === 'requirementName') requirement = cfg.requirementMap[s.value];
  } else {
    const rule = cfg.rules.find((r) => routeMatches(r.match, req));
    const t = rule?.requirementType;
    requirement = t?.case === 'requires' ? t.value : t?.case === 'requirementName' ? cfg.requirementMap[t.value] : undefined;
  }
  if (!requirement) return {};
  const claims = claimsIn === undefined ? undefined : (JSON.parse(JSON.stringify(claimsIn)) as JsonObject);
  const state = requirementPasses(requirement, { cfg, claims });
  if (state !== 'valid') return { status: state === 'bad-audience' ? 403 : 401 };
  if (!claims) return {};
  const metadata: JsonObject = {};
  for (const p of Object.values(cfg.providers)) {
    if (p.payloadInMetadata !== '' && tokenState(p, claims) === 'valid') metadata[p.payloadInMetadata] = normalizedPayload(p, claims);
  }
  return Object.keys(metadata).length > 0 ? { metadata } : {};
}

function percentOf(p: FractionalPercent | undefined): number {
  if (!p) return 0;
  const denom =
    p.denominator === FractionalPercent_DenominatorType.MILLION
      ? 1e6
      : p.denominator === FractionalPercent_DenominatorType.TEN_THOUSAND
        ? 1e4
        : 100;
  return Math.min(100, (p.numerator / denom) * 100);
}

export interface FaultOutcome {
  readonly status: number;
  readonly percent: number;
  /** gRPC aborts answer HTTP 200 with grpc-status. */
  readonly grpcStatus?: number;
}

/** The abort a fault filter would apply to this request, if it targets it (headers, cluster, nodes). */
export function faultAbort(f: HTTPFault, req: HttpRequest, cluster: string | undefined): FaultOutcome | undefined {
  const abort = f.abort;
  if (!abort) return undefined;
  if (!f.headers.every((h) => headerMatches(h, req.headers))) return undefined;
  if (f.upstreamCluster !== '' && f.upstreamCluster !== cluster) return undefined;
  if (f.downstreamNodes.length > 0 && !f.downstreamNodes.includes(req.headers.get('x-envoy-downstream-service-node') ?? ''))
    return undefined;
  const percent = percentOf(abort.percentage);
  const e = abort.errorType;
  if (e.case === 'httpStatus') return { status: e.value, percent };
  if (e.case === 'grpcStatus') return { status: 200, percent, grpcStatus: e.value };
  return undefined;
}
