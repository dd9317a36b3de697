/**
 * A waypoint's listeners (istiod's listener_waypoint.go):
 * - `connect_terminate` on 0.0.0.0:15008 terminates HBONE (mTLS, HTTP/2 CONNECT), records the
 *   tunnel's target and the peer's identity in filter state, and hands each CONNECT stream to
 * - `main_internal`, an internal listener that matches the original destination — a bound
 *   service's VIP and port, or a bound workload's address — to a filter chain applying the
 *   service's L7 config (VirtualService routes, AuthorizationPolicies targeting the waypoint or
 *   the service), whose inbound-vip clusters lead, per endpoint, to
 * - `connect_originate`, an internal listener that opens HBONE to the destination's 15008.
 */
import { create } from '@bufbuild/protobuf';
import { TrafficDirection } from '../../gen/envoy/config/core/v3/base_pb.js';
import { ListenerSchema, type Listener } from '../../gen/envoy/config/listener/v3/listener_pb.js';
import { WeightedClusterSchema } from '../../gen/envoy/config/route/v3/route_components_pb.js';
import { FilterStateValue_SharedWithUpstream } from '../../gen/envoy/extensions/filters/common/set_filter_state/v3/value_pb.js';
import { ConfigSchema as HttpSetFilterStateSchema } from '../../gen/envoy/extensions/filters/http/set_filter_state/v3/set_filter_state_pb.js';
import { RouterSchema } from '../../gen/envoy/extensions/filters/http/router/v3/router_pb.js';
import {
  HttpConnectionManager_ForwardClientCertDetails,
  HttpConnectionManagerSchema,
} from '../../gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager_pb.js';
import { ConfigSchema as NetworkSetFilterStateSchema } from '../../gen/envoy/extensions/filters/network/set_filter_state/v3/set_filter_state_pb.js';
import { hcmTelemetry, tcpTelemetry, type HcmTelemetry } from '../telemetry/index.js';
import { TcpProxySchema } from '../../gen/envoy/extensions/filters/network/tcp_proxy/v3/tcp_proxy_pb.js';
import { DownstreamTlsContextSchema } from '../../gen/envoy/extensions/transport_sockets/tls/v3/tls_pb.js';
import { IPMatcherSchema } from '../../gen/xds/type/matcher/v3/ip_pb.js';
import { type Proxy, type PushContext, type WaypointScope, MESH_GATEWAY, parseClusterName } from '../../model/index.js';
import type { Service, ServicePort } from '../../registry/index.js';
import { durationFromMs, packAny, type Init } from '../common.js';
import { METADATA_EXCHANGE, inboundMxNetworkFilters } from '../istio-extensions.js';
import { buildHcm, HCM_FILTER, type HttpFilterInit } from '../listener/hcm.js';
import {
  httpInspector,
  originalDst,
  socketAddress,
  tlsInspector,
  type FilterChainInit,
  type ListenerFilterInit,
} from '../listener/listener-common.js';
import { anyPort } from '../sidecar/inbound-listener.js';
import { tcpProxyFilter, TCP_PROXY_FILTER, type FilterInit } from '../listener/tcp-proxy.js';
import { MAX_DIRECT_RESPONSE_BODY_BYTES, ROUTER_FILTER, retryPolicy } from '../route/route-action.js';
import { routesForVirtualService, type RouteInit } from '../route/http-routes.js';
import { cidrRange } from '../policy/matchers.js';
import { protocolSubsets } from './waypoint-clusters.js';
import { ownAddressesFor, wildcardBinds } from '../service-addresses.js';
import {
  appProtocolMatcher,
  connectTlsContext,
  CONNECT_AUTHORITY_KEY,
  CONNECT_ORIGINATE,
  CONNECT_TERMINATE,
  destinationIpInput,
  destinationPortMatcher,
  ENCAP_CLUSTER,
  HBONE_PORT,
  inboundVipClusterName,
  MAIN_INTERNAL,
  ORIGINAL_DST_LOCAL_IP_KEY,
  PEER_PRINCIPAL_KEY,
  toChain,
  toMatcher,
  waypointPeerMetadata,
  type MatcherInit,
  type OnMatchInit,
} from './waypoint-common.js';
import { waypointHttpRbac, waypointNetworkRbac, waypointPolicies } from './waypoint-policy.js';

/**
 * istio-proxy registers `istio.hashable_string` for Istio's filter-state keys; stock Envoy has
 * the generic `envoy.string` object, which RBAC's filter_state matcher reads the same way.
 */
