import {
  Cluster_DiscoveryType,
  Cluster_DnsLookupFamily,
  Cluster_LbPolicy,
  type Cluster,
} from '../../gen/envoy/config/cluster/v3/cluster_pb.js';
import {
  ClientTLSSettings_TLSmode,
  LoadBalancerSettings_SimpleLB,
  type TrafficPolicy,
} from '../../gen/networking/v1alpha3/destination_rule_pb.js';
import type { Config } from '../../config/index.js';
import { type Proxy, type PushContext, buildClusterName, sniDnatClusterName } from '../../model/index.js';
import { clusterMxFilters } from '../istio-extensions.js';
import type { Service, ServicePort } from '../../registry/index.js';
import { endpointGroups, isDnsResolution } from '../endpoint/eds.js';
import { proxyTopologyLabels, serviceAccounts, tlsModeOf, type LocalityGroup } from '../endpoint/istio-endpoint.js';
import { mergeTrafficPolicy, meshTrafficSettings, type EffectivePolicy, type MeshTrafficSettings } from '../traffic-policy.js';
import {
  altStatName,
  applyEdsConfig,
  discoveryType,
  finishCluster,
  ipFamilies,
  istioMetadata,
  serviceMetadata,
  type ClusterDraft,
} from './cluster-draft.js';
import { applyUpstreamTls } from './cluster-tls.js';
import { applyConnectionPool, applyH2Upgrade, setUpstreamProtocol } from './connection-pool.js';
import { applyLoadBalancer, applyOutlierDetection } from './load-balancer.js';

export interface OutboundClusterContext {
  readonly push: PushContext;
  readonly proxy: Proxy;
  readonly services: readonly Service[];
}

/** `outbound`: the normal clusters; `sni-dnat`: AUTO_PASSTHROUGH gateway clusters (no TLS origination). */
type ClusterMode = 'outbound' | 'sni-dnat';

interface PortScope {
  readonly push: PushContext;
  readonly proxy: Proxy;
  readonly mesh: MeshTrafficSettings;
  readonly service: Service;
  readonly port: ServicePort;
  readonly dr: Config<'DestinationRule'> | undefined;
  readonly mode: ClusterMode;
}

/**
 * istiod's convertResolution for ServiceEntry resolutions: STATIC → EDS, DNS → STRICT_DNS,
 * DNS_ROUND_ROBIN → LOGICAL_DNS, NONE → ORIGINAL_DST (EDS on gateways, which have no original
 * destination). Undefined: no cluster (a wildcard DYNAMIC_DNS host needs the dynamic forward proxy,
 * not supported yet).
 */
function discoveryFor(proxy: Proxy, s: Service): Cluster_DiscoveryType | undefined {
  switch (s.resolution) {
    case 'DNS':
      return Cluster_DiscoveryType.STRICT_DNS;
    case 'DNS_ROUND_ROBIN':
      return Cluster_DiscoveryType.LOGICAL_DNS;
    case 'NONE':
      return proxy.type === 'router' ? Cluster_DiscoveryType.EDS : Cluster_DiscoveryType.ORIGINAL_DST;
    case 'DYNAMIC_DNS':
      return s.hostname.startsWith('*') ? undefined : Cluster_DiscoveryType.EDS;
    default:
      return Cluster_DiscoveryType.EDS;
  }
}

/**
 * istiod's SelectDNSLookupFamily: IPv6 only when every proxy address is IPv6; for a dual-stack
 * proxy both families (Envoy's happy eyeballs) under ISTIO_DUAL_STACK, else IPv4 as before it.
 */
function dnsLookupFamily(push: PushContext, proxy: Proxy): Cluster_DnsLookupFamily {
  const { v4, v6 } = ipFamilies(proxy);
  if (v6 && !v4) return Cluster_DnsLookupFamily.V6_ONLY;
  return v4 && v6 && push.dualStack ? Cluster_DnsLookupFamily.ALL : Cluster_DnsLookupFamily.V4_ONLY;
}

/**
 * istiod's buildCluster: name, type, stat name, DNS settings, inline endpoints for STATIC/DNS
 * (none: no cluster, as istiod), the upstream protocol and the telemetry metadata.
 * Not sent: istiod's c-ares resolver config (100 UDP queries per lookup) — the Envoy API copy
 * meshpilot validates against still requires a resolver address in it (test/scenarios/whole/deliberate.ts).
 */
