/**
 * The Envoy bootstrap (envoy.config.bootstrap.v3.Bootstrap, proto3 JSON in Istio's snake_case)
 * the agent writes for a sidecar or gateway, after Istio's envoy_bootstrap.json: ADS over the
 * `xds-grpc` cluster to the agent's local ADS proxy socket, workload secrets over the `sds-grpc`
 * cluster to the agent's SDS socket, the admin API on 127.0.0.1:15000, Prometheus stats on 15090
 * and the health listener on 15021 whose /healthz/ready goes to the agent's status server (15020)
 * over the `agent` cluster, so a kubelet probe of 15021 sees Envoy and the agent ready together.
 * Socket paths are written absolute: Envoy need not share the agent's working directory.
 */
import path from 'node:path';
import { SDS_CLUSTER } from '../networking/secret/sds-config.js';
import type { AgentNode } from './node-identity.js';

export const XDS_CLUSTER = 'xds-grpc';
export const ADMIN_PORT = 15000;
export const PROMETHEUS_PORT = 15090;
export const STATUS_PORT = 15020;
export const ENVOY_STATUS_PORT = 15021;
export const AGENT_CLUSTER = 'agent';

export interface EnvoyBootstrapOptions {
  readonly node: AgentNode;
  readonly xdsSocket: string;
  readonly sdsSocket: string;
  /** ads_config api_type (Istio: DELTA_GRPC). */
  readonly xdsApi: 'GRPC' | 'DELTA_GRPC';
  readonly adminAddress?: string;
  /** Istio's defaults: 15000, 15090, 15020, 15021 (tests running several agents pick free ones); statusPort 0: no status server, so no agent cluster or health listener. */
  readonly adminPort?: number;
  readonly prometheusPort?: number;
  readonly statusPort?: number;
  readonly envoyStatusPort?: number;
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
const socket = (address: string, port: number): Record<string, unknown> => ({
  socket_address: { protocol: 'TCP', address, port_value: port },
});
const bigLimits = { max_connections: 100000, max_pending_requests: 100000, max_requests: 100000 };

/** A plain HTTP listener on all addresses that routes one path prefix to one cluster. */
function routeListener(name: string, port: number, statPrefix: string, prefix: string, cluster: string): Record<string, unknown> {
  return {
    name,
    address: socket('0.0.0.0', port),
    filter_chains: [
      {
        filters: [
          {
            name: 'envoy.filters.network.http_connection_manager',
            typed_config: {
              '@type': 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
              codec_type: 'AUTO',
              stat_prefix: statPrefix,
              route_config: {
                virtual_hosts: [{ name: 'backend', domains: ['*'], routes: [{ match: { prefix }, route: { cluster } }] }],
              },
              http_filters: [
                {
                  name: 'envoy.filters.http.router',
                  typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router' },
                },
              ],
            },
          },
        ],
      },
    ],
  };
}

export function buildEnvoyBootstrap(o: EnvoyBootstrapOptions): Record<string, unknown> {
  const admin = o.adminAddress ?? '127.0.0.1';
  const adminPort = o.adminPort ?? ADMIN_PORT;
  const statusPort = o.statusPort ?? STATUS_PORT;
  const adsSource = { ads: {}, initial_fetch_timeout: '0s', resource_api_version: 'V3' };
  return {
    node: { id: o.node.id, cluster: o.node.cluster, locality: {}, metadata: o.node.metadata },
    admin: { address: socket(admin, adminPort) },
    // Istio's bootstrap always loads internal listeners: a waypoint's main_internal and
    // connect_originate are internal listeners, which Envoy refuses without this extension.
    bootstrap_extensions: [
      {
        name: 'envoy.bootstrap.internal_listener',
        typed_config: {
          '@type': 'type.googleapis.com/udpa.type.v1.TypedStruct',
          type_url: 'type.googleapis.com/envoy.extensions.bootstrap.internal_listener.v3.InternalListener',
          value: { buffer_size_kb: 64 },
        },
      },
    ],
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
        endpointCluster('prometheus_stats', socket(admin, adminPort), { connect_timeout: '0.250s' }),
        ...(statusPort > 0 ? [endpointCluster(AGENT_CLUSTER, socket('127.0.0.1', statusPort), { connect_timeout: '0.250s' })] : []),
        endpointCluster(SDS_CLUSTER, pipe(o.sdsSocket), { typed_extension_protocol_options: HTTP2_OPTIONS }),
        endpointCluster(XDS_CLUSTER, pipe(o.xdsSocket), {
          circuit_breakers: {
            thresholds: [
              { priority: 'DEFAULT', ...bigLimits },
              { priority: 'HIGH', ...bigLimits },
            ],
          },
          upstream_connection_options: { tcp_keepalive: { keepalive_time: 300 } },
          typed_extension_protocol_options: HTTP2_OPTIONS,
        }),
      ],
      listeners: [
        routeListener('prometheus', o.prometheusPort ?? PROMETHEUS_PORT, 'stats', '/stats/prometheus', 'prometheus_stats'),
        ...(statusPort > 0
          ? [routeListener('status', o.envoyStatusPort ?? ENVOY_STATUS_PORT, 'agent', '/healthz/ready', AGENT_CLUSTER)]
          : []),
      ],
    },
  };
}
