import type { JsonObject } from '@bufbuild/protobuf';
import {
  RouteAction_ClusterNotFoundResponseCode,
  VirtualHost_TlsRequirementType,
  type Route,
  type VirtualHost,
} from '../gen/envoy/config/route/v3/route_components_pb.js';
import type { RouteConfiguration } from '../gen/envoy/config/route/v3/route_pb.js';
import { HTTPFaultSchema } from '../gen/envoy/extensions/filters/http/fault/v3/fault_pb.js';
import { JwtAuthenticationSchema, PerRouteConfigSchema } from '../gen/envoy/extensions/filters/http/jwt_authn/v3/config_pb.js';
import {
  RBACPerRouteSchema,
  RBACSchema as HttpRbacSchema,
  type RBAC as HttpRbac,
} from '../gen/envoy/extensions/filters/http/rbac/v3/rbac_pb.js';
import type { HttpConnectionManager } from '../gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager_pb.js';
import { resolveCluster } from './cluster.js';
import type { Connection, HttpRequest } from './context.js';
import { evaluateJwt, faultAbort, JWT_AUTHN_NAMESPACE, perFilterConfig, type RouteScope } from './http-filters.js';
import { anyTypeName, unpack } from './matchers.js';
import { evaluateRbac } from './rbac.js';
import { forwardTarget, matchRoute, matchVirtualHost, redirectFor, stripPort } from './route-match.js';
import type { SimRequest, SimResult, SimulationConfig } from './types.js';

const NOT_FOUND_STATUS: Record<RouteAction_ClusterNotFoundResponseCode, number> = {
  [RouteAction_ClusterNotFoundResponseCode.SERVICE_UNAVAILABLE]: 503,
  [RouteAction_ClusterNotFoundResponseCode.NOT_FOUND]: 404,
  [RouteAction_ClusterNotFoundResponseCode.INTERNAL_SERVER_ERROR]: 500,
};

/** What the HCM passes its filters: the request plus the logging hooks of this run. */
export interface HttpRun {
  readonly config: SimulationConfig;
  readonly req: SimRequest;
  readonly conn: Connection;
  readonly authority: string;
  readonly result: SimResult;
  readonly warn: (message: string) => void;
}

function buildRequest(run: HttpRun, hcm: HttpConnectionManager): HttpRequest {
  const headers = new Map<string, string>();
  for (const [k, v] of Object.entries(run.req.headers ?? {})) headers.set(k.toLowerCase(), v);
  headers.delete('host'); // Envoy keeps Host as :authority
  let authority = run.authority;
  const strip = hcm.stripPortMode.case === 'stripAnyHostPort' && hcm.stripPortMode.value;
  if (strip || (hcm.stripMatchingHostPort && authority.endsWith(`:${run.conn.dstPort}`))) authority = stripPort(authority);
  const path = run.req.path ?? '/';
  const method = run.req.method ?? 'GET';
  headers.set(':authority', authority);
  headers.set(':path', path);
  headers.set(':method', method);
  headers.set(':scheme', run.conn.tlsTerminated ? 'https' : 'http');
  return { headers, authority, path, method, metadata: {} };
}

const routeLabel = (vh: VirtualHost, r: Route): string => (r.name !== '' ? r.name : `routes[${vh.routes.indexOf(r)}]`);

/** Runs one RBAC engine; true when it denied (the filter answered 403 itself). */
function runRbac(run: HttpRun, http: HttpRequest, engine: HttpRbac): boolean {
  if (!engine.rules) {
    if (engine.matcher) run.warn('rbac: matcher-based RBAC is not modelled (allowed)');
    return false;
  }
  const d = evaluateRbac(engine.rules, { conn: run.conn, http, warn: run.warn });
  if (!d.enforced) return false;
  const r = run.result;
  if (!d.allowed) {
    r.rbac = 'deny';
    if (d.policy !== undefined) r.rbacPolicy = d.policy;
    else delete r.rbacPolicy;
    r.status = 403;
    r.error = 'rbac: access denied';
    return true;
  }
  r.rbac = 'allow';
  if (d.policy !== undefined) r.rbacPolicy = d.policy;
  return false;
}

/** The HCM's HTTP filters in order, up to the router. True when a filter answered. */
function runFilters(run: HttpRun, hcm: HttpConnectionManager, http: HttpRequest, scope: RouteScope, cluster: string | undefined): boolean {
  const r = run.result;
  const metadata = http.metadata as Record<string, JsonObject>;
  for (const f of hcm.httpFilters) {
    if (f.configType.case !== 'typedConfig') {
      run.warn(`http filter ${f.name}: config discovery is not modelled (skipped)`);
      continue;
    }
    const per = perFilterConfig(f.name, scope);
    if (per.kind === 'disabled' || (f.disabled && per.kind !== 'config')) continue;
    const overrideAny = per.kind === 'config' ? per.any : undefined;
    const type = anyTypeName(f.configType.value);
    if (type === JwtAuthenticationSchema.typeName) {
      const cfg = unpack(f.configType.value, JwtAuthenticationSchema)!;
      const out = evaluateJwt(cfg, unpack(overrideAny, PerRouteConfigSchema), http, run.req.jwtClaims);
      if (out.status !== undefined) {
        r.status = out.status;
        r.error = 'jwt authentication failed';
        return true;
      }
      if (out.metadata) metadata[JWT_AUTHN_NAMESPACE] = { ...metadata[JWT_AUTHN_NAMESPACE], ...out.metadata };
    } else if (type === HttpRbacSchema.typeName) {
      // A per-route RBACPerRoute replaces the filter's engine; one without `rbac` disables it.
      const engine = overrideAny ? unpack(overrideAny, RBACPerRouteSchema)?.rbac : unpack(f.configType.value, HttpRbacSchema);
      if (engine && runRbac(run, http, engine)) return true;
    } else if (type === HTTPFaultSchema.typeName) {
      const cfg = unpack(overrideAny ?? f.configType.value, HTTPFaultSchema);
      const abort = cfg ? faultAbort(cfg, http, cluster) : undefined;
      if (abort) {
        r.faultAbort = { status: abort.status, percent: abort.percent };
        if (abort.percent >= 100) {
          r.status = abort.status;
          r.error = abort.grpcStatus !== undefined ? `fault abort (grpc-status ${abort.grpcStatus})` : 'fault abort';
          return true;
        }
      }
    } else if (type === 'envoy.extensions.filters.http.router.v3.Router') {
      return false;
    }
  }
  run.warn('http connection manager has no router filter');
  return false;
}

