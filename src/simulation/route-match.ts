import {
  RedirectAction_RedirectResponseCode,
  type QueryParameterMatcher,
  type RedirectAction,
  type Route,
  type RouteAction,
  type RouteMatch,
  type VirtualHost,
} from '../gen/envoy/config/route/v3/route_components_pb.js';
import type { RouteConfiguration } from '../gen/envoy/config/route/v3/route_pb.js';
import type { RegexMatchAndSubstitute } from '../gen/envoy/type/matcher/v3/regex_pb.js';
import type { Connection, HttpRequest } from './context.js';
import { headerMatches, pathOnly, re2, regexMatches, stringMatches } from './matchers.js';
import type { SimRedirect } from './types.js';

/** Strips a trailing `:port` (not inside an IPv6 literal). */
export function stripPort(host: string): string {
  const colon = host.lastIndexOf(':');
  if (colon < 0 || host.lastIndexOf(']') > colon) return host;
  return /^\d+$/.test(host.slice(colon + 1)) ? host.slice(0, colon) : host;
}

/**
 * Envoy's virtual host selection: an exact domain, then the longest `*suffix` wildcard, then the
 * longest `prefix*` wildcard, then `*`. Wildcards never match the empty string; hosts compare
 * case-insensitively.
 */
export function matchVirtualHost(rc: RouteConfiguration, authority: string): VirtualHost | undefined {
  const host = (rc.ignorePortInHostMatching ? stripPort(authority) : authority).toLowerCase();
  let best: { vh: VirtualHost; rank: number; len: number } | undefined;
  const offer = (vh: VirtualHost, rank: number, len: number): void => {
    if (!best || rank > best.rank || (rank === best.rank && len > best.len)) best = { vh, rank, len };
  };
  for (const vh of rc.virtualHosts) {
    for (const raw of vh.domains) {
      const d = raw.toLowerCase();
      if (d === host) return vh;
      if (d === '*') offer(vh, 0, 0);
      else if (d.startsWith('*') && host.length > d.length - 1 && host.endsWith(d.slice(1))) offer(vh, 2, d.length);
      else if (d.endsWith('*') && host.length > d.length - 1 && host.startsWith(d.slice(0, -1))) offer(vh, 1, d.length);
    }
  }
  return best?.vh;
}

function queryParams(path: string): Map<string, string> {
  const q = path.indexOf('?');
  const out = new Map<string, string>();
  if (q < 0) return out;
  for (const kv of path
    .slice(q + 1)
    .split('#')[0]!
    .split('&')) {
    if (kv === '') continue;
    const eq = kv.indexOf('=');
    const k = decodeURIComponent(eq < 0 ? kv : kv.slice(0, eq));
    if (!out.has(k)) out.set(k, eq < 0 ? '' : decodeURIComponent(kv.slice(eq + 1)));
  }
  return out;
}

function queryMatches(m: QueryParameterMatcher, params: Map<string, string>): boolean {
  const v = params.get(m.name);
  const spec = m.queryParameterMatchSpecifier;
  if (spec.case === 'stringMatch') return v !== undefined && stringMatches(spec.value, v);
  return v !== undefined; // present_match, or no specifier
}

/** RouteMatch against a request (also what jwt_authn requirement rules use). */
export function routeMatches(m: RouteMatch | undefined, req: HttpRequest, conn?: Connection): boolean {
  if (!m) return false;
  const path = pathOnly(req.path);
  const cs = m.caseSensitive ?? true;
  const norm = (s: string): string => (cs ? s : s.toLowerCase());
  const p = m.pathSpecifier;
  switch (p.case) {
    case 'prefix':
      if (!norm(path).startsWith(norm(p.value))) return false;
      break;
    case 'path':
      if (norm(path) !== norm(p.value)) return false;
      break;
    case 'safeRegex':
      if (!regexMatches(p.value, path)) return false;
      break;
    case 'pathSeparatedPrefix': {
      const x = norm(path);
      const pre = norm(p.value);
      if (x !== pre && !x.startsWith(`${pre}/`)) return false;
      break;
    }
    case 'connectMatcher':
      if (req.method !== 'CONNECT') return false;
      break;
    default:
      return false; // path_match_policy extensions are not modelled
  }
  if (!m.headers.every((h) => headerMatches(h, req.headers))) return false;
  if (m.queryParameters.length > 0) {
    const params = queryParams(req.path);
    if (!m.queryParameters.every((q) => queryMatches(q, params))) return false;
  }
  if (m.grpc && !(req.headers.get('content-type') ?? '').startsWith('application/grpc')) return false;
  if (m.tlsContext && conn) {
    if (m.tlsContext.presented !== undefined && m.tlsContext.presented !== conn.peerCertificate) return false;
    if (m.tlsContext.validated !== undefined && m.tlsContext.validated !== conn.peerCertificate) return false;
  }
  return true;
}

/** The first route of the virtual host that matches: Envoy never looks further. */
export function matchRoute(vh: VirtualHost, req: HttpRequest, conn?: Connection): Route | undefined {
  return vh.routes.find((r) => routeMatches(r.match, req, conn));
}

