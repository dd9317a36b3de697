import { create } from '@bufbuild/protobuf';
import { ClientTLSSettings_TLSmode } from '../../gen/networking/v1alpha3/destination_rule_pb.js';
import { ClusterLoadAssignmentSchema, type ClusterLoadAssignment } from '../../gen/envoy/config/endpoint/v3/endpoint_pb.js';
import { type Proxy, mtlsModeForPort, type PushContext, parseClusterName } from '../../model/index.js';
import type { Endpoint, Service } from '../../registry/index.js';
import { destinationRuleTlsMode, mergeTrafficPolicy, meshTrafficSettings } from '../traffic-policy.js';
import {
  endpointCluster,
  groupByLocality,
  hasMtlsMetadata,
  hostnameEndpoint,
  proxyTopologyLabels,
  tlsModeOf,
  toLocalityLbEndpoints,
  type LocalityGroup,
} from './istio-endpoint.js';
import { applyLocalityLb, effectiveLocalitySetting } from './locality-lb.js';
import { filterByNetwork, visibleToProxy } from './network-filter.js';
import { labelsSubsetOf } from '../../config/index.js';

interface OutboundKey {
  readonly port: number;
  readonly subset: string;
  readonly host: string;
  readonly sniDnat: boolean;
}

function parseOutboundKey(name: string): OutboundKey | undefined {
  if (name.startsWith('outbound_.')) {
    const [port = '', subset = '', ...host] = name.slice('outbound_.'.length).split('_.');
    const n = Number(port);
    if (!Number.isInteger(n) || n < 1 || n > 65535 || host.length === 0) return undefined;
    return { port: n, subset, host: host.join('_.'), sniDnat: true };
  }
  const parsed = parseClusterName(name);
  return parsed?.direction === 'outbound' ? { ...parsed, sniDnat: false } : undefined;
}

export const isDnsResolution = (s: Service): boolean => s.resolution === 'DNS' || s.resolution === 'DNS_ROUND_ROBIN';

/** EDS carries IP (or unix socket) endpoints only: a hostname needs a DNS cluster (istiod filters them). */
const IP = /^(\d{1,3}(\.\d{1,3}){3}|[0-9a-fA-F:]*:[0-9a-fA-F:.]*)$/;
const edsAddressable = (e: Endpoint): boolean => e.address.startsWith('unix://') || IP.test(e.address);

/**
 * A workload without an address, while some network has a gateway: split horizon (filterByNetwork)
 * reaches it through its network's gateway, where it counts towards the gateway's weight, or drops
 * it for the proxies that would have to reach it directly, as istiod does.
 */
const gatewayOnly = (push: PushContext, e: Endpoint): boolean => e.address === '' && push.networkGateways.multiNetwork;

function subsetLabels(push: PushContext, proxy: Proxy, service: Service, subset: string): Readonly<Record<string, string>> {
  return subset === '' ? {} : (push.subset(service, proxy.namespace, subset)?.labels ?? {});
}

const matches = (labels: Readonly<Record<string, string>>, e: Endpoint): boolean => labelsSubsetOf(labels, e.labels);

/**
 * istiod's mtlsChecker: a DestinationRule TLS mode decides (only ISTIO_MUTUAL sends tlsMode);
 * otherwise the endpoint must run a sidecar whose PeerAuthentication does not DISABLE mTLS on
 * that port (the workload's namespace and labels pick the policy).
 */
function mtlsChecker(push: PushContext, proxy: Proxy, service: Service, port: number, subset: string): (e: Endpoint) => boolean {
  const drMode = destinationRuleTlsMode(push.destinationRule(service, proxy.namespace)?.spec, port, subset);
  if (drMode !== undefined) return () => drMode === ClientTLSSettings_TLSmode.ISTIO_MUTUAL;
  return (e) =>
    tlsModeOf(e) === 'istio' && mtlsModeForPort(push.security.effectiveMtls(e.source.namespace, e.labels), e.port) !== 'DISABLE';
}

/** istiod resolves a DNS ServiceEntry with neither endpoints nor a workloadSelector by its host name. */
function hostIsEndpoint(push: PushContext, service: Service): boolean {
  if (service.source.kind !== 'ServiceEntry') return false;
  const se = push.config.get('ServiceEntry', service.source.namespace, service.source.name);
  return se !== undefined && se.spec.endpoints.length === 0 && se.spec.workloadSelector === undefined;
}