function baseCluster(
  p: PortScope,
  name: string,
  type: Cluster_DiscoveryType,
  inline: LocalityGroup[] | undefined,
): ClusterDraft | undefined {
  const d: ClusterDraft = {
    c: { name, clusterDiscoveryType: { case: 'type', value: type }, commonLbConfig: {}, altStatName: altStatName(name) },
  };
  if (type === Cluster_DiscoveryType.STRICT_DNS || type === Cluster_DiscoveryType.LOGICAL_DNS) {
    d.c.dnsLookupFamily = dnsLookupFamily(p.push, p.proxy);
    d.c.dnsRefreshRate = p.mesh.dnsRefreshRate;
    d.c.respectDnsTtl = true;
  }
  if (type === Cluster_DiscoveryType.STRICT_DNS || type === Cluster_DiscoveryType.LOGICAL_DNS || type === Cluster_DiscoveryType.STATIC) {
    if (!inline || inline.length === 0) return undefined;
    d.inlineEndpoints = inline;
  }
  if (type === Cluster_DiscoveryType.ORIGINAL_DST && p.service.resolution === 'NONE' && p.port.targetPort !== undefined) {
    d.c.lbConfig = { case: 'originalDstLbConfig', value: { upstreamPortOverride: p.port.targetPort } };
  }
  setUpstreamProtocol(d, p.port.protocol, p.proxy.type);
  istioMetadata(d).services = [serviceMetadata(p.service)];
  return d;
}

/**
 * istiod's BestEffortInferServiceMTLSMode: mesh-internal services may take mTLS unless their
 * namespace's PeerAuthentication disables it, except passthrough ones with no endpoints or a
 * workload without sidecar.
 */
function acceptsMtls(p: PortScope, tp: TrafficPolicy | undefined): boolean {
  if (p.service.meshExternal) return false;
  // The service's namespace (or the mesh) turning mTLS off wins, as in istiod.
  if (p.push.security.effectiveMtls(p.service.namespace, {}).mode === 'DISABLE') return false;
  const simple = tp?.loadBalancer?.lbPolicy.case === 'simple' ? tp.loadBalancer.lbPolicy.value : undefined;
  if (p.service.resolution === 'NONE' || simple === LoadBalancerSettings_SimpleLB.PASSTHROUGH) {
    const eps = p.push.endpoints(p.service.hostname, p.port.port, p.service.namespace);
    return eps.length > 0 && eps.every((e) => tlsModeOf(e) !== 'disabled');
  }
  return true;
}

/** istiod's applyTrafficPolicy for an outbound cluster, then its metadata. */
function applyPolicy(
  p: PortScope,
  d: ClusterDraft,
  policy: EffectivePolicy | undefined,
  subset: string,
  tp: TrafficPolicy | undefined,
): void {
  const cp = policy?.connectionPool;
  applyH2Upgrade(d, p.port.protocol, p.mesh, cp);
  applyConnectionPool(d, p.mesh, cp);
  applyOutlierDetection(d, policy?.outlierDetection);
  applyLoadBalancer(d, {
    lb: policy?.loadBalancer,
    mesh: p.mesh,
    proxy: { proxyLocality: p.proxy.locality, proxyLabels: proxyTopologyLabels(p.proxy) },
  });
  if (p.mode === 'outbound') {
    applyUpstreamTls(d, {
      tls: policy?.tls,
      serviceAccounts: serviceAccounts(p.push, p.service),
      sni: sniDnatClusterName(p.port.port, subset, p.service.hostname),
      autoMtls: p.mesh.enableAutoMtls,
      meshExternal: p.service.meshExternal,
      serviceAcceptsMtls: acceptsMtls(p, tp),
      sidecar: p.proxy.type === 'sidecar',
      drHasWorkloadSelector: p.dr?.spec.workloadSelector !== undefined,
    });
  }
  if (discoveryType(d) === Cluster_DiscoveryType.ORIGINAL_DST) d.c.lbPolicy = Cluster_LbPolicy.CLUSTER_PROVIDED;
  applyEdsConfig(d, d.c.name ?? '');
  if (!p.dr) return;
  const md = istioMetadata(d);
  md.config = `/apis/networking.istio.io/v1/namespaces/${p.dr.meta.namespace}/destination-rule/${p.dr.meta.name}`;
  if (subset !== '') md.subset = subset;
  // SIMPLE/MUTUAL origination: Envoy must not replace the ALPN the application asked for.
  const mode = policy?.tls?.mode;
  if (mode === ClientTLSSettings_TLSmode.SIMPLE || mode === ClientTLSSettings_TLSmode.MUTUAL) md.alpn_override = 'false';
}