/** Envoy's RE2 GlobalReplace with `\N` back-references in the substitution. */
export function regexSubstitute(rw: RegexMatchAndSubstitute, value: string): string {
  if (!rw.pattern) return value;
  return re2(rw.pattern.regex)
    .matcher(value)
    .replaceAll((...args: unknown[]) => {
      const groups = args.filter((a): a is string | undefined => typeof a === 'string' || a === undefined);
      return rw.substitution.replace(/\\(\d|\\)/g, (_m, g: string) => (g === '\\' ? '\\' : (groups[Number(g)] ?? '')));
    });
}

/** The path once a route's prefix_rewrite / regex_rewrite applies (query string kept). */
function rewritePath(
  route: Route,
  prefixRewrite: string,
  regexRewrite: RegexMatchAndSubstitute | undefined,
  path: string,
): string | undefined {
  const query = path.slice(pathOnly(path).length);
  const bare = pathOnly(path);
  if (prefixRewrite !== '') {
    const p = route.match?.pathSpecifier;
    const matched = p?.case === 'prefix' || p?.case === 'path' || p?.case === 'pathSeparatedPrefix' ? p.value.length : 0;
    return prefixRewrite + bare.slice(matched) + query;
  }
  if (regexRewrite) return regexSubstitute(regexRewrite, bare) + query;
  return undefined;
}

export interface Forward {
  readonly clusters: { cluster: string; weight: number }[];
  readonly weighted: boolean;
  readonly rewrite?: { path?: string; host?: string };
}

/** Where a route action sends the request: one cluster, a header-named one, or weighted clusters. */
export function forwardTarget(route: Route, action: RouteAction, req: HttpRequest): Forward {
  const spec = action.clusterSpecifier;
  let clusters: { cluster: string; weight: number }[] = [];
  if (spec.case === 'cluster') clusters = [{ cluster: spec.value, weight: 100 }];
  else if (spec.case === 'clusterHeader') clusters = [{ cluster: req.headers.get(spec.value.toLowerCase()) ?? '', weight: 100 }];
  else if (spec.case === 'weightedClusters') {
    clusters = spec.value.clusters.map((c) => ({
      cluster: c.name !== '' ? c.name : (req.headers.get(c.clusterHeader.toLowerCase()) ?? ''),
      weight: c.weight ?? 0,
    }));
  }
  const path = rewritePath(route, action.prefixRewrite, action.regexRewrite, req.path);
  const h = action.hostRewriteSpecifier;
  let host: string | undefined;
  if (h.case === 'hostRewriteLiteral') host = h.value;
  else if (h.case === 'hostRewriteHeader') host = req.headers.get(h.value.toLowerCase());
  else if (h.case === 'hostRewritePathRegex') host = regexSubstitute(h.value, pathOnly(req.path));
  const rewrite = { ...(path !== undefined ? { path } : {}), ...(host !== undefined ? { host } : {}) };
  return { clusters, weighted: spec.case === 'weightedClusters', ...(Object.keys(rewrite).length > 0 ? { rewrite } : {}) };
}

const REDIRECT_STATUS: Record<RedirectAction_RedirectResponseCode, number> = {
  [RedirectAction_RedirectResponseCode.MOVED_PERMANENTLY]: 301,
  [RedirectAction_RedirectResponseCode.FOUND]: 302,
  [RedirectAction_RedirectResponseCode.SEE_OTHER]: 303,
  [RedirectAction_RedirectResponseCode.TEMPORARY_REDIRECT]: 307,
  [RedirectAction_RedirectResponseCode.PERMANENT_REDIRECT]: 308,
};

/**
 * The Location of a redirect action: scheme (https_redirect / scheme_redirect), host
 * (host_redirect, else the request's), port (port_redirect; a scheme change drops the default
 * port 80/443), path (path_redirect, prefix_rewrite or regex_rewrite; strip_query).
 */
export function redirectFor(route: Route, r: RedirectAction, req: HttpRequest, scheme: string): SimRedirect {
  const s = r.schemeRewriteSpecifier;
  const newScheme = s.case === 'httpsRedirect' && s.value ? 'https' : s.case === 'schemeRedirect' ? s.value : scheme;
  let host = r.hostRedirect !== '' ? r.hostRedirect : req.authority;
  if (r.portRedirect !== 0) host = `${stripPort(host)}:${r.portRedirect}`;
  else if (newScheme !== scheme && /:(80|443)$/.test(host)) host = stripPort(host);
  let path: string;
  const p = r.pathRewriteSpecifier;
  if (p.case === 'pathRedirect') path = p.value.includes('?') ? p.value : p.value + req.path.slice(pathOnly(req.path).length);
  else
    path =
      rewritePath(route, p.case === 'prefixRewrite' ? p.value : '', p.case === 'regexRewrite' ? p.value : undefined, req.path) ?? req.path;
  if (r.stripQuery) path = pathOnly(path);
  return { status: REDIRECT_STATUS[r.responseCode] ?? 301, location: `${newScheme}://${host}${path}` };
}