const stringFactory = (proxy: Proxy): string => (proxy.extensions.supports(METADATA_EXCHANGE) ? 'istio.hashable_string' : 'envoy.string');

const fsv = (
  key: string,
  format: string,
  factoryKey?: string,
): Init<typeof HttpSetFilterStateSchema>['onRequestHeaders'] extends (infer T)[] | undefined ? T : never => ({
  key: { case: 'objectKey', value: key },
  ...(factoryKey ? { factoryKey } : {}),
  value: {
    case: 'formatString',
    value: { format: { case: 'textFormatSource', value: { specifier: { case: 'inlineString', value: format } } } },
  },
  sharedWithUpstream: FilterStateValue_SharedWithUpstream.ONCE,
});

/** istiod's ConnectAuthorityFilter: the tunnel's target (the original destination), its authority, the peer's and our identity. */
function connectAuthorityFilter(proxy: Proxy): HttpFilterInit {
  const f = stringFactory(proxy);
  return {
    name: 'connect_authority',
    configType: {
      case: 'typedConfig',
      value: packAny(HttpSetFilterStateSchema, {
        onRequestHeaders: [
          fsv(ORIGINAL_DST_LOCAL_IP_KEY, '%REQ(:AUTHORITY)%'),
          fsv(CONNECT_AUTHORITY_KEY, '%REQ(:AUTHORITY)%', f),
          fsv('envoy.filters.listener.original_dst.remote_ip', '%DOWNSTREAM_REMOTE_ADDRESS%'),
          fsv(PEER_PRINCIPAL_KEY, '%DOWNSTREAM_PEER_URI_SAN%', f),
          fsv('io.istio.local_principal', '%DOWNSTREAM_LOCAL_URI_SAN%', f),
        ],
      }),
    },
  };
}

/** The HTTP/2 CONNECT terminator on 15008. */
export function buildConnectTerminate(push: PushContext, proxy: Proxy): Listener {
  const filters: HttpFilterInit[] = [
    ...(proxy.extensions.supports(METADATA_EXCHANGE)
      ? [
          {
            name: 'waypoint_downstream_peer_metadata',
            configType: { case: 'typedConfig' as const, value: waypointPeerMetadata('downstream') },
          },
        ]
      : []),
    connectAuthorityFilter(proxy),
    { name: ROUTER_FILTER, configType: { case: 'typedConfig', value: packAny(RouterSchema, {}) } },
  ];
  const hcm = packAny(HttpConnectionManagerSchema, {
    statPrefix: CONNECT_TERMINATE,
    routeSpecifier: {
      case: 'routeConfig',
      value: {
        name: 'default',
        virtualHosts: [
          {
            name: 'default',
            domains: ['*'],
            routes: [
              {
                match: { pathSpecifier: { case: 'connectMatcher', value: {} } },
                action: {
                  case: 'route',
                  value: {
                    clusterSpecifier: { case: 'cluster', value: MAIN_INTERNAL },
                    upgradeConfigs: [{ upgradeType: 'CONNECT', connectConfig: {} }],
                  },
                },
              },
            ],
          },
        ],
      },
    },
    httpFilters: filters,
    http2ProtocolOptions: {
      allowConnect: true,
      maxConcurrentStreams: 100,
      connectionKeepalive: { interval: durationFromMs(10_000), timeout: durationFromMs(20_000) },
    },
    serverName: 'istio-envoy',
    useRemoteAddress: false,
    forwardClientCertDetails: HttpConnectionManager_ForwardClientCertDetails.APPEND_FORWARD,
    setCurrentClientCertDetails: { subject: true, uri: true, dns: true },
    upgradeConfigs: [{ upgradeType: 'CONNECT' }],
    streamIdleTimeout: durationFromMs(0),
  });
  // istiod's actualWildcards: a dual-stack Pod's waypoint also takes HBONE on `::` (whatever ISTIO_DUAL_STACK says).
  const [bind = '0.0.0.0', ...extraBinds] = wildcardBinds(proxy);
  return create(ListenerSchema, {
    name: CONNECT_TERMINATE,
    address: socketAddress(bind, HBONE_PORT),
    additionalAddresses: extraBinds.map((a) => ({ address: socketAddress(a, HBONE_PORT) })),
    filterChains: [
      {
        name: 'default',
        transportSocket: {
          name: 'tls',
          configType: {
            case: 'typedConfig',
            value: packAny(DownstreamTlsContextSchema, { commonTlsContext: connectTlsContext(push), requireClientCertificate: true }),
          },
        },
        filters: [{ name: HCM_FILTER, configType: { case: 'typedConfig', value: hcm } }],
      },
    ],
    connectionBalanceConfig: { balanceType: { case: 'exactBalance', value: {} } },
  });
}

