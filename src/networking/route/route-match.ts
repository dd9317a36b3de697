import { resolveGatewayName } from '../../model/index.js';
import type { Init } from '../common.js';
import type {
  HeaderMatcherSchema,
  QueryParameterMatcherSchema,
  RouteMatchSchema,
} from '../../gen/envoy/config/route/v3/route_components_pb.js';
import type { StringMatcherSchema } from '../../gen/envoy/type/matcher/v3/string_pb.js';
import type { HTTPMatchRequest, StringMatch } from '../../gen/networking/v1alpha3/virtual_service_pb.js';
import { labelsSubsetOf } from '../../config/index.js';

type RouteMatchInit = Init<typeof RouteMatchSchema>;
type HeaderMatcherInit = Init<typeof HeaderMatcherSchema>;
type StringMatcherInit = Init<typeof StringMatcherSchema>;
type QueryMatcherInit = Init<typeof QueryParameterMatcherSchema>;

/**
 * How header matchers are spelled. istiod emits `string_match`; gRPC C-core before ~1.53 NACKs it
 * ("Invalid route header matcher specified"), while both clients accept the older
 * `exact_match` / `prefix_match` / `safe_regex_match`. Proxyless output uses the legacy form.
 */
export type HeaderMatchStyle = 'string_match' | 'legacy';

export function stringMatcher(m: StringMatch): StringMatcherInit | undefined {
  switch (m.matchType.case) {
    case 'exact':
      return { matchPattern: { case: 'exact', value: m.matchType.value } };
    case 'prefix':
      return { matchPattern: { case: 'prefix', value: m.matchType.value } };
    case 'regex':
      return { matchPattern: { case: 'safeRegex', value: { regex: m.matchType.value } } };
    default:
      return undefined;
  }
}

/** Istio header StringMatch → Envoy HeaderMatcher; an empty StringMatch means "header present". */
export function headerMatcher(name: string, m: StringMatch, style: HeaderMatchStyle, invert = false): HeaderMatcherInit {
  const base = { name, ...(invert ? { invertMatch: true } : {}) };
  if (m.matchType.case === undefined) return { ...base, headerMatchSpecifier: { case: 'presentMatch', value: true } };
  if (style === 'string_match') {
    const sm = stringMatcher(m);
    return sm ? { ...base, headerMatchSpecifier: { case: 'stringMatch', value: sm } } : base;
  }
  switch (m.matchType.case) {
    case 'exact':
      return { ...base, headerMatchSpecifier: { case: 'exactMatch', value: m.matchType.value } };
    case 'prefix':
      return { ...base, headerMatchSpecifier: { case: 'prefixMatch', value: m.matchType.value } };
    case 'regex':
      return { ...base, headerMatchSpecifier: { case: 'safeRegexMatch', value: { regex: m.matchType.value } } };
  }
}

function queryMatcher(name: string, m: StringMatch): QueryMatcherInit {
  const sm = stringMatcher(m);
  return sm
    ? { name, queryParameterMatchSpecifier: { case: 'stringMatch', value: sm } }
    : { name, queryParameterMatchSpecifier: { case: 'presentMatch', value: true } };
}

/** Istio HTTPMatchRequest → Envoy RouteMatch (path, headers incl. pseudo-headers, query parameters). */
export function translateRouteMatch(m: HTTPMatchRequest | undefined, style: HeaderMatchStyle, gatewaySemantics = false): RouteMatchInit {
  const out: RouteMatchInit = { pathSpecifier: { case: 'prefix', value: '/' } };
  if (!m) return out;
  const uri = m.uri?.matchType;
  if (uri?.case === 'exact') out.pathSpecifier = { case: 'path', value: uri.value };
  // Gateway API prefixes match whole path segments (istiod: path_separated_prefix, trailing `/` dropped).
  else if (uri?.case === 'prefix' && gatewaySemantics && uri.value !== '/')
    out.pathSpecifier = { case: 'pathSeparatedPrefix', value: uri.value.replace(/\/$/, '') };
  else if (uri?.case === 'prefix') out.pathSpecifier = { case: 'prefix', value: uri.value };
  else if (uri?.case === 'regex') out.pathSpecifier = { case: 'safeRegex', value: { regex: uri.value } };
  // istiod spells it out for every translated match.
  out.caseSensitive = !m.ignoreUriCase;

  const headers: HeaderMatcherInit[] = [];
  const pseudo: Array<[string, StringMatch | undefined]> = [
    [':method', m.method],
    [':authority', m.authority],
    [':scheme', m.scheme],
  ];
  for (const [name, sm] of pseudo) if (sm && sm.matchType.case !== undefined) headers.push(headerMatcher(name, sm, style));
  for (const name of Object.keys(m.headers).sort()) headers.push(headerMatcher(name, m.headers[name]!, style));
  for (const name of Object.keys(m.withoutHeaders).sort()) headers.push(headerMatcher(name, m.withoutHeaders[name]!, style, true));
  if (headers.length > 0) out.headers = headers;

  const query = Object.keys(m.queryParams)
    .sort()
    .map((name) => queryMatcher(name, m.queryParams[name]!));
  if (query.length > 0) out.queryParameters = query;
  return out;
}

/** The proxy facts a match condition can depend on. */
export interface MatchContext {
  readonly port: number;
  readonly namespace: string;
  readonly labels: Readonly<Record<string, string>>;
  /** `mesh`, or the gateway as `<ns>/<name>`. */
  readonly gateway: string;
  /** Namespace of the VirtualService the match belongs to: short gateway names resolve against it. */
  readonly configNamespace?: string;
}

/** Whether a match's non-HTTP conditions (port, gateways, source labels/namespace) hold for this proxy and port. */
export function matchApplies(m: HTTPMatchRequest, ctx: MatchContext): boolean {
  if (m.port !== 0 && m.port !== ctx.port) return false;
  if (m.gateways.length > 0 && !m.gateways.some((g) => gatewayMatches(g, ctx))) return false;
  if (m.sourceNamespace !== '' && m.sourceNamespace !== ctx.namespace) return false;
  if (!labelsSubsetOf(m.sourceLabels, ctx.labels)) return false;
  return true;
}

function gatewayMatches(g: string, ctx: MatchContext): boolean {
  if (g === ctx.gateway) return true;
  return ctx.configNamespace !== undefined && resolveGatewayName(g, ctx.configNamespace) === ctx.gateway;
}
