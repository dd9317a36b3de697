import { create } from '@bufbuild/protobuf';
import { TrafficDirection } from '../../gen/envoy/config/core/v3/base_pb.js';
import { ListenerSchema, type Listener } from '../../gen/envoy/config/listener/v3/listener_pb.js';
import { type Config, isIPAddress } from '../../config/index.js';
import { durationFromMs } from '../common.js';
import {
  MESH_GATEWAY,
  type Proxy,
  type PushContext,
  type SidecarScope,
  BLACKHOLE_CLUSTER,
  buildClusterName,
  PASSTHROUGH_CLUSTER,
} from '../../model/index.js';
import type { Service, ServicePort } from '../../registry/index.js';
import { wasmHttpFilters, wasmSource } from '../extension/wasm-plugins.js';
import { buildHcm } from '../listener/hcm.js';
import { allocatedAddressesFor, ownAddressesFor, wildcardAddress } from '../service-addresses.js';
import {
  httpInspector,
  MAX_CONNECTIONS_PER_SOCKET_EVENT,
  PLAINTEXT_HTTP_ALPNS,
  portKind,
  socketAddress,
  tlsInspector,
  TRANSPORT_SOCKET_CONNECT_TIMEOUT_MS,
  type FilterChainInit,
  type ListenerFilterInit,
  type PortKind,
} from '../listener/listener-common.js';
import { tcpProxyFilter, type L4Target } from '../listener/tcp-proxy.js';
import { tcpRouteTarget, tlsRouteTargets, type L4RouteContext } from '../route/tcp-routes.js';
import { hcmTelemetryWithoutTracing, listenerAccessLogs, tcpTelemetry } from '../telemetry/index.js';

/** Where iptables sends a pod's outbound connections (istio-iptables `-p`). */
export const VIRTUAL_OUTBOUND_PORT = 15001;
export const VIRTUAL_OUTBOUND = 'virtualOutbound';
/** istiod's name for the default chain of an HTTP listener (whatever the cluster it goes to). */
const PASSTHROUGH_FILTER_CHAIN = 'PassthroughFilterChain';

export interface OutboundContext {
  readonly push: PushContext;
  readonly proxy: Proxy;
  readonly scope: SidecarScope;
}

/** One service port that a listener must carry. */
interface PortEntry {
  readonly service: Service;
  readonly port: ServicePort;
  readonly kind: PortKind;
}

/**
 * The sidecar's outbound listeners, as istiod lays them out: `virtualOutbound` on 15001 receives
 * every captured connection and hands it (use_original_dst) to the listener for its original
 * destination — `0.0.0.0_<port>` (`::_<port>` for an IPv6-only proxy) for HTTP and sniffed ports (routes by Host over RDS `<port>`),
 * `<vip>_<port>` for TCP/TLS services with an address (or an auto-allocated one the proxy consumes),
 * `0.0.0.0_<port>` for those without one —
 * or keeps it and passes it through (ALLOW_ANY) or drops it (REGISTRY_ONLY).
 * HCMs carry no tracing here: it names the workload, and is laid into the encoded listeners per
 * workload (listener/hcm-tracing-splice.ts) so that the rest is built once per scope.
 */
export function buildOutboundListeners(ctx: OutboundContext): Listener[] {
  const wildcard = wildcardAddress(ctx.proxy);
  const byListener = new Map<string, { address: string; port: number; entries: PortEntry[] }>();
  const add = (address: string, e: PortEntry): void => {
    const name = `${address}_${e.port.port}`;
    const l = byListener.get(name);
    if (l) l.entries.push(e);
    else byListener.set(name, { address, port: e.port.port, entries: [e] });
  };
  for (const service of ctx.scope.services) {
    for (const port of service.ports) {
      const kind = portKind(port.protocol);
      if (kind === 'udp' || port.port === VIRTUAL_OUTBOUND_PORT) continue;
      const vips = listenAddresses(service, ctx.push, ctx.proxy);
      if (kind === 'http' || vips.length === 0) add(wildcard, { service, port, kind });
      else for (const vip of vips) add(vip, { service, port, kind });
    }
  }
  const listeners = [...byListener.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, l]) => portListener(ctx, name, l.address, l.port, l.entries));
  return [virtualOutbound(ctx), ...listeners];
}

/**
 * The addresses a service's TCP ports listen on for this proxy: its own IP addresses (its proxy's
 * cluster's, for a Service of several clusters), else those allocated to it when the proxy consumes
 * them (istiod's GetAddressForProxy), else none (0.0.0.0).
 */
function listenAddresses(service: Service, push: PushContext, proxy: Proxy): string[] {
  const own = ownAddressesFor(service, push, proxy).filter((a) => isIPAddress(a));
  return own.length > 0 ? own : allocatedAddressesFor(service, proxy);
}

function fallbackCluster(ctx: OutboundContext): string {
  return ctx.scope.outboundTrafficPolicy === 'REGISTRY_ONLY' ? BLACKHOLE_CLUSTER : PASSTHROUGH_CLUSTER;
}

