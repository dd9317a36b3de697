import { create } from '@bufbuild/protobuf';
import { VirtualHost_TlsRequirementType, type VirtualHostSchema } from '../../gen/envoy/config/route/v3/route_components_pb.js';
import { RouteConfigurationSchema, type RouteConfiguration } from '../../gen/envoy/config/route/v3/route_pb.js';
import type { Init } from '../common.js';
import { routesForVirtualService, type RouteInit } from '../route/http-routes.js';
import type { GatewayContext } from './gateway-context.js';
import { intersectHosts, serverHostsFor, virtualServiceHosts } from './gateway-hosts.js';
import { isHttpsTerminated, mergeGateways, type GatewayServer } from './merged-gateway.js';
import { MAX_DIRECT_RESPONSE_BODY_BYTES } from '../route/route-action.js';

type VirtualHostInit = Init<typeof VirtualHostSchema>;

/** istiod's DefaultMaxDirectResponseBodySizeBytes (1 MiB). */

interface VHostDraft {
  readonly host: string;
  readonly name: string;
  domains: string[];
  routes: RouteInit[];
  /** Which (gateway, VirtualService) route lists were appended, in order: equal keys mean equal routes. */
  readonly sources: string[];
  requireTls: boolean;
}

/**
 * Route configurations for a gateway proxy: one per requested RDS name (`http.<port>` or
 * `https.<port>.<portName>.<gw>.<ns>`), or every one its servers use (`'all'`, for wildcard RDS).
 */
export function buildGatewayRoutes(ctx: GatewayContext, names: ReadonlySet<string> | 'all'): RouteConfiguration[] {
  const merged = mergeGateways(ctx.gateways, ctx.push.serviceInstances(ctx.proxy));
  const wanted = names === 'all' ? [...merged.serversByRouteName.keys()] : [...names];
  return wanted.sort().map((name) => buildRouteConfig(ctx, name, merged.serversByRouteName.get(name)));
}

/**
 * istiod's buildGatewayHTTPRouteConfig: a virtual host per host shared by a bound VirtualService
 * and the server (`<host>:<port>`, domain `<host>`; ports are ignored in host matching), routes
 * from every VirtualService that binds it; `httpsRedirect` servers require TLS. Hosts with
 * identical routes collapse into one virtual host; with none at all, the `blackhole:<port>`
 * virtual host answers everything with 404. A name no server uses (a Gateway just removed, while
 * Envoy drains) gets an empty configuration.
 */