function inlineGroups(p: PortScope, type: Cluster_DiscoveryType, subset: string): LocalityGroup[] | undefined {
  if (!isDnsResolution(p.service) || type === Cluster_DiscoveryType.EDS || type === Cluster_DiscoveryType.ORIGINAL_DST) return undefined;
  return endpointGroups({ push: p.push, proxy: p.proxy, service: p.service, port: p.port.port, subset }, true);
}

/** The default cluster of one service port and one per DestinationRule subset (istiod's applyDestinationRule). */
function portClusters(p: PortScope): Cluster[] {
  const type = discoveryFor(p.proxy, p.service);
  if (type === undefined) return [];
  const host = p.service.hostname;
  const nameOf = (subset: string): string =>
    p.mode === 'sni-dnat' ? sniDnatClusterName(p.port.port, subset, host) : buildClusterName('outbound', p.port.port, subset, host);
  const out: Cluster[] = [];
  const main = baseCluster(p, nameOf(''), type, inlineGroups(p, type, ''));
  if (!main) return out;
  const drSpec = p.dr?.spec;
  applyPolicy(p, main, mergeTrafficPolicy(drSpec, p.port.port, ''), '', drSpec?.trafficPolicy);
  if (p.service.meshExternal) istioMetadata(main).external = true;
  main.c.filters = clusterMxFilters(p.proxy.extensions);
  out.push(finishCluster(main));
  for (const subset of drSpec?.subsets ?? []) {
    const lb = subset.trafficPolicy?.loadBalancer?.lbPolicy;
    const subsetType =
      lb?.case === 'simple' && lb.value === LoadBalancerSettings_SimpleLB.PASSTHROUGH ? Cluster_DiscoveryType.ORIGINAL_DST : type;
    const d = baseCluster(p, nameOf(subset.name), subsetType, inlineGroups(p, subsetType, subset.name));
    if (!d) continue;
    applyPolicy(p, d, mergeTrafficPolicy(drSpec, p.port.port, subset.name), subset.name, subset.trafficPolicy);
    d.c.filters = clusterMxFilters(p.proxy.extensions);
    out.push(finishCluster(d));
  }
  return out;
}

function build(ctx: OutboundClusterContext, mode: ClusterMode): Cluster[] {
  const mesh = meshTrafficSettings(ctx.push.mesh);
  const out: Cluster[] = [];
  const seen = new Set<string>();
  for (const service of ctx.services) {
    if (mode === 'sni-dnat' && service.meshExternal) continue;
    const dr = ctx.push.destinationRule(service, ctx.proxy.namespace);
    for (const port of service.ports) {
      if (port.protocol === 'UDP') continue;
      for (const c of portClusters({ push: ctx.push, proxy: ctx.proxy, mesh, service, port, dr, mode })) {
        // istiod's normalizeClusters: on a name clash the first cluster wins.
        if (!seen.has(c.name)) out.push(c);
        seen.add(c.name);
      }
    }
  }
  return out;
}

/**
 * Outbound clusters as istiod's buildOutboundClusters: per service port `outbound|<port>||<host>`
 * and `outbound|<port>|<subset>|<host>` per DestinationRule subset, with the rule's traffic
 * policy (port-level and subset overrides), TLS or auto mTLS, and EDS / DNS / ORIGINAL_DST by the
 * service's resolution.
 */
export function buildOutboundClusters(ctx: OutboundClusterContext): Cluster[] {
  return build(ctx, 'outbound');
}

/**
 * The SNI-DNAT clusters of an AUTO_PASSTHROUGH gateway (`outbound_.<port>_.<subset>_.<host>`):
 * mesh-internal services only, without TLS origination — the client's mTLS passes through.
 */
export function buildSniDnatClusters(push: PushContext, proxy: Proxy, services: readonly Service[]): Cluster[] {
  return build({ push, proxy, services }, 'sni-dnat');
}