export interface EndpointGroupsInput {
  readonly push: PushContext;
  readonly proxy: Proxy;
  readonly service: Service;
  readonly port: number;
  readonly subset: string;
}

/**
 * The locality groups of one service port and subset as the proxy sees them: the networks it asked to
 * see, split horizon (network-filter.ts). `forDns`: a DNS cluster's inline endpoints (hostnames kept; the host itself
 * when the entry has none, as istiod).
 */
export function endpointGroups(input: EndpointGroupsInput, forDns: boolean): LocalityGroup[] {
  const { push, proxy, service, port, subset } = input;
  const servicePort = service.ports.find((p) => p.port === port);
  if (!servicePort) return [];
  let endpoints = push.endpoints(service.hostname, port, service.namespace);
  if (forDns && hostIsEndpoint(push, service)) endpoints = [hostnameEndpoint(service, servicePort)];
  const labels = subsetLabels(push, proxy, service, subset);
  // A cluster-local service reaches only the endpoints of the proxy's own cluster (istiod's EndpointBuilder).
  const ownCluster = push.isClusterLocal(service) ? push.proxyCluster(proxy) : undefined;
  endpoints = endpoints.filter(
    (e) =>
      matches(labels, e) &&
      (forDns ? e.address !== '' : edsAddressable(e) || gatewayOnly(push, e)) &&
      visibleToProxy(proxy, push.endpointNetworks.networkOf(e)) &&
      (ownCluster === undefined || endpointCluster(push, e) === ownCluster),
  );
  const groups = groupByLocality(push, service, endpoints, mtlsChecker(push, proxy, service, port, subset));
  return filterByNetwork(push, proxy, service, port, groups);
}

/**
 * Priorities and weights relative to the calling proxy (istiod's ApplyToLoadAssignment): locality LB
 * from the DestinationRule or the mesh; failover needs outlier detection on the port and subset.
 */
export function applyProxyLocality(input: EndpointGroupsInput, groups: LocalityGroup[]): LocalityGroup[] {
  const { push, proxy, service, port, subset } = input;
  const policy = mergeTrafficPolicy(push.destinationRule(service, proxy.namespace)?.spec, port, subset);
  const setting = effectiveLocalitySetting(policy?.loadBalancer, meshTrafficSettings(push.mesh).localityLbSetting);
  if (!setting || groups.length === 0) return groups;
  return applyLocalityLb(groups, {
    setting,
    proxyLocality: proxy.locality,
    proxyLabels: proxyTopologyLabels(proxy),
    enableFailover: policy?.outlierDetection !== undefined,
  });
}

/**
 * EDS for `outbound|<port>|<subset>|<host>` and the SNI-DNAT `outbound_.<port>_.<subset>_.<host>`
 * (mTLS endpoints only there, as istiod: AUTO_PASSTHROUGH must not reach plaintext workloads).
 * Undefined for a name that is neither; an empty assignment for an unknown service or port, and for
 * DNS services (their endpoints are inline in CDS), as istiod answers.
 */
export function buildEndpointsFor(push: PushContext, proxy: Proxy, clusterName: string): ClusterLoadAssignment | undefined {
  const key = parseOutboundKey(clusterName);
  if (!key) return undefined;
  const empty = create(ClusterLoadAssignmentSchema, { clusterName });
  const service = push.service(key.host, proxy.namespace);
  if (!service || !service.ports.some((p) => p.port === key.port) || isDnsResolution(service)) return empty;
  const input: EndpointGroupsInput = { push, proxy, service, port: key.port, subset: key.subset };
  let groups = endpointGroups(input, false);
  if (key.sniDnat) {
    groups = groups.map((g) => {
      const endpoints = g.endpoints.filter(hasMtlsMetadata);
      return {
        ...g,
        endpoints,
        weight: endpoints.length === 0 ? undefined : endpoints.reduce((s, w) => s + (w.lb.loadBalancingWeight ?? 0), 0),
      };
    });
  }
  if (groups.length === 0) return empty;
  return create(ClusterLoadAssignmentSchema, { clusterName, endpoints: toLocalityLbEndpoints(applyProxyLocality(input, groups)) });
}
