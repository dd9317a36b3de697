import type { Config } from '../../config/index.js';
import { ServerTLSSettings_TLSmode, type Server } from '../../gen/networking/v1alpha3/gateway_pb.js';
import type { L4MatchAttributes, RouteDestination, TLSMatchAttributes } from '../../gen/networking/v1alpha3/virtual_service_pb.js';
import { tcpProxyFilter, type FilterInit, type L4Target } from '../listener/tcp-proxy.js';
import { tcpTelemetry } from '../telemetry/index.js';
import { l4TargetOf } from '../route/tcp-routes.js';
import type { GatewayContext } from './gateway-context.js';
import { bindsHosts, subsetOf } from './gateway-hosts.js';
import type { GatewayServer } from './merged-gateway.js';

/** One filter chain before it becomes Envoy's: its SNI/ALPN match and network filters. */
export interface L4Chain {
  readonly sniHosts: readonly string[];
  readonly applicationProtocols?: readonly string[];
  readonly filters: FilterInit[];
}

/** ALPNs of Istio mTLS; AUTO_PASSTHROUGH chains require one so only mesh clients reach a cluster (istiod's allIstioMtlsALPNs). */
const ISTIO_MTLS_ALPNS = ['istio', 'istio-peer-exchange', 'istio-http/1.0', 'istio-http/1.1', 'istio-h2'];

/** On gateways an L4 match tests only its port and gateways (istiod's l4SingleMatch); names are resolved by the index. */
function l4Matches(m: L4MatchAttributes | TLSMatchAttributes, server: Server, gatewayName: string): boolean {
  if (m.port !== 0 && m.port !== server.port?.number) return false;
  return m.gateways.length === 0 || m.gateways.includes(gatewayName);
}

/** Telemetry's stats filters, then tcp_proxy with its access logs (istiod's gateway listener class). */
function gatewayTcpFilters(ctx: GatewayContext, statPrefix: string, target: L4Target): FilterInit[] {
  const tel = tcpTelemetry(ctx.push, ctx.proxy, 'gateway');
  return [...tel.filters, tcpProxyFilter(statPrefix, target, tel.accessLog)];
}

/** tcp_proxy to a rule's destinations: stat prefix the cluster, or `<vs>.<ns>` for weighted clusters (istiod). */
function tcpFilters(ctx: GatewayContext, vs: Config<'VirtualService'>, route: readonly RouteDestination[], port: number): FilterInit[] {
  const target = l4TargetOf({ push: ctx.push, proxy: ctx.proxy, port, gateway: '' }, vs, route);
  if (!target) return [];
  const statPrefix = 'cluster' in target ? target.cluster : `${vs.meta.name}.${vs.meta.namespace}`;
  return gatewayTcpFilters(ctx, statPrefix, target);
}

/**
 * Filters of an opaque TCP server or a TLS-terminating TCP server: the first `tcp` rule that
 * applies, of the first bound VirtualService whose hosts match (istiod's buildGatewayNetworkFiltersFromTCPRoutes).
 */
export function tcpServerFilters(ctx: GatewayContext, gs: GatewayServer): FilterInit[] {
  const port = gs.server.port?.number ?? 0;
  for (const vs of ctx.virtualServicesFor(gs.gatewayName)) {
    if (!bindsHosts(gs.server, vs, ctx.push.mesh.domain)) continue;
    for (const rule of vs.spec.tcp) {
      if (rule.route.length === 0) continue;
      if (rule.match.length > 0 && !rule.match.some((m) => l4Matches(m, gs.server, gs.gatewayName))) continue;
      const filters = tcpFilters(ctx, vs, rule.route, port);
      if (filters.length > 0) return filters;
    }
  }
  return [];
}

/**
 * PASSTHROUGH: one chain per applicable `tls` match of each bound VirtualService, matching its
 * sniHosts and proxying to the rule's destinations. A match whose SNI hosts repeat an earlier one
 * on the listener port is skipped, as Envoy rejects identical chain matches (`knownSni`: host → bind).
 */
export function passthroughChains(ctx: GatewayContext, gs: GatewayServer, knownSni: Map<string, string>): L4Chain[] {
  if (gs.server.tls?.mode === ServerTLSSettings_TLSmode.AUTO_PASSTHROUGH) return autoPassthroughChains(ctx, gs);
  const port = gs.server.port?.number ?? 0;
  const chains: L4Chain[] = [];
  for (const vs of ctx.virtualServicesFor(gs.gatewayName)) {
    if (!bindsHosts(gs.server, vs, ctx.push.mesh.domain)) continue;
    for (const rule of vs.spec.tls) {
      if (rule.route.length === 0) continue;
      for (const m of rule.match) {
        if (!l4Matches(m, gs.server, gs.gatewayName)) continue;
        if (m.sniHosts.some((h) => knownSni.get(h) === gs.server.bind)) continue;
        for (const h of m.sniHosts) knownSni.set(h, gs.server.bind);
        const filters = tcpFilters(ctx, vs, rule.route, port);
        if (filters.length > 0) chains.push({ sniHosts: [...m.sniHosts], filters });
      }
    }
  }
  return chains;
}

/**
 * AUTO_PASSTHROUGH: the client's SNI names the cluster (`outbound_.<port>_.<subset>_.<host>`), so
 * istiod emits one chain per visible mesh service port (and DestinationRule subset) whose host the
 * server admits, each matching that SNI plus Istio's mTLS ALPNs and proxying to that cluster.
 */
function autoPassthroughChains(ctx: GatewayContext, gs: GatewayServer): L4Chain[] {
  const chains: L4Chain[] = [];
  for (const service of ctx.push.sidecarScope(ctx.proxy).services) {
    if (service.meshExternal) continue;
    if (!gs.sniHosts.some((h) => subsetOf(service.hostname, h))) continue;
    const dr = ctx.push.destinationRule(service, ctx.proxy.namespace);
    for (const p of service.ports) {
      if (p.protocol === 'UDP') continue;
      for (const subset of ['', ...(dr?.spec.subsets.map((s) => s.name) ?? [])]) {
        const cluster = `outbound_.${p.port}_.${subset}_.${service.hostname}`;
        chains.push({ sniHosts: [cluster], applicationProtocols: ISTIO_MTLS_ALPNS, filters: gatewayTcpFilters(ctx, cluster, { cluster }) });
      }
    }
  }
  return chains;
}
