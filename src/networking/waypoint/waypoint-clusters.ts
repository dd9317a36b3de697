/**
 * A waypoint's clusters (istiod's cluster_waypoint.go): `main_internal` and `encap` (static
 * clusters to the internal listeners of those names), `connect_originate` (HBONE to the original
 * destination's 15008), and one `inbound-vip|<port>|<http|tcp>[/<subset>]|<host>` cluster per
 * bound service port and protocol (and DestinationRule subset), whose endpoints EDS sends.
 */
import { create } from '@bufbuild/protobuf';
import { Cluster_DiscoveryType, Cluster_LbPolicy, ClusterSchema, type Cluster } from '../../gen/envoy/config/cluster/v3/cluster_pb.js';
import { HttpProtocolOptionsSchema } from '../../gen/envoy/extensions/upstreams/http/v3/http_protocol_options_pb.js';
import { UpstreamTlsContextSchema } from '../../gen/envoy/extensions/transport_sockets/tls/v3/tls_pb.js';
import type { Proxy, PushContext } from '../../model/index.js';
import type { Service, ServicePort } from '../../registry/index.js';
import { durationFromMs, packAny } from '../common.js';
import {
  altStatName,
  applyEdsConfig,
  defaultThresholds,
  discoveryType,
  finishCluster,
  HTTP_PROTOCOL_OPTIONS,
  istioMetadata,
  type ClusterDraft,
} from '../cluster/cluster-draft.js';
import { applyConnectionPool, applyH2Upgrade, setUpstreamProtocol } from '../cluster/connection-pool.js';
import { applyLoadBalancer, applyOutlierDetection } from '../cluster/load-balancer.js';
import { proxyTopologyLabels } from '../endpoint/istio-endpoint.js';
import { mergeTrafficPolicy, meshTrafficSettings } from '../traffic-policy.js';
import type { Config } from '../../config/index.js';
import { portKind } from '../listener/listener-common.js';
import {
  connectTlsContext,
  CONNECT_ORIGINATE,
  ENCAP_CLUSTER,
  HBONE_PORT,
  inboundVipClusterName,
  internalUpstreamSocket,
  isKubeService,
  MAIN_INTERNAL,
  ORIGINAL_DST_METADATA_KEY,
  waypointInternalUpstreamSocket,
} from './waypoint-common.js';

/** istiod's passthroughHttpProtocolOptions: keep the downstream's HTTP version, 5 min idle. */
const PASSTHROUGH_HTTP_OPTIONS = packAny(HttpProtocolOptionsSchema, {
  commonHttpProtocolOptions: { idleTimeout: durationFromMs(300_000) },
  upstreamProtocolOptions: { case: 'useDownstreamProtocolConfig', value: { httpProtocolOptions: {}, http2ProtocolOptions: {} } },
});

/** istiod's buildInternalUpstreamCluster: a static cluster whose one endpoint is the internal listener `listener`. */
function internalCluster(name: string, listener: string): Cluster {
  return create(ClusterSchema, {
    name,
    clusterDiscoveryType: { case: 'type', value: Cluster_DiscoveryType.STATIC },
    circuitBreakers: { thresholds: [defaultThresholds()] },
    loadAssignment: {
      clusterName: name,
      endpoints: [
        {
          lbEndpoints: [
            {
              hostIdentifier: {
                case: 'endpoint',
                value: {
                  address: {
                    address: {
                      case: 'envoyInternalAddress',
                      value: { addressNameSpecifier: { case: 'serverListenerName', value: listener } },
                    },
                  },
                },
              },
            },
          ],
        },
      ],
    },
    transportSocket: internalUpstreamSocket(),
    typedExtensionProtocolOptions: { [HTTP_PROTOCOL_OPTIONS]: PASSTHROUGH_HTTP_OPTIONS },
    altStatName: altStatName(name),
  });
}

/**
 * istiod's buildConnectOriginate for a waypoint: HBONE (HTTP/2 CONNECT over mTLS) to the address
 * the endpoint's `original_dst` metadata names, on port 15008; the peer must be a workload of
 * the waypoint's trust domain (and, as istiod adds, of a service account of its namespace).
 */
function connectOriginateCluster(push: PushContext, proxy: Proxy): Cluster {
  const tls = connectTlsContext(push, [`spiffe://${push.mesh.trustDomain}/ns/${proxy.namespace}/sa/`]);
  return create(ClusterSchema, {
    name: CONNECT_ORIGINATE,
    clusterDiscoveryType: { case: 'type', value: Cluster_DiscoveryType.ORIGINAL_DST },
    lbPolicy: Cluster_LbPolicy.CLUSTER_PROVIDED,
    connectTimeout: durationFromMs(push.mesh.connectTimeoutMs),
    cleanupInterval: durationFromMs(60_000),
    circuitBreakers: { thresholds: [defaultThresholds()] },
    typedExtensionProtocolOptions: {
      [HTTP_PROTOCOL_OPTIONS]: packAny(HttpProtocolOptionsSchema, {
        commonHttpProtocolOptions: { idleTimeout: durationFromMs(3_600_000) },
        upstreamProtocolOptions: {
          case: 'explicitHttpConfig',
          value: { protocolConfig: { case: 'http2ProtocolOptions', value: { allowConnect: true } } },
        },
      }),
    },
    lbConfig: {
      case: 'originalDstLbConfig',
      value: {
        upstreamPortOverride: HBONE_PORT,
        metadataKey: { key: ORIGINAL_DST_METADATA_KEY, path: [{ segment: { case: 'key', value: 'waypoint' } }] },
      },
    },
    transportSocket: {
      name: 'tls',
      configType: { case: 'typedConfig', value: packAny(UpstreamTlsContextSchema, { commonTlsContext: tls }) },
    },
    altStatName: altStatName(CONNECT_ORIGINATE),
  });
}

