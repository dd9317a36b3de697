/**
 * The filters istiod adds for Istio's proxy build, with istiod's configs: peer metadata exchange
 * (HTTP filter on every HCM, network filter first on sidecar inbound chains, upstream filter on
 * outbound clusters), the ALPN override on outbound and gateway HCMs, and Envoy's gRPC stats on
 * every HCM. Each is built once; a proxy that cannot load an Istio filter (stock Envoy, per
 * ProxyExtensions) gets none of it — there is no portable equivalent for either.
 */
import type { JsonObject } from '@bufbuild/protobuf';
import type { Any } from '@bufbuild/protobuf/wkt';
import type { FilterSchema as ClusterFilterSchema } from '../gen/envoy/config/cluster/v3/filter_pb.js';
import { FilterConfig_Protocol, FilterConfigSchema as AlpnConfigSchema } from '../gen/envoy/config/filter/http/alpn/v2alpha1/config_pb.js';
import { FilterConfigSchema as GrpcStatsConfigSchema } from '../gen/envoy/extensions/filters/http/grpc_stats/v3/config_pb.js';
import { TypedStructSchema } from '../gen/udpa/type/v1/typed_struct_pb.js';
import type { ProxyExtensions } from '../model/index.js';
import { packAny, type Init } from './common.js';
import type { HttpFilterInit } from './listener/hcm.js';
import type { FilterInit } from './listener/tcp-proxy.js';

export const METADATA_EXCHANGE = 'istio.metadata_exchange';
export const ALPN_FILTER = 'istio.alpn';
export const GRPC_STATS_FILTER = 'envoy.filters.http.grpc_stats';

const PEER_METADATA_TYPE = 'type.googleapis.com/io.istio.http.peer_metadata.Config';
const TCP_MX_TYPE = 'type.googleapis.com/envoy.tcp.metadataexchange.config.MetadataExchange';

/** istio-proxy's configs travel as udpa TypedStruct (their protos are not in Envoy's API). */
const typedStruct = (typeUrl: string, value: JsonObject): Any => packAny(TypedStructSchema, { typeUrl, value });

const discovery = [{ istio_headers: {} }, { workload_discovery: {} }];
const INBOUND_MX = typedStruct(PEER_METADATA_TYPE, { downstream_discovery: discovery, downstream_propagation: [{ istio_headers: {} }] });
const OUTBOUND_MX = typedStruct(PEER_METADATA_TYPE, { upstream_discovery: discovery, upstream_propagation: [{ istio_headers: {} }] });
const TCP_MX = typedStruct(TCP_MX_TYPE, { protocol: 'istio-peer-exchange', enable_discovery: true });

// The in-mesh ALPNs per upstream protocol: the server's sidecar recognises mesh traffic by them.
const ALPN = packAny(AlpnConfigSchema, {
  alpnOverride: [
    { upstreamProtocol: FilterConfig_Protocol.HTTP10, alpnOverride: ['istio-http/1.0', 'istio', 'http/1.0'] },
    { upstreamProtocol: FilterConfig_Protocol.HTTP11, alpnOverride: ['istio-http/1.1', 'istio', 'http/1.1'] },
    { upstreamProtocol: FilterConfig_Protocol.HTTP2, alpnOverride: ['istio-h2', 'istio', 'h2'] },
  ],
});
const GRPC_STATS = packAny(GrpcStatsConfigSchema, {
  emitFilterState: true,
  perMethodStatSpecifier: { case: 'statsForAllMethods', value: { value: false } },
});

export type HcmClass = 'inbound' | 'outbound' | 'gateway';

/** What goes first in an HCM: metadata exchange (before authn/authz, so RBAC sees the peer). */
export function leadingIstioHttpFilters(x: ProxyExtensions, cls: HcmClass): HttpFilterInit[] {
  if (!x.supports(METADATA_EXCHANGE)) return [];
  return [{ name: METADATA_EXCHANGE, configType: { case: 'typedConfig', value: cls === 'inbound' ? INBOUND_MX : OUTBOUND_MX } }];
}

/** What goes before fault/CORS: gRPC stats (stock Envoy has it), then the ALPN override except on sidecar inbound. */
export function trailingIstioHttpFilters(x: ProxyExtensions, cls: HcmClass): HttpFilterInit[] {
  return [
    { name: GRPC_STATS_FILTER, configType: { case: 'typedConfig', value: GRPC_STATS } },
    ...(cls !== 'inbound' && x.supports(ALPN_FILTER)
      ? [{ name: ALPN_FILTER, configType: { case: 'typedConfig' as const, value: ALPN } }]
      : []),
  ];
}

/** The network filter that opens every sidecar inbound chain (outbound, the clusters carry it). */
export function inboundMxNetworkFilters(x: ProxyExtensions): FilterInit[] {
  return x.supports(METADATA_EXCHANGE) ? [{ name: METADATA_EXCHANGE, configType: { case: 'typedConfig', value: TCP_MX } }] : [];
}

/** The upstream filter of outbound clusters (service, subset, passthrough). */
export function clusterMxFilters(x: ProxyExtensions): Init<typeof ClusterFilterSchema>[] {
  return x.supports(METADATA_EXCHANGE) ? [{ name: METADATA_EXCHANGE, typedConfig: TCP_MX }] : [];
}