/** The HBONE originator: tunnels each connection to its original destination (the cluster adds port 15008). */
export function buildConnectOriginate(): Listener {
  return create(ListenerSchema, {
    name: CONNECT_ORIGINATE,
    useOriginalDst: false,
    listenerSpecifier: { case: 'internalListener', value: {} },
    listenerFilters: [originalDst()],
    filterChains: [
      {
        filters: [
          {
            name: TCP_PROXY_FILTER,
            configType: {
              case: 'typedConfig',
              value: packAny(TcpProxySchema, {
                statPrefix: CONNECT_ORIGINATE,
                clusterSpecifier: { case: 'cluster', value: CONNECT_ORIGINATE },
                tunnelingConfig: { hostname: '%DOWNSTREAM_LOCAL_ADDRESS%' },
              }),
            },
          },
        ],
      },
    ],
  });
}

/** A route's clusters renamed from `outbound|…` to the waypoint's `inbound-vip|…` when the destination is bound to it (istiod's getWaypointDestinationCluster). */
function toInboundVip(name: string, bound: ReadonlyMap<string, Service>): string {
  const c = parseClusterName(name);
  if (!c || c.direction !== 'outbound') return name;
  const svc = bound.get(c.host);
  if (!svc) return name;
  const port = svc.ports.find((p) => p.port === c.port);
  const proto = port && protocolSubsets(port).includes('http') ? 'http' : port ? 'tcp' : 'http';
  return inboundVipClusterName(c.port, c.subset ? `${proto}/${c.subset}` : proto, c.host);
}

function rewriteRoute(r: RouteInit, bound: ReadonlyMap<string, Service>): RouteInit {
  if (r.action?.case !== 'route') return r;
  const a = r.action.value;
  const cs = a.clusterSpecifier;
  if (cs?.case === 'cluster')
    return {
      ...r,
      action: { case: 'route', value: { ...a, clusterSpecifier: { case: 'cluster', value: toInboundVip(cs.value, bound) } } },
    };
  if (cs?.case === 'weightedClusters') {
    const clusters = (cs.value.clusters ?? []).map((w) => ({ ...(w as object), name: toInboundVip(w.name ?? '', bound) }));
    const weighted = { ...(cs.value as object), clusters } as Init<typeof WeightedClusterSchema>;
    return {
      ...r,
      action: {
        case: 'route',
        value: { ...a, clusterSpecifier: { case: 'weightedClusters', value: create(WeightedClusterSchema, weighted) } },
      },
    };
  }
  return r;
}

/** The routes of one bound service port: its VirtualService's HTTP rules (clusters renamed), else the default route to its inbound-vip cluster. */
function serviceRoutes(push: PushContext, proxy: Proxy, svc: Service, port: ServicePort, bound: ReadonlyMap<string, Service>): RouteInit[] {
  const vs = push.virtualService(svc.hostname, svc.namespace);
  const routes = vs
    ? routesForVirtualService({ push, proxy, port: port.port, headerStyle: 'string_match' }, vs, MESH_GATEWAY).map((r) =>
        rewriteRoute(r, bound),
      )
    : [];
  if (routes.length > 0) return routes;
  return [defaultRoute(inboundVipClusterName(port.port, 'http', svc.hostname), `${svc.hostname}:${port.port}/*`)];
}

/** istiod's default route of an inbound-vip or direct chain: everything to `cluster`, no timeout, the default retries. */
function defaultRoute(cluster: string, operation: string): RouteInit {
  const retries = retryPolicy(undefined);
  return {
    name: 'default',
    match: { pathSpecifier: { case: 'prefix', value: '/' } },
    action: {
      case: 'route',
      value: {
        clusterSpecifier: { case: 'cluster', value: cluster },
        timeout: durationFromMs(0),
        maxGrpcTimeout: durationFromMs(0),
        ...(retries ? { retryPolicy: retries } : {}),
      },
    },
    decorator: { operation },
  };
}