function buildRouteConfig(ctx: GatewayContext, name: string, servers: readonly GatewayServer[] | undefined): RouteConfiguration {
  if (!servers || servers.length === 0) return create(RouteConfigurationSchema, { name, virtualHosts: [], validateClusters: false });
  const vhosts = new Map<string, VHostDraft>();
  const routeCache = new Map<string, RouteInit[]>();
  for (const gs of servers) {
    const port = gs.server.port?.number ?? 0;
    const redirect = gs.server.tls?.httpsRedirect === true;
    for (const vs of ctx.virtualServicesFor(gs.gatewayName)) {
      const hosts = intersectHosts(serverHostsFor(gs.server, vs.meta.namespace), virtualServiceHosts(vs, ctx.push.mesh.domain));
      if (hosts.length === 0) continue;
      const source = `${gs.gatewayName}|${vs.meta.namespace}/${vs.meta.name}`;
      let routes = routeCache.get(source);
      if (!routes) {
        routes = routesForVirtualService(
          { push: ctx.push, proxy: ctx.proxy, port, headerStyle: 'string_match', tls: isHttpsTerminated(gs.server) },
          vs,
          gs.gatewayName,
        );
        routeCache.set(source, routes);
      }
      for (const h of hosts.map((x) => x.toLowerCase())) {
        const existing = vhosts.get(h);
        if (existing) {
          existing.routes = [...existing.routes, ...routes];
          existing.sources.push(source);
          if (redirect) existing.requireTls = true;
        } else {
          vhosts.set(h, { host: h, name: `${h}:${port}`, domains: [h], routes: [...routes], sources: [source], requireTls: redirect });
        }
      }
    }
    if (!redirect) continue;
    // A redirecting server answers its hosts even where no VirtualService binds them.
    for (const raw of gs.server.hosts) {
      // istiod keeps a `ns/` prefix here; Envoy could never match such a domain, so it is stripped.
      const h = (raw.includes('/') ? raw.slice(raw.indexOf('/') + 1) : raw).toLowerCase();
      const existing = vhosts.get(h);
      if (existing) existing.requireTls = true;
      else vhosts.set(h, { host: h, name: `${h}:${port}`, domains: [h], routes: [], sources: [], requireTls: true });
    }
  }

  let virtualHosts: VirtualHostInit[];
  if (vhosts.size === 0) {
    virtualHosts = [{ name: `blackhole:${servers[0]!.server.port?.number ?? 0}`, domains: ['*'], routes: [] }];
  } else {
    virtualHosts = collapse([...vhosts.values()]).map((v) => ({
      name: v.name,
      domains: v.domains,
      routes: catchAllLast(v.routes),
      includeRequestAttemptCount: true,
      ...(v.requireTls ? { requireTls: VirtualHost_TlsRequirementType.ALL } : {}),
    }));
    virtualHosts.sort((a, b) => ((a.name ?? '') < (b.name ?? '') ? -1 : (a.name ?? '') > (b.name ?? '') ? 1 : 0));
  }
  return create(RouteConfigurationSchema, {
    name,
    virtualHosts,
    validateClusters: false,
    ignorePortInHostMatching: true,
    maxDirectResponseBodySizeBytes: MAX_DIRECT_RESPONSE_BODY_BYTES,
  });
}

/** istiod's host ordering (MoreSpecific): exact before wildcard, longer first, then alphabetical. */
function moreSpecificFirst(a: string, b: string): number {
  const aw = a.startsWith('*');
  const bw = b.startsWith('*');
  if (aw !== bw) return aw ? 1 : -1;
  if (a.length !== b.length) return b.length - a.length;
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * istiod's collapseDuplicateRoutes (PILOT_ENABLE_ROUTE_COLLAPSE_OPTIMIZATION, on by default):
 * hosts whose routes come from the same VirtualServices, with the same TLS requirement, share the
 * virtual host of the most specific one.
 */
function collapse(drafts: VHostDraft[]): VHostDraft[] {
  const out: VHostDraft[] = [];
  const known = new Map<string, VHostDraft>();
  for (const v of drafts.sort((a, b) => moreSpecificFirst(a.host, b.host))) {
    const key = `${v.requireTls}|${v.sources.join(',')}`;
    const primary = known.get(key);
    if (primary) primary.domains.push(...v.domains);
    else {
      known.set(key, v);
      out.push(v);
    }
  }
  return out;
}

/** A route matching every request (prefix `/` or regex `.*`, no header or query condition). */
function isCatchAll(r: RouteInit): boolean {
  const m = r.match;
  if (!m) return false;
  const p = m.pathSpecifier;
  const all =
    (p?.case === 'prefix' && p.value === '/') ||
    (p?.case === 'pathSeparatedPrefix' && p.value === '/') ||
    (p?.case === 'safeRegex' && p.value.regex === '.*');
  return all && (m.headers?.length ?? 0) === 0 && (m.queryParameters?.length ?? 0) === 0 && (m.dynamicMetadata?.length ?? 0) === 0;
}

/** istiod's SortVHostRoutes: catch-all routes move behind the others, order otherwise kept. */
function catchAllLast(routes: readonly RouteInit[]): RouteInit[] {
  return [...routes.filter((r) => !isCatchAll(r)), ...routes.filter(isCatchAll)];
}