function virtualOutbound(ctx: OutboundContext): Listener {
  return create(ListenerSchema, {
    name: VIRTUAL_OUTBOUND,
    address: socketAddress(wildcardAddress(ctx.proxy), VIRTUAL_OUTBOUND_PORT),
    useOriginalDst: true,
    trafficDirection: TrafficDirection.OUTBOUND,
    maxConnectionsToAcceptPerSocketEvent: MAX_CONNECTIONS_PER_SOCKET_EVENT,
    filterChains: [
      // A connection whose original destination is 15001 itself would loop back here forever.
      // Telemetry's stats filters on both; only the catch-all logs (istiod).
      {
        name: 'virtualOutbound-blackhole',
        filterChainMatch: { destinationPort: VIRTUAL_OUTBOUND_PORT },
        filters: [
          ...tcpTelemetry(ctx.push, ctx.proxy, 'outbound').filters,
          tcpProxyFilter(BLACKHOLE_CLUSTER, { cluster: BLACKHOLE_CLUSTER }),
        ],
      },
      tcpChain(ctx, 'virtualOutbound-catchall-tcp', { cluster: fallbackCluster(ctx) }),
    ],
    accessLog: [...listenerAccessLogs(ctx.push, ctx.proxy, 'outbound')],
  });
}

function httpChain(ctx: OutboundContext, address: string, port: number, match: FilterChainInit['filterChainMatch']): FilterChainInit {
  const phased = wasmHttpFilters(wasmSource(ctx.push), ctx.proxy, { port, cls: 'SIDECAR_OUTBOUND' });
  return {
    ...(match ? { filterChainMatch: match } : {}),
    transportSocketConnectTimeout: durationFromMs(TRANSPORT_SOCKET_CONNECT_TIMEOUT_MS),
    filters: [
      {
        name: 'envoy.filters.network.http_connection_manager',
        configType: {
          case: 'typedConfig',
          value: buildHcm({
            statPrefix: `outbound_${address}_${port};`,
            route: { rds: String(port) },
            direction: 'outbound',
            extensions: ctx.proxy.extensions,
            phased,
            telemetry: hcmTelemetryWithoutTracing(ctx.push, ctx.proxy, 'outbound'),
          }),
        },
      },
    ],
  };
}

/**
 * A TCP chain to `target`; only istiod's fixed chains are named (the catch-alls), a service's are
 * not. `vs` is the VirtualService whose route chose the target: named in the chain's metadata.
 */
function tcpChain(
  ctx: OutboundContext,
  name: string | undefined,
  target: L4Target,
  match?: FilterChainInit['filterChainMatch'],
  vs?: Config<'VirtualService'>,
): FilterChainInit {
  // Weighted clusters count under the VirtualService (`<name>.<namespace>`, istiod).
  const statPrefix = 'cluster' in target ? target.cluster : vs ? `${vs.meta.name}.${vs.meta.namespace}` : (name ?? '');
  const tel = tcpTelemetry(ctx.push, ctx.proxy, 'outbound');
  return {
    ...(name ? { name } : {}),
    ...(match ? { filterChainMatch: match } : {}),
    filters: [...tel.filters, tcpProxyFilter(statPrefix, target, tel.accessLog)],
    ...(vs
      ? {
          metadata: {
            filterMetadata: {
              istio: { config: `/apis/networking.istio.io/v1/namespaces/${vs.meta.namespace}/virtual-service/${vs.meta.name}` },
            },
          },
        }
      : {}),
    // istiod bounds the handshake on a service's chains, not on its fixed catch-alls.
    ...(name === undefined ? { transportSocketConnectTimeout: durationFromMs(TRANSPORT_SOCKET_CONNECT_TIMEOUT_MS) } : {}),
  };
}

/** Where a route sends a port's connections, and the VirtualService that said so (none: the service's own cluster). */
interface Routed {
  readonly target: L4Target;
  readonly vs?: Config<'VirtualService'>;
}

/** The TCP destination of a service port: its VirtualService's tcp route, else the service's own cluster. */
function tcpTarget(ctx: OutboundContext, e: PortEntry): Routed {
  const vs = ctx.push.virtualService(e.service.hostname, ctx.proxy.namespace);
  const l4: L4RouteContext = { push: ctx.push, proxy: ctx.proxy, port: e.port.port, gateway: MESH_GATEWAY };
  const routed = vs ? tcpRouteTarget(l4, vs) : undefined;
  return routed ? { target: routed, vs: vs! } : { target: { cluster: buildClusterName('outbound', e.port.port, '', e.service.hostname) } };
}

/**
 * TLS ports: a chain per SNI of the VirtualService `tls` routes; an SNI none of them names goes
 * to the outbound policy through the default chain (istiod). Without tls routes, one chain to the
 * service's own cluster (or its tcp route) takes the port.
 */