function httpChain(
  push: PushContext,
  proxy: Proxy,
  scope: WaypointScope,
  svc: Service,
  port: ServicePort,
  bound: ReadonlyMap<string, Service>,
): FilterChainInit {
  const name = inboundVipClusterName(port.port, 'http', svc.hostname);
  const hcm = buildHcm({
    statPrefix: `inbound_0.0.0.0_${port.port};`,
    route: {
      inline: {
        name,
        virtualHosts: [{ name: `inbound|http|${port.port}`, domains: ['*'], routes: serviceRoutes(push, proxy, svc, port, bound) }],
        validateClusters: false,
        maxDirectResponseBodySizeBytes: MAX_DIRECT_RESPONSE_BODY_BYTES,
      },
    },
    direction: 'waypoint',
    extensions: proxy.extensions,
    leadingFilters: waypointHttpRbac(push, waypointPolicies(push, scope.key, svc)),
    telemetry: waypointHcmTelemetry(push, proxy),
    http2: port.protocol === 'HTTP2' || port.protocol === 'GRPC' || port.protocol === 'GRPC-WEB',
  });
  return { name, filters: [{ name: HCM_FILTER, configType: { case: 'typedConfig', value: hcm } }] };
}

function tcpChain(
  push: PushContext,
  proxy: Proxy,
  scope: WaypointScope,
  svc: Service | undefined,
  name: string,
  cluster: string,
  lead: readonly FilterInit[] = [],
): FilterChainInit {
  const telemetry = tcpTelemetry(push, proxy, 'inbound');
  return {
    name,
    filters: [
      ...lead,
      ...inboundMxNetworkFilters(proxy.extensions),
      ...waypointNetworkRbac(push, waypointPolicies(push, scope.key, svc)),
      ...telemetry.filters,
      tcpProxyFilter(cluster, { cluster }, telemetry.accessLog),
    ],
  };
}

/**
 * The HCM telemetry of a waypoint chain (istiod's sidecar-inbound class), with istio-proxy's
 * upstream peer metadata filter first among the filters that precede the router, as istiod places it.
 */
function waypointHcmTelemetry(push: PushContext, proxy: Proxy): HcmTelemetry {
  const t = hcmTelemetry(push, proxy, 'inbound');
  const peer: HttpFilterInit[] = proxy.extensions.supports(METADATA_EXCHANGE)
    ? [{ name: 'waypoint_upstream_peer_metadata', configType: { case: 'typedConfig', value: waypointPeerMetadata('upstream') } }]
    : [];
  return { ...t, httpFilters: [...peer, ...t.httpFilters] };
}

/** istiod's ConnectAuthorityNetworkFilter: a directly addressed workload's target, for connect_originate. */
function connectAuthorityNetworkFilter(): FilterInit {
  return {
    name: 'connect_authority',
    configType: {
      case: 'typedConfig',
      value: packAny(NetworkSetFilterStateSchema, {
        onNewConnection: [fsv(ORIGINAL_DST_LOCAL_IP_KEY, `%FILTER_STATE(${ORIGINAL_DST_LOCAL_IP_KEY}:PLAIN)%`)],
      }),
    },
  };
}

