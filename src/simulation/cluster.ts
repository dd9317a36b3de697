import type { JsonObject, JsonValue } from '@bufbuild/protobuf';
import { Cluster_DiscoveryType, type Cluster } from '../gen/envoy/config/cluster/v3/cluster_pb.js';
import type { Address } from '../gen/envoy/config/core/v3/address_pb.js';
import type { TransportSocket } from '../gen/envoy/config/core/v3/base_pb.js';
import { HealthStatus } from '../gen/envoy/config/core/v3/health_check_pb.js';
import type { ClusterLoadAssignment } from '../gen/envoy/config/endpoint/v3/endpoint_pb.js';
import type { LbEndpoint } from '../gen/envoy/config/endpoint/v3/endpoint_components_pb.js';
import { UpstreamTlsContextSchema } from '../gen/envoy/extensions/transport_sockets/tls/v3/tls_pb.js';
import { unpack } from './matchers.js';
import type { SimulationConfig } from './types.js';

const TRANSPORT_SOCKET_MATCH = 'envoy.transport_socket_match';
const UNHEALTHY = new Set([HealthStatus.UNHEALTHY, HealthStatus.DRAINING, HealthStatus.TIMEOUT]);

export interface UpstreamPick {
  readonly endpoint?: string;
  readonly upstreamTls?: 'none' | 'istio' | 'tls';
  readonly upstreamSni?: string;
  readonly error?: string;
  /** Envoy's answer when there is nothing to connect to (503: no healthy upstream / blackhole). */
  readonly status?: number;
}

export function formatAddress(a: Address | undefined): string | undefined {
  switch (a?.address.case) {
    case 'socketAddress': {
      const s = a.address.value;
      const port = s.portSpecifier.case === 'portValue' ? String(s.portSpecifier.value) : (s.portSpecifier.value ?? '');
      return s.address.includes(':') ? `[${s.address}]:${port}` : `${s.address}:${port}`;
    }
    case 'pipe':
      return `unix:${a.address.value.path}`;
    case 'envoyInternalAddress': {
      const v = a.address.value.addressNameSpecifier;
      return `internal:${v.case === 'serverListenerName' ? v.value : ''}`;
    }
    default:
      return undefined;
  }
}

/** The first healthy endpoint, lowest priority first, in configuration order within a priority. */
function firstEndpoint(cla: ClusterLoadAssignment | undefined): LbEndpoint | undefined {
  if (!cla) return undefined;
  const localities = [...cla.endpoints].sort((a, b) => a.priority - b.priority);
  for (const l of localities) {
    const eps = l.lbConfig.case === 'loadBalancerEndpoints' ? l.lbConfig.value.lbEndpoints : l.lbEndpoints;
    const ep = eps.find((e) => e.hostIdentifier.case === 'endpoint' && !UNHEALTHY.has(e.healthStatus));
    if (ep) return ep;
  }
  return undefined;
}

function jsonEquals(a: JsonValue | undefined, b: JsonValue | undefined): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object' || a === undefined || b === undefined) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => jsonEquals(x, b[i]));
  }
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => jsonEquals(a[k], b[k]));
}

/**
 * transport_socket_matches: the first whose `match` fields all equal the endpoint's
 * `envoy.transport_socket_match` metadata (an empty match takes any endpoint); none → the
 * cluster's transport_socket.
 */
export function transportSocketFor(c: Cluster, ep: LbEndpoint | undefined): TransportSocket | undefined {
  const md: JsonObject = ep?.metadata?.filterMetadata[TRANSPORT_SOCKET_MATCH] ?? {};
  for (const m of c.transportSocketMatches) {
    const want = m.match ?? {};
    if (Object.keys(want).every((k) => jsonEquals(want[k], md[k]))) return m.transportSocket;
  }
  return c.transportSocket;
}

/** `istio` for Istio mTLS (workload cert from SDS `default`, or an `istio*` ALPN), else `tls`. */
function tlsKind(ts: TransportSocket | undefined): { kind: 'none' | 'istio' | 'tls'; sni?: string } {
  if (!ts || ts.configType.case !== 'typedConfig') return { kind: 'none' };
  const ctx = unpack(ts.configType.value, UpstreamTlsContextSchema);
  if (!ctx) return { kind: 'none' }; // raw_buffer, or another non-TLS socket
  const common = ctx.commonTlsContext;
  const istio =
    common?.tlsCertificateSdsSecretConfigs[0]?.name === 'default' || (common?.alpnProtocols ?? []).some((a) => a.startsWith('istio'));
  return { kind: istio ? 'istio' : 'tls', ...(ctx.sni !== '' ? { sni: ctx.sni } : {}) };
}

/**
 * Where a cluster sends the connection. EDS reads the ClusterLoadAssignment named by
 * eds_cluster_config.service_name (else the cluster name); STATIC and DNS clusters their inline
 * load_assignment; ORIGINAL_DST the connection's original destination. A STATIC cluster without
 * endpoints is a blackhole (istiod's BlackHoleCluster); other empty clusters have no healthy
 * upstream. Either way Envoy answers 503.
 */
export function resolveCluster(config: SimulationConfig, name: string, originalDst: string): UpstreamPick {
  const c = config.clusters.find((x) => x.name === name);
  if (!c) return { error: `unknown cluster ${JSON.stringify(name)}`, status: 503 };
  const type = c.clusterDiscoveryType.case === 'type' ? c.clusterDiscoveryType.value : undefined;
  if (c.clusterDiscoveryType.case === 'clusterType')
    return { error: `custom cluster type ${c.clusterDiscoveryType.value.name} is not modelled` };
  let ep: LbEndpoint | undefined;
  let endpoint: string | undefined;
  if (type === Cluster_DiscoveryType.ORIGINAL_DST) {
    endpoint = originalDst;
  } else {
    const cla =
      type === Cluster_DiscoveryType.EDS
        ? config.endpoints.find((e) => e.clusterName === (c.edsClusterConfig?.serviceName || c.name))
        : c.loadAssignment;
    ep = firstEndpoint(cla);
    endpoint = ep?.hostIdentifier.case === 'endpoint' ? formatAddress(ep.hostIdentifier.value.address) : undefined;
    if (endpoint === undefined) {
      const blackhole = type === Cluster_DiscoveryType.STATIC || type === undefined;
      return { error: blackhole ? 'blackhole' : 'no healthy upstream', status: 503 };
    }
  }
  const tls = tlsKind(transportSocketFor(c, ep));
  return { endpoint, upstreamTls: tls.kind, ...(tls.sni !== undefined ? { upstreamSni: tls.sni } : {}) };
}