/** The route configuration (inline or RDS); `fatal` when the HCM's routing is not modelled. */
function routeConfigOf(run: HttpRun, hcm: HttpConnectionManager): { rc?: RouteConfiguration; fatal?: boolean } {
  const spec = hcm.routeSpecifier;
  if (spec.case === 'routeConfig') return { rc: spec.value };
  if (spec.case === 'rds') {
    run.result.routeConfig = spec.value.routeConfigName;
    const rc = run.config.routes.find((x) => x.name === spec.value.routeConfigName);
    if (rc) return { rc };
    // Envoy serves an empty route table once RDS times out: every request gets a 404.
    run.result.error = `unknown route config ${JSON.stringify(spec.value.routeConfigName)}`;
    return {};
  }
  run.result.error = `route specifier ${spec.case ?? 'unset'} is not modelled`;
  return { fatal: true };
}

/**
 * The HTTP connection manager: picks the virtual host and route up front (filters see the route),
 * runs jwt_authn / RBAC / fault in order, then routes as Envoy's router: 404 without a virtual
 * host or route, a TLS redirect when the vhost requires TLS, direct responses and redirects,
 * else the cluster (weighted: the heaviest) and its endpoint.
 */
export function handleHttp(run: HttpRun, hcm: HttpConnectionManager): void {
  const r = run.result;
  if (run.conn.protocol === 'tcp') {
    r.error = 'protocol error: non-HTTP bytes sent to an HTTP connection manager';
    return;
  }
  if (run.conn.tls !== 'none' && !run.conn.tlsTerminated) {
    r.error = 'protocol error: TLS bytes sent to an HTTP connection manager that does not terminate TLS';
    return;
  }
  const { rc, fatal } = routeConfigOf(run, hcm);
  if (fatal) return;
  const http = buildRequest(run, hcm);
  const vh = rc ? matchVirtualHost(rc, http.authority) : undefined;
  const route = vh ? matchRoute(vh, http, run.conn) : undefined;
  if (vh) r.virtualHost = vh.name;
  if (vh && route) r.route = routeLabel(vh, route);
  const action = route?.action;
  const forward = action?.case === 'route' ? forwardTarget(route!, action.value, http) : undefined;
  const heaviest = forward?.clusters.reduce<{ cluster: string; weight: number } | undefined>(
    (best, c) => (!best || c.weight > best.weight ? c : best),
    undefined,
  );
  r.rbac = 'none';
  if (runFilters(run, hcm, http, { rc, vh, route }, heaviest?.cluster)) return;
  if (!rc) {
    r.status = 404;
    return;
  }
  if (!vh || !route) {
    r.status = 404;
    r.error = vh ? 'no route' : 'no virtual host';
    return;
  }
  const tlsRequired =
    vh.requireTls === VirtualHost_TlsRequirementType.ALL || vh.requireTls === VirtualHost_TlsRequirementType.EXTERNAL_ONLY;
  if (tlsRequired && !run.conn.tlsTerminated) {
    const location = `https://${stripPort(http.authority)}${http.path}`;
    r.redirect = { status: 301, location };
    r.status = 301;
    return;
  }
  switch (action?.case) {
    case 'directResponse':
      r.directResponse = { status: action.value.status };
      r.status = action.value.status;
      return;
    case 'redirect':
      r.redirect = redirectFor(route, action.value, http, run.conn.tlsTerminated ? 'https' : 'http');
      r.status = r.redirect.status;
      return;
    case 'route':
      break;
    default:
      r.error = `route action ${action?.case ?? 'unset'} is not modelled`;
      return;
  }
  if (forward?.weighted) r.weights = forward.clusters;
  if (forward?.rewrite) r.rewrite = forward.rewrite;
  const cluster = heaviest?.cluster ?? '';
  r.cluster = cluster;
  const up = resolveCluster(run.config, cluster, originalDestination(run.conn));
  Object.assign(r, up);
  // The route decides what a missing cluster answers (cluster_not_found_response_code).
  if (!run.config.clusters.some((c) => c.name === cluster)) r.status = NOT_FOUND_STATUS[action.value.clusterNotFoundResponseCode] ?? 503;
}

export function originalDestination(c: Connection): string {
  return c.dstIp.includes(':') ? `[${c.dstIp}]:${c.dstPort}` : `${c.dstIp}:${c.dstPort}`;
}
