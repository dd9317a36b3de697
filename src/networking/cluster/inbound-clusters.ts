import { Cluster_DiscoveryType, Cluster_LbPolicy, type Cluster } from '../../gen/envoy/config/cluster/v3/cluster_pb.js';
import { type Proxy, type PushContext, type ServiceInstance, buildClusterName } from '../../model/index.js';
import { mergeTrafficPolicy, meshTrafficSettings } from '../traffic-policy.js';
import { socketAddress } from '../listener/listener-common.js';
import { altStatName, finishCluster, ipFamilies, istioMetadata, serviceMetadata, type ClusterDraft } from './cluster-draft.js';
import { applyConnectionPool, setUpstreamProtocol } from './connection-pool.js';
import { passthroughBindConfig } from './fixed-clusters.js';

export interface InboundClusterContext {
  readonly push: PushContext;
  readonly proxy: Proxy;
  readonly instances: readonly ServiceInstance[];
}

/** istiod's maxSecondsValue: ORIGINAL_DST hosts of an inbound cluster are never cleaned up. */
const NEVER_SECONDS = 9223372035n;

function byWorkloadPort(instances: readonly ServiceInstance[]): Map<number, ServiceInstance[]> {
  const out = new Map<number, ServiceInstance[]>();
  for (const i of instances) out.set(i.endpoint.port, [...(out.get(i.endpoint.port) ?? []), i]);
  return new Map([...out].sort(([a], [b]) => a - b));
}

/**
 * One `inbound|<port>||` cluster (istiod's buildInboundCluster). With the default inbound
 * traffic policy (PASSTHROUGH) it is ORIGINAL_DST — to the pod IP the client dialed — bound to
 * 127.0.0.6 so iptables lets it through; LOCALHOST sends to 127.0.0.1:<port> instead. The first
 * instance's service decides the protocol and DestinationRule (only its connectionPool applies).
 */
function inboundCluster(push: PushContext, proxy: Proxy, port: number, instances: readonly ServiceInstance[]): Cluster {
  const mesh = meshTrafficSettings(push.mesh);
  const primary = instances[0]!;
  const name = buildClusterName('inbound', port, '', '');
  const localhost = mesh.inboundTrafficPolicy === 'LOCALHOST';
  const { v4 } = ipFamilies(proxy);
  const d: ClusterDraft = {
    c: {
      name,
      clusterDiscoveryType: { case: 'type', value: localhost ? Cluster_DiscoveryType.STATIC : Cluster_DiscoveryType.ORIGINAL_DST },
      commonLbConfig: {},
      altStatName: altStatName(name),
    },
  };
  if (localhost) {
    const lb = { hostIdentifier: { case: 'endpoint' as const, value: { address: socketAddress(v4 ? '127.0.0.1' : '::1', port) } } };
    d.c.loadAssignment = { clusterName: name, endpoints: [{ lbEndpoints: [lb] }] };
  } else {
    d.c.cleanupInterval = { seconds: NEVER_SECONDS, nanos: 0 };
    d.c.upstreamBindConfig = passthroughBindConfig(proxy);
  }
  setUpstreamProtocol(d, primary.servicePort.protocol, proxy.type);
  if (!primary.service.meshExternal) {
    // Telemetry: every service on this service port, once per host.
    const hosts = new Set<string>();
    const services = instances.filter(
      (i) => i.servicePort.port === primary.servicePort.port && !hosts.has(i.service.hostname) && hosts.add(i.service.hostname),
    );
    istioMetadata(d).services = services.map((i) => serviceMetadata(i.service));
  }
  const dr = push.destinationRule(primary.service, proxy.namespace);
  applyConnectionPool(d, mesh, mergeTrafficPolicy(dr?.spec, primary.servicePort.port, '')?.connectionPool);
  if (dr?.spec.trafficPolicy && d.c.metadata) {
    istioMetadata(d).config = `/apis/networking.istio.io/v1/namespaces/${dr.meta.namespace}/destination-rule/${dr.meta.name}`;
  }
  if (!localhost) d.c.lbPolicy = Cluster_LbPolicy.CLUSTER_PROVIDED;
  return finishCluster(d);
}

/**
 * Inbound clusters as istiod's buildInboundClustersFromServiceInstances: one per distinct workload
 * port the proxy's service instances name, in port order. Deliberate gaps: Sidecar ingress
 * listeners and their connectionPool are not applied yet.
 */
export function buildInboundClusters(ctx: InboundClusterContext): Cluster[] {
  return [...byWorkloadPort(ctx.instances)].map(([port, instances]) => inboundCluster(ctx.push, ctx.proxy, port, instances));
}