function tlsChains(ctx: OutboundContext, e: PortEntry): { chains: FilterChainInit[]; fallback?: FilterChainInit } {
  const vs = ctx.push.virtualService(e.service.hostname, ctx.proxy.namespace);
  const l4: L4RouteContext = { push: ctx.push, proxy: ctx.proxy, port: e.port.port, gateway: MESH_GATEWAY };
  const chains: FilterChainInit[] = [];
  const routes = vs ? tlsRouteTargets(l4, vs) : [];
  for (const r of routes) {
    const serverNames = r.sniHosts.filter((h) => h !== '*');
    chains.push(tcpChain(ctx, undefined, r.target, serverNames.length > 0 ? { serverNames } : undefined, vs));
    if (serverNames.length === 0) return { chains }; // a catch-all SNI route shadows the rest
  }
  if (routes.length > 0) return { chains, fallback: tcpChain(ctx, PASSTHROUGH_FILTER_CHAIN, { cluster: fallbackCluster(ctx) }, {}) };
  const own = tcpTarget(ctx, e);
  return { chains: [tcpChain(ctx, undefined, own.target, undefined, own.vs)] };
}

/**
 * TLS ports of services without an address share 0.0.0.0:<port>: the SNI is all that tells them
 * apart, so each service's chain matches its hostname and other SNIs go to the outbound policy
 * (istiod: the hostname is the SNI match when there is no VIP to listen on).
 */
function wildcardTlsChains(ctx: OutboundContext, entries: readonly PortEntry[]): { chains: FilterChainInit[]; fallback: FilterChainInit } {
  const chains: FilterChainInit[] = [];
  for (const e of entries) {
    if (e.kind !== 'tls') continue;
    const tls = tlsChains(ctx, e);
    if (tls.fallback)
      chains.push(...tls.chains); // VirtualService tls routes name their own SNIs
    else {
      const own = tcpTarget(ctx, e);
      chains.push(tcpChain(ctx, undefined, own.target, { serverNames: [e.service.hostname] }, own.vs));
    }
  }
  return { chains, fallback: tcpChain(ctx, PASSTHROUGH_FILTER_CHAIN, { cluster: fallbackCluster(ctx) }, {}) };
}

function portListener(ctx: OutboundContext, name: string, address: string, port: number, entries: readonly PortEntry[]): Listener {
  const kinds = new Set(entries.map((e) => e.kind));
  const listenerFilters: ListenerFilterInit[] = [];
  let filterChains: FilterChainInit[];
  let defaultFilterChain: FilterChainInit | undefined;
  // The first service (namespace/host order) wins a port that several non-HTTP services share
  // without addresses: a connection carries no host to tell them apart (istiod: a conflict).
  const first = entries[0]!;
  if (kinds.has('http') || kinds.has('auto')) {
    // HTTP is told apart by ALPN (http_inspector), as istiod does even for declared HTTP ports:
    // plaintext HTTP goes to RDS; anything else is TCP to the one service this address names (a
    // VIP listener), or to the outbound policy (passthrough / blackhole) on a shared 0.0.0.0 port.
    // The rest must be the default_filter_chain: Envoy's chain match does not backtrack, so a
    // match-all chain would lose to the HTTP chain's raw_buffer match and then match nothing.
    listenerFilters.push(...(kinds.has('auto') ? [tlsInspector()] : []), httpInspector());
    const tcpFallback: Routed =
      address === wildcardAddress(ctx.proxy) ? { target: { cluster: fallbackCluster(ctx) } } : tcpTarget(ctx, first);
    filterChains = [httpChain(ctx, address, port, { transportProtocol: 'raw_buffer', applicationProtocols: PLAINTEXT_HTTP_ALPNS })];
    defaultFilterChain = tcpChain(ctx, PASSTHROUGH_FILTER_CHAIN, tcpFallback.target, {}, tcpFallback.vs);
  } else if (first.kind === 'tls') {
    const tls = address === wildcardAddress(ctx.proxy) ? wildcardTlsChains(ctx, entries) : tlsChains(ctx, first);
    filterChains = tls.chains;
    defaultFilterChain = tls.fallback;
    // SNI is only read when some chain routes by it (istiod: no inspector for a lone catch-all).
    if (filterChains.some((c) => (c.filterChainMatch?.serverNames?.length ?? 0) > 0)) listenerFilters.push(tlsInspector());
  } else {
    const own = tcpTarget(ctx, first);
    filterChains = [tcpChain(ctx, undefined, own.target, undefined, own.vs)];
  }
  return create(ListenerSchema, {
    name,
    address: socketAddress(address, port),
    bindToPort: false,
    trafficDirection: TrafficDirection.OUTBOUND,
    // No protocol-detection timeout (mesh protocolDetectionTimeout, 0s by default): wait for the inspectors.
    listenerFiltersTimeout: durationFromMs(0),
    continueOnListenerFiltersTimeout: true,
    filterChains,
    ...(defaultFilterChain ? { defaultFilterChain } : {}),
    ...(listenerFilters.length > 0 ? { listenerFilters } : {}),
  });
}