/** istiod's buildServiceMetadata: a Kubernetes Service is named by its object, other services by their host. */
export function serviceMetadataName(s: Service): string {
  return isKubeService(s.source) ? s.source.name : s.hostname;
}

/** The `tcp`/`http` subsets of one port: both for a sniffed port, none for UDP. */
export function protocolSubsets(p: ServicePort): ('tcp' | 'http')[] {
  const k = portKind(p.protocol);
  if (k === 'udp') return [];
  if (k === 'auto') return ['tcp', 'http'];
  return k === 'http' ? ['http'] : ['tcp'];
}

/**
 * One inbound-vip cluster (istiod's buildWaypointInboundVIPCluster): EDS over an internal upstream
 * that passes the endpoint's original_dst metadata (ORIGINAL_DST for headless services), with the
 * DestinationRule's connection pool, HTTP/2 upgrade, outlier detection and load balancer for the
 * port and subset. Client TLS of the rule is not applied (HBONE carries mTLS; SIMPLE/MUTUAL to a
 * destination is not supported yet).
 */
function inboundVipCluster(
  proxy: Proxy,
  push: PushContext,
  svc: Service,
  port: ServicePort,
  subset: string,
  dr: Config<'DestinationRule'> | undefined,
): Cluster {
  const name = inboundVipClusterName(port.port, subset, svc.hostname);
  const headless = svc.resolution === 'NONE';
  const d: ClusterDraft = {
    c: {
      name,
      clusterDiscoveryType: { case: 'type', value: headless ? Cluster_DiscoveryType.ORIGINAL_DST : Cluster_DiscoveryType.EDS },
      commonLbConfig: {},
      transportSocket: waypointInternalUpstreamSocket(),
      altStatName: altStatName(name),
    },
  };
  const http = subset.startsWith('http');
  // As istiod's buildCluster: a sniffed port's clusters, the tcp one too, keep the downstream's HTTP version.
  setUpstreamProtocol(d, port.protocol, proxy.type);
  const policy = mergeTrafficPolicy(dr?.spec, port.port, subset.split('/')[1] ?? '');
  const mesh = meshTrafficSettings(push.mesh);
  const cp = policy?.connectionPool;
  if (http) applyH2Upgrade(d, port.protocol, mesh, cp);
  applyConnectionPool(d, mesh, cp);
  applyOutlierDetection(d, policy?.outlierDetection);
  applyLoadBalancer(d, {
    lb: policy?.loadBalancer,
    mesh,
    proxy: { proxyLocality: proxy.locality, proxyLabels: proxyTopologyLabels(proxy) },
  });
  // istiod's applyLoadBalancer turns panic mode off before it returns for ORIGINAL_DST (headless) too.
  (d.c.commonLbConfig ??= {}).healthyPanicThreshold ??= { value: 0 };
  if (discoveryType(d) === Cluster_DiscoveryType.ORIGINAL_DST) d.c.lbPolicy = Cluster_LbPolicy.CLUSTER_PROVIDED;
  applyEdsConfig(d, name);
  const md = istioMetadata(d);
  md.services = [{ host: svc.hostname, name: serviceMetadataName(svc), namespace: svc.namespace }];
  if (dr) md.config = `/apis/networking.istio.io/v1/namespaces/${dr.meta.namespace}/destination-rule/${dr.meta.name}`;
  md.subset = subset;
  return finishCluster(d);
}

/** The inbound-vip clusters of the bound services, in service order; DNS-resolved services are left out (see docs/waypoints.md). */
export function buildInboundVipClusters(push: PushContext, proxy: Proxy, services: readonly Service[]): Cluster[] {
  const out: Cluster[] = [];
  for (const svc of services) {
    if (svc.resolution === 'DNS' || svc.resolution === 'DNS_ROUND_ROBIN' || svc.resolution === 'DYNAMIC_DNS') continue;
    const dr = push.destinationRule(svc, proxy.namespace);
    const subsets = dr?.spec.subsets.map((s) => s.name) ?? [];
    for (const port of svc.ports) {
      for (const proto of protocolSubsets(port)) {
        out.push(inboundVipCluster(proxy, push, svc, port, proto, dr));
        for (const s of subsets) out.push(inboundVipCluster(proxy, push, svc, port, `${proto}/${s}`, dr));
      }
    }
  }
  return out;
}

/** Every cluster of a waypoint, in istiod's order: main_internal, encap, the inbound VIPs, connect_originate. */
export function buildWaypointClusters(push: PushContext, proxy: Proxy, services: readonly Service[]): Cluster[] {
  return [
    internalCluster(MAIN_INTERNAL, MAIN_INTERNAL),
    internalCluster(ENCAP_CLUSTER, CONNECT_ORIGINATE),
    ...buildInboundVipClusters(push, proxy, services),
    connectOriginateCluster(push, proxy),
  ];
}
