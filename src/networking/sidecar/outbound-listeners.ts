import { create } from '@bufbuild/protobuf';
import { TrafficDirection } from '../../gen/envoy/config/core/v3/base_pb.js';
import { ListenerSchema, type Listener } from '../../gen/envoy/config/listener/v3/listener_pb.js';
import type { Config } from '../../config/index.js';
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
import { dualStackWildcards, listenBinds, wildcardAddress, wildcardBinds } from '../service-addresses.js';
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

/** The service ports one listener carries, on its address and the additional ones (the other IP family). */
interface ListenerBinds {
  readonly address: string;
  readonly extra: readonly string[];
  readonly port: number;
  readonly entries: PortEntry[];
}

/**
 * The sidecar's outbound listeners, as istiod lays them out: `virtualOutbound` on 15001 receives
 * every captured connection and hands it (use_original_dst) to the listener for its original
 * destination — `0.0.0.0_<port>` (`::_<port>` for an IPv6-only proxy) for HTTP ports (routes by
 * Host over RDS `<port>`), `<vip>_<port>` for TCP, TLS and sniffed ports of services with an
 * address (or an auto-allocated one the proxy consumes), `0.0.0.0_<port>` for those without one —
 * or keeps it and passes it through (ALLOW_ANY) or drops it (REGISTRY_ONLY).
 * HCMs carry no tracing here: it names the workload, and is laid into the encoded listeners per
 * workload (listener/hcm-tracing-splice.ts) so that the rest is built once per scope.
 */
export function buildOutboundListeners(ctx: OutboundContext): Listener[] {
  const wildcards = wildcardBinds(ctx.proxy);
  const byListener = new Map<string, ListenerBinds>();
  // The first service port of an address makes its listener, and its binds stay (istiod).
  const add = (binds: readonly string[], e: PortEntry): void => {
    const [address = '', ...extra] = binds;
    const name = `${address}_${e.port.port}`;
    const l = byListener.get(name);
    if (l) l.entries.push(e);
    else byListener.set(name, { address, extra, port: e.port.port, entries: [e] });
  };
  for (const service of ctx.scope.services) {
    for (const port of service.ports) {
      const kind = portKind(port.protocol);
      if (kind === 'udp' || port.port === VIRTUAL_OUTBOUND_PORT) continue;
      const listens = kind === 'http' ? [] : listenBinds(service, ctx.push, ctx.proxy);
      if (listens.length === 0) add(wildcards, { service, port, kind });
      else for (const binds of listens) add(binds, { service, port, kind });
    }
  }
  const listeners = [...byListener.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([, l]) => portListener(ctx, l));
  return [virtualOutbound(ctx), ...listeners];
}

function fallbackCluster(ctx: OutboundContext): string {
  return ctx.scope.outboundTrafficPolicy === 'REGISTRY_ONLY' ? BLACKHOLE_CLUSTER : PASSTHROUGH_CLUSTER;
}

