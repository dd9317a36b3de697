import type { AccessLogSchema } from '../../gen/envoy/config/accesslog/v3/accesslog_pb.js';
import type { FilterSchema } from '../../gen/envoy/config/listener/v3/listener_components_pb.js';
import { TcpProxySchema } from '../../gen/envoy/extensions/filters/network/tcp_proxy/v3/tcp_proxy_pb.js';
import { packAny, type Init } from '../common.js';

export type FilterInit = Init<typeof FilterSchema>;
export const TCP_PROXY_FILTER = 'envoy.filters.network.tcp_proxy';

/** Where a TCP connection goes: one cluster, or clusters by weight (VirtualService tcp/tls routes). */
export type L4Target = { readonly cluster: string } | { readonly weighted: readonly { readonly name: string; readonly weight: number }[] };

export function tcpProxyFilter(statPrefix: string, target: L4Target, accessLog: readonly Init<typeof AccessLogSchema>[] = []): FilterInit {
  const clusterSpecifier =
    'cluster' in target
      ? { case: 'cluster' as const, value: target.cluster }
      : { case: 'weightedClusters' as const, value: { clusters: target.weighted.map((w) => ({ name: w.name, weight: w.weight })) } };
  return {
    name: TCP_PROXY_FILTER,
    configType: {
      case: 'typedConfig',
      value: packAny(TcpProxySchema, { statPrefix, clusterSpecifier, ...(accessLog.length > 0 ? { accessLog: [...accessLog] } : {}) }),
    },
  };
}