/** The main internal listener: destination IP → destination port → (protocol →) the service port's chain. */
export function buildMainInternal(push: PushContext, proxy: Proxy, scope: WaypointScope): Listener {
  const bound = new Map(scope.services.map((s) => [s.hostname, s]));
  const chains: FilterChainInit[] = [];
  const rangeMatchers: { ranges: ReturnType<typeof cidrRange>[]; onMatch: OnMatchInit }[] = [];
  const tlsPorts = new Set<number>();
  const plainPorts = new Set<number>();
  /** Per port: `auto` when some chain there needs the HTTP inspector, else the one protocol its chains serve. */
  const kinds = new Map<number, 'auto' | 'http' | 'tcp'>();
  for (const svc of scope.services) {
    const portMap: Record<string, OnMatchInit> = {};
    for (const port of svc.ports) {
      const subsets = protocolSubsets(port);
      if (subsets.length === 0) continue;
      (port.protocol === 'TLS' || port.protocol === 'HTTPS' ? tlsPorts : plainPorts).add(port.port);
      const kind = subsets.length === 2 ? 'auto' : subsets[0]!;
      // Sniffed: an auto port, or HTTP and TCP chains on one port (istiod marks it Unsupported).
      const before = kinds.get(port.port);
      kinds.set(port.port, before === undefined || before === kind ? kind : 'auto');
      const tcpName = inboundVipClusterName(port.port, 'tcp', svc.hostname);
      const httpName = inboundVipClusterName(port.port, 'http', svc.hostname);
      if (subsets.includes('tcp')) chains.push(tcpChain(push, proxy, scope, svc, tcpName, tcpName));
      if (subsets.includes('http')) chains.push(httpChain(push, proxy, scope, svc, port, bound));
      portMap[String(port.port)] =
        subsets.length === 2
          ? toMatcher(appProtocolMatcher(toChain(httpName), toChain(tcpName)))
          : toChain(subsets[0] === 'http' ? httpName : tcpName);
    }
    // A service without a VIP (headless) has istiod's default address 0.0.0.0: a /32 range no client targets, kept as istiod sends it.
    const own = ownAddressesFor(svc, push, proxy); // istiod's GetAllAddressesForProxy
    const vips = own.length > 0 ? own : ['0.0.0.0'];
    if (Object.keys(portMap).length > 0) {
      rangeMatchers.push({
        ranges: [...new Set(vips)].sort().map(cidrRange),
        onMatch: toMatcher(destinationPortMatcher(portMap)),
      });
    }
  }
  // A bound workload addressed directly: any port, sniffed, to connect_originate through `encap`.
  chains.push(tcpChain(push, proxy, scope, undefined, 'direct-tcp', ENCAP_CLUSTER, [connectAuthorityNetworkFilter()]));
  const direct = scope.workloads.flatMap((w) => w.addresses);
  if (direct.length > 0) {
    const hcm = buildHcm({
      statPrefix: 'inbound_0.0.0.0_0;',
      route: {
        inline: {
          // istiod names it after the cluster; its one route has no host (`:0/*`).
          name: ENCAP_CLUSTER,
          virtualHosts: [{ name: 'inbound|http|0', domains: ['*'], routes: [defaultRoute(ENCAP_CLUSTER, ':0/*')] }],
          validateClusters: false,
          maxDirectResponseBodySizeBytes: MAX_DIRECT_RESPONSE_BODY_BYTES,
        },
      },
      direction: 'waypoint',
      extensions: proxy.extensions,
      leadingFilters: waypointHttpRbac(push, waypointPolicies(push, scope.key, undefined)),
      telemetry: waypointHcmTelemetry(push, proxy),
    });
    chains.push({
      name: 'direct-http',
      filters: [connectAuthorityNetworkFilter(), { name: HCM_FILTER, configType: { case: 'typedConfig', value: hcm } }],
    });
    rangeMatchers.push({
      ranges: direct.map(cidrRange),
      onMatch: toMatcher(appProtocolMatcher(toChain('direct-http'), toChain('direct-tcp'))),
    });
  }
  return create(ListenerSchema, {
    name: MAIN_INTERNAL,
    listenerSpecifier: { case: 'internalListener', value: {} },
    listenerFilters: mainInternalListenerFilters(kinds, tlsPorts, plainPorts, direct.length > 0),
    trafficDirection: TrafficDirection.INBOUND,
    filterChains: chains,
    ...(rangeMatchers.length > 0 ? { filterChainMatcher: ipMatcher(rangeMatchers) } : {}),
  });
}

/**
 * istiod's main_internal listener filters: original_dst; the HTTP inspector, off on ports where no
 * chain sniffs (unless workloads are bound: any port reaches them); the TLS inspector only with a
 * TLS port, off on the ports that have none.
 */
function mainInternalListenerFilters(
  kinds: ReadonlyMap<number, 'auto' | 'http' | 'tcp'>,
  tlsPorts: ReadonlySet<number>,
  plainPorts: ReadonlySet<number>,
  workloads: boolean,
): ListenerFilterInit[] {
  const http = httpInspector();
  const noSniffing = [...kinds]
    .filter(([, k]) => k !== 'auto')
    .map(([p]) => p)
    .sort((a, b) => a - b);
  if (!workloads && noSniffing.length > 0) http.filterDisabled = anyPort(noSniffing);
  const out = [originalDst(), http];
  if (tlsPorts.size > 0) {
    const tls = tlsInspector();
    const plain = [...plainPorts].filter((p) => !tlsPorts.has(p)).sort((a, b) => a - b);
    if (plain.length > 0) tls.filterDisabled = anyPort(plain);
    out.push(tls);
  }
  return out;
}

function ipMatcher(rangeMatchers: { ranges: ReturnType<typeof cidrRange>[]; onMatch: OnMatchInit }[]): MatcherInit {
  return {
    matcherType: {
      case: 'matcherTree',
      value: {
        input: { name: 'ip', typedConfig: destinationIpInput() },
        treeType: { case: 'customMatch', value: { name: 'ip', typedConfig: packAny(IPMatcherSchema, { rangeMatchers }) } },
      },
    },
  };
}

/** Every listener of a waypoint, in istiod's order. */
export function buildWaypointListeners(push: PushContext, proxy: Proxy, scope: WaypointScope): Listener[] {
  return [buildConnectTerminate(push, proxy), buildMainInternal(push, proxy, scope), buildConnectOriginate()];
}