function virtualOutbound(ctx: OutboundContext): Listener {
  return create(ListenerSchema, {
    name: VIRTUAL_OUTBOUND,
    address: socketAddress(wildcardAddress(ctx.proxy), VIRTUAL_OUTBOUND_PORT),
    additionalAddresses: dualStackWildcards(ctx.push, ctx.proxy, VIRTUAL_OUTBOUND_PORT),
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

/** The route configuration of a sniffed port on its service's own address: that service's virtual host alone (istiod). */
export function sniffedRouteName(hostname: string, port: number): string {
  return `${hostname}:${port}`;
}

function httpChain(
  ctx: OutboundContext,
  address: string,
  port: number,
  rds: string,
  match: FilterChainInit['filterChainMatch'],
): FilterChainInit {
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
            route: { rds },
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
 * TLS ports: a chain per SNI of the VirtualService `tls` routes (one without SNI, or `*`, matches
 * all). Without tls routes, one chain to the service's own cluster (or its tcp route): matching
 * all on the service's own address, its hostname as SNI on a shared wildcard address, where the
 * SNI is all that tells services apart (istiod).
 */
function tlsChains(ctx: OutboundContext, e: PortEntry, onWildcard: boolean): FilterChainInit[] {
  const vs = ctx.push.virtualService(e.service.hostname, ctx.proxy.namespace);
  const l4: L4RouteContext = { push: ctx.push, proxy: ctx.proxy, port: e.port.port, gateway: MESH_GATEWAY };
  const routes = vs ? tlsRouteTargets(l4, vs) : [];
  if (routes.length > 0) {
    return routes.map((r) => {
      const serverNames = r.sniHosts.includes('*') ? [] : [...r.sniHosts];
      return tcpChain(ctx, undefined, r.target, serverNames.length > 0 ? { serverNames } : undefined, vs);
    });
  }
  const own = tcpTarget(ctx, e);
  return [tcpChain(ctx, undefined, own.target, onWildcard ? { serverNames: [e.service.hostname] } : undefined, own.vs)];
}

/**
 * The chains one service port offers its listener, in istiod's order: TCP (or TLS by SNI) first,
 * then, for HTTP and sniffed ports, plaintext HTTP told apart by ALPN (http_inspector). A sniffed
 * port on the service's own address routes HTTP by a route configuration of its own,
 * `<host>:<port>` (the service's virtual host alone); on a wildcard address by the shared `<port>`.
 */
function entryChains(ctx: OutboundContext, e: PortEntry, address: string, onWildcard: boolean): PendingChain[] {
  const httpMatch = { transportProtocol: 'raw_buffer', applicationProtocols: PLAINTEXT_HTTP_ALPNS };
  const http = (rds: string): PendingChain => ({ match: httpMatch, build: () => httpChain(ctx, address, e.port.port, rds, httpMatch) });
  const tcp: PendingChain = {
    match: undefined,
    build: () => {
      const own = tcpTarget(ctx, e);
      return tcpChain(ctx, undefined, own.target, undefined, own.vs);
    },
  };
  switch (e.kind) {
    case 'http':
      return [http(String(e.port.port))];
    case 'auto':
      return [tcp, http(onWildcard ? String(e.port.port) : sniffedRouteName(e.service.hostname, e.port.port))];
    case 'tls':
      return tlsChains(ctx, e, onWildcard).map((c) => ({ match: c.filterChainMatch, build: () => c }));
    default:
      return [tcp];
  }
}

/**
 * A chain by its match, built only if the listener keeps it: the HTTP services of a port offer one
 * chain each, and all but the first are dropped.
 */
interface PendingChain {
  readonly match: FilterChainInit['filterChainMatch'];
  readonly build: () => FilterChainInit;
}

type ChainMatch = NonNullable<FilterChainInit['filterChainMatch']>;

/** A chain that matches every connection (istiod's isMatchAll): it becomes the listener's default chain. */
function matchesAll(m: ChainMatch | undefined): boolean {
  return (
    (m?.serverNames ?? []).every((n) => n === '*') &&
    (m?.applicationProtocols ?? []).length === 0 &&
    (m?.transportProtocol ?? '') === '' &&
    (m?.prefixRanges ?? []).length === 0
  );
}

/** Whether two chains match the same connections (istiod's conflictsWith): the later one could never be chosen. */
function sameMatch(a: ChainMatch | undefined, b: ChainMatch | undefined): boolean {
  const set = (xs: readonly string[] | undefined): string => [...new Set((xs ?? []).filter((x) => x !== '*'))].sort().join(',');
  return (
    (a?.transportProtocol ?? '') === (b?.transportProtocol ?? '') &&
    (a?.applicationProtocols ?? []).join(',') === (b?.applicationProtocols ?? []).join(',') &&
    set(a?.serverNames) === set(b?.serverNames)
  );
}

/**
 * One listener for the service ports that share an address and port, as istiod merges them: each
 * service's chains in order, a chain dropped when an earlier one already matches the same
 * connections (so the first service wins a port that several share without addresses, a
 * connection carrying nothing to tell them apart). The chain that matches everything is the
 * default_filter_chain — Envoy's chain match does not backtrack, so a match-all chain listed
 * beside an HTTP chain's raw_buffer match would never be reached — or, alone, the only chain;
 * without one, connections nothing matches go to the outbound policy (passthrough / blackhole).
 */
function portListener(ctx: OutboundContext, l: ListenerBinds): Listener {
  const { address, port } = l;
  const onWildcard = address === wildcardAddress(ctx.proxy);
  const kept: PendingChain[] = [];
  for (const e of l.entries) {
    for (const c of entryChains(ctx, e, address, onWildcard)) if (!kept.some((k) => sameMatch(k.match, c.match))) kept.push(c);
  }
  const merged = kept.map((c) => c.build());
  const matching = merged.filter((c) => !matchesAll(c.filterChainMatch));
  const all = merged.find((c) => matchesAll(c.filterChainMatch));
  let filterChains: FilterChainInit[];
  let defaultFilterChain: FilterChainInit | undefined;
  if (matching.length === 0) filterChains = all ? [stripMatch(all)] : [];
  else {
    filterChains = matching;
    defaultFilterChain = all ? stripMatch(all) : tcpChain(ctx, PASSTHROUGH_FILTER_CHAIN, { cluster: fallbackCluster(ctx) }, {});
  }
  // Inspectors only for what some chain matches on: SNI (tls_inspector), ALPN (http_inspector).
  const listenerFilters: ListenerFilterInit[] = [
    ...(matching.some((c) => (c.filterChainMatch?.serverNames?.length ?? 0) > 0) ? [tlsInspector()] : []),
    ...(matching.some((c) => (c.filterChainMatch?.applicationProtocols?.length ?? 0) > 0) ? [httpInspector()] : []),
  ];
  return create(ListenerSchema, {
    name: `${address}_${port}`,
    address: socketAddress(address, port),
    additionalAddresses: l.extra.map((a) => ({ address: socketAddress(a, port) })),
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

/** A match-all chain carries no match (istiod sends none: a `*` SNI is no match). */
function stripMatch(c: FilterChainInit): FilterChainInit {
  if (c.filterChainMatch === undefined) return c;
  const { filterChainMatch: _, ...rest } = c;
  return rest;
}
