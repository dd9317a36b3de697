/**
 * The Envoy bootstrap (envoy.config.bootstrap.v3.Bootstrap, proto3 JSON in Istio's snake_case)
 * the agent writes for a sidecar or gateway, after Istio's envoy_bootstrap.json: ADS over the
 * `xds-grpc` cluster to the agent's local ADS proxy socket, workload secrets over the `sds-grpc`
 * cluster to the agent's SDS socket, the admin API on 127.0.0.1:15000 and Prometheus stats on
 * 15090. Socket paths are written absolute: Envoy need not share the agent's working directory.
 * (Istio's `agent` cluster and 15021 health listener are left out: this agent serves no 15020.)
 */
import path from 'node:path';
import { SDS_CLUSTER } from '../networking/secret/sds-config.js';
import type { AgentNode } from './node-identity.js';

export const XDS_CLUSTER = 'xds-grpc';
export const ADMIN_PORT = 15000;
export const PROMETHEUS_PORT = 15090;

export interface EnvoyBootstrapOptions {
  readonly node: AgentNode;
  readonly xdsSocket: string;
  readonly sdsSocket: string;
  /** ads_config api_type (Istio: DELTA_GRPC). */
  readonly xdsApi: 'GRPC' | 'DELTA_GRPC';
  readonly adminAddress?: string;
}

const HTTP2_OPTIONS = {
  'envoy.extensions.upstreams.http.v3.HttpProtocolOptions': {
    '@type': 'type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
    explicit_http_config: { http2_protocol_options: {} },
  },
};

function endpointCluster(name: string, address: Record<string, unknown>, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name,
    type: 'STATIC',
    connect_timeout: '1s',
    lb_policy: 'ROUND_ROBIN',
    load_assignment: { cluster_name: name, endpoints: [{ lb_endpoints: [{ endpoint: { address } }] }] },
    ...extra,
  };
}

const pipe = (p: string): Record<string, unknown> => ({ pipe: { path: path.resolve(p) } });
const socket = (address: string, port: number): Record<string, unknown> => ({ socket_address: { protocol: 'TCP', address, port_value: port } });
const bigLimits = { max_connections: 100000, max_pending_requests: 100000, max_requests: 100000 };

function prometheusListener(): Record<string, unknown> {
  return {
    name: 'prometheus',
    address: socket('0.0.0.0', PROMETHEUS_PORT),
    filter_chains: [
      {
        filters: [
          {
            name: 'envoy.filters.network.http_connection_manager',
            typed_config: {
              '@type': 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
              codec_type: 'AUTO',
              stat_prefix: 'stats',
              route_config: {
                virtual_hosts: [{ name: 'backend', domains: ['*'], routes: [{ match: { prefix: '/stats/prometheus' }, route: { cluster: 'prometheus_stats' } }] }],
              },
              http_filters: [{ name: 'envoy.filters.http.router', typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router' } }],
            },
          },
        ],
      },
    ],
  };
}

export function buildEnvoyBootstrap(o: EnvoyBootstrapOptions): Record<string, unknown> {
  const admin = o.adminAddress ?? '127.0.0.1';
  const adsSource = { ads: {}, initial_fetch_timeout: '0s', resource_api_version: 'V3' };
  return {
    node: { id: o.node.id, cluster: o.node.cluster, locality: {}, metadata: o.node.metadata },
    admin: { address: socket(admin, ADMIN_PORT) },
    dynamic_resources: {
      lds_config: adsSource,
      cds_config: adsSource,
      ads_config: {
        api_type: o.xdsApi,
        set_node_on_first_message_only: true,
        transport_api_version: 'V3',
        grpc_services: [{ envoy_grpc: { cluster_name: XDS_CLUSTER } }],
      },
    },
    static_resources: {
      clusters: [
        endpointCluster('prometheus_stats', socket(admin, ADMIN_PORT), { connect_timeout: '0.250s' }),
        endpointCluster(SDS_CLUSTER, pipe(o.sdsSocket), { typed_extension_protocol_options: HTTP2_OPTIONS }),
        endpointCluster(XDS_CLUSTER, pipe(o.xdsSocket), {
          circuit_breakers: { thresholds: [{ priority: 'DEFAULT', ...bigLimits }, { priority: 'HIGH', ...bigLimits }] },
          upstream_connection_options: { tcp_keepalive: { keepalive_time: 300 } },
          typed_extension_protocol_options: HTTP2_OPTIONS,
        }),
      ],
      listeners: [prometheusListener()],
    },
  };
}
