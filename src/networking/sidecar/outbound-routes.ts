import { create } from '@bufbuild/protobuf';
import { RouteConfigurationSchema, type RouteConfiguration } from '../../gen/envoy/config/route/v3/route_pb.js';
import type { VirtualHostSchema } from '../../gen/envoy/config/route/v3/route_components_pb.js';
import { isIPAddress } from '../../config/validation/common.js';
import { PASSTHROUGH_CLUSTER } from '../cluster-name.js';
import type { Init } from '../common.js';
import { durationFromMs } from '../common.js';
import { virtualHostNames } from '../route/virtual-host-domains.js';
import { portKind } from '../listener/listener-common.js';
import { buildHttpRoutes } from '../route/http-routes.js';
import type { OutboundContext } from './outbound-listeners.js';

type VirtualHostInit = Init<typeof VirtualHostSchema>;

/**
 * RDS `<port>` for a sidecar: one virtual host per visible HTTP (or sniffed) service on that port,
 * named `<host>:<port>`, answering to istiod's domain list (FQDN, short names, VIPs; ports are
 * ignored in host matching); then the catch-all — `allow_any` to PassthroughCluster, or `block_all` (502)
 * under REGISTRY_ONLY. Undefined when the name is not a port this proxy has HTTP services on.
 */
export function buildOutboundRouteConfig(ctx: OutboundContext, name: string): RouteConfiguration | undefined {
  const port = Number(name);
  if (!Number.isInteger(port) || port < 1 || port > 65535 || String(port) !== name) return undefined;
  const virtualHosts: VirtualHostInit[] = [];
  for (const service of ctx.scope.services) {
    const sp = service.ports.find((p) => p.port === port);
    if (!sp) continue;
    const kind = portKind(sp.protocol);
    if (kind !== 'http' && kind !== 'auto') continue;
    // One service's virtual host, cached apart: a change to one service rebuilds only its routes.
    virtualHosts.push(ctx.push.derive(`RDS|vh|${service.namespace}/${service.hostname}|${port}|${ctx.push.routeViewKey(ctx.proxy)}`, (): VirtualHostInit => {
      const vips = service.addresses.filter((a) => isIPAddress(a));
      return {
        name: `${service.hostname}:${port}`,
        domains: [...virtualHostNames(service.hostname, ctx.proxy, ctx.push.mesh.domain), ...vips],
        routes: buildHttpRoutes({ push: ctx.push, proxy: ctx.proxy, service, port, headerStyle: 'string_match' }),
        includeRequestAttemptCount: true,
      };
    }));
  }
  if (virtualHosts.length === 0) return undefined;
  virtualHosts.push(catchAll(ctx));
  // Hosts match without their port, as istiod configures sidecars (a Host of `reviews:9080` or `reviews` alike).
  return create(RouteConfigurationSchema, { name, virtualHosts: dedupeDomains(virtualHosts), validateClusters: false, ignorePortInHostMatching: true });
}

function catchAll(ctx: OutboundContext): VirtualHostInit {
  const match = { pathSpecifier: { case: 'prefix' as const, value: '/' } };
  if (ctx.scope.outboundTrafficPolicy === 'REGISTRY_ONLY') {
    return { name: 'block_all', domains: ['*'], routes: [{ name: 'block_all', match, action: { case: 'directResponse', value: { status: 502 } } }] };
  }
  return {
    name: 'allow_any',
    domains: ['*'],
    routes: [{ name: 'allow_any', match, action: { case: 'route', value: { clusterSpecifier: { case: 'cluster', value: PASSTHROUGH_CLUSTER }, timeout: durationFromMs(0) } } }],
  };
}

/**
 * Envoy rejects a RouteConfiguration in which two virtual hosts share a domain. Two services can
 * claim the same short name or VIP (e.g. `reviews` from two namespaces' ServiceEntries): the first
 * keeps it, as istiod does.
 */
function dedupeDomains(vhosts: VirtualHostInit[]): VirtualHostInit[] {
  const seen = new Set<string>();
  return vhosts
    .map((vh) => ({ ...vh, domains: (vh.domains ?? []).filter((d) => (seen.has(d.toLowerCase()) ? false : (seen.add(d.toLowerCase()), true))) }))
    .filter((vh) => vh.domains.length > 0);
}
