import type { JsonObject } from '@bufbuild/protobuf';
import type { AddressSchema } from '../../gen/envoy/config/core/v3/address_pb.js';
import { HealthStatus } from '../../gen/envoy/config/core/v3/health_check_pb.js';
import type { LbEndpointSchema, LocalityLbEndpointsSchema } from '../../gen/envoy/config/endpoint/v3/endpoint_components_pb.js';
import type { Proxy, PushContext } from '../../model/index.js';
import type { Endpoint, Locality, Service, ServicePort } from '../../registry/index.js';
import type { Init } from '../common.js';
import {
  CANONICAL_NAME_LABEL,
  CANONICAL_REVISION_LABEL,
  CLUSTER_LABEL,
  NETWORK_LABEL,
  REGION_LABEL,
  SUBZONE_LABEL,
  TLS_MODE_LABEL,
  ZONE_LABEL,
} from '../../config/constants.js';

export type LbEndpointInit = Init<typeof LbEndpointSchema>;
export type LocalityLbEndpointsInit = Init<typeof LocalityLbEndpointsSchema>;

/** Filter-metadata key the cluster's transport_socket_matches read (auto mTLS). */
export const TRANSPORT_SOCKET_MATCH_KEY = 'envoy.transport_socket_match';
/** istiod's own cluster id (CLUSTER_ID default): the locality cluster of ServiceEntry endpoints. */
export const DEFAULT_CLUSTER_ID = 'Kubernetes';

/** One registry endpoint with what EDS and the LB settings need beside the Envoy form. */
export interface WrappedEndpoint {
  readonly endpoint: Endpoint;
  /** The endpoint's network, resolved (its own, else the registry's fallbacks: PushContext.endpointNetworks). */
  readonly network: string;
  /** Labels with istiod's topology labels added (failoverPriority matches on them). */
  readonly labels: Readonly<Record<string, string>>;
  readonly lb: LbEndpointInit;
}

/** The endpoints of one locality and priority (istiod's LocalityEndpoints). */
export interface LocalityGroup {
  readonly locality: Locality;
  priority: number;
  /** Undefined only for a group left empty by a filter (istiod's refreshWeight). */
  weight: number | undefined;
  endpoints: WrappedEndpoint[];
}

/**
 * istiod's TLS mode of an endpoint: the tlsMode label when set; otherwise a Kubernetes pod's is
 * `disabled` (kube.PodTLSMode: the injector sets the label), and a ServiceEntry/WorkloadEntry
 * endpoint's is `istio` when it names a service account (it runs a sidecar), else `disabled`.
 */
export function tlsModeOf(e: Endpoint): string {
  const label = e.labels[TLS_MODE_LABEL];
  if (label !== undefined) return label;
  const kind = e.source.kind as string;
  if (kind === 'Pod' || kind === 'EndpointSlice') return 'disabled';
  return e.serviceAccount !== '' ? 'istio' : 'disabled';
}

export function spiffeIdentity(trustDomain: string, namespace: string, serviceAccount: string): string {
  return `spiffe://${trustDomain}/ns/${namespace}/sa/${serviceAccount}`;
}

/**
 * The identities of a service's workloads (istiod's PushContext.ServiceAccounts): the SPIFFE id of
 * every endpoint's service account, on any port, sorted and deduplicated.
 */
export function serviceAccounts(push: PushContext, service: Service): readonly string[] {
  return push.deriveForService(service, `sa|${service.namespace}|${service.hostname}`, () => {
    const out = new Set<string>();
    for (const p of service.ports) {
      for (const e of push.endpoints(service.hostname, p.port, service.namespace)) {
        if (e.serviceAccount !== '') out.add(spiffeIdentity(push.mesh.trustDomain, service.namespace, e.serviceAccount));
      }
    }
    return [...out].sort();
  });
}

/** What istiod puts in place of endpoints for a DNS ServiceEntry without any: the host itself. */
export function hostnameEndpoint(service: Service, port: ServicePort): Endpoint {
  return {
    address: service.hostname,
    port: port.targetPort ?? port.port,
    servicePort: port.port,
    labels: {},
    locality: { region: '', zone: '', subzone: '' },
    weight: 1,
    serviceAccount: '',
    network: '',
    source: service.source,
  };
}

/**
 * The workload name istiod reports for an endpoint: a WorkloadEntry's name (or its
 * service.istio.io/workload-name label); `<serviceentry>-<index>` for an inline endpoint; the
 * ServiceEntry's name for the host-as-endpoint of a DNS entry (no inline endpoint has its address).
 */
function workloadName(push: PushContext, e: Endpoint): string {
  if (e.source.kind === 'WorkloadEntry') return e.labels['service.istio.io/workload-name'] ?? e.source.name;
  const se = push.config.get('ServiceEntry', e.source.namespace, e.source.name);
  const index = se?.spec.endpoints.findIndex((we) => we.address === e.address) ?? -1;
  return index < 0 ? e.source.name : `${e.source.name}-${index}`;
}

const first = (labels: Readonly<Record<string, string>>, keys: readonly string[]): string | undefined =>
  keys.map((k) => labels[k]).find((v) => v !== undefined);

/**
 * istiod's compressed telemetry label `workload;namespace;canonical-name;canonical-revision;cluster`,
 * read by the stats filter when the peer's metadata is unknown ("latest" is sent as empty).
 */
function workloadLabel(push: PushContext, service: Service, e: Endpoint): string {
  // A Kubernetes endpoint of no pod (an EndpointSlice written by hand) names no workload nor namespace in istiod.
  const podless = e.source.kind === ('EndpointSlice' as string);
  const name = podless ? '' : workloadName(push, e);
  const canonical = first(e.labels, [CANONICAL_NAME_LABEL, 'app.kubernetes.io/name', 'app']) ?? name;
  const revision = first(e.labels, [CANONICAL_REVISION_LABEL, 'app.kubernetes.io/version', 'version']) ?? 'latest';
  return [name, podless ? '' : service.namespace, canonical, revision === 'latest' ? '' : revision, endpointCluster(push, e)].join(';');
}

/** The cluster an endpoint is in (istiod's Locality.ClusterID): its Kubernetes cluster, else meshpilot's own. */
export function endpointCluster(push: PushContext, e: Endpoint): string {
  return e.clusterId ?? push.clusterId;
}

/** istiod's AugmentLabels: topology labels derived from locality, network and cluster. */
export function topologyLabels(
  labels: Readonly<Record<string, string>>,
  locality: Locality,
  network: string,
  clusterId: string,
): Record<string, string> {
  const out: Record<string, string> = { ...labels, [CLUSTER_LABEL]: clusterId };
  if (locality.region !== '') out[REGION_LABEL] = locality.region;
  if (locality.zone !== '') out[ZONE_LABEL] = locality.zone;
  if (locality.subzone !== '') out[SUBZONE_LABEL] = locality.subzone;
  if (network !== '') out[NETWORK_LABEL] = network;
  return out;
}

export function proxyTopologyLabels(proxy: Proxy): Record<string, string> {
  return topologyLabels(proxy.labels, proxy.locality, proxy.metadata.network, proxy.metadata.clusterId ?? DEFAULT_CLUSTER_ID);
}

export function endpointAddress(e: Endpoint): Init<typeof AddressSchema> {
  if (e.address.startsWith('unix://')) return { address: { case: 'pipe', value: { path: e.address.slice('unix://'.length) } } };
  return { address: { case: 'socketAddress', value: { address: e.address, portSpecifier: { case: 'portValue', value: e.port } } } };
}

/**
 * istiod's endpoint health: HEALTHY for Kubernetes endpoints (a ready EndpointSlice address);
 * ServiceEntry and WorkloadEntry endpoints carry none (UNKNOWN, which Envoy also routes to).
 */
export function endpointHealth(e: Endpoint): HealthStatus {
  return e.source.kind === 'ServiceEntry' || e.source.kind === 'WorkloadEntry' ? HealthStatus.UNKNOWN : HealthStatus.HEALTHY;
}

/**
 * One lb_endpoint as istiod's buildEnvoyLbEndpoint: address, health, weight, and the metadata the
 * cluster's transport_socket_matches (tlsMode, only when mTLS applies) and telemetry read.
 */
function lbEndpoint(push: PushContext, service: Service, e: Endpoint, mtls: boolean): LbEndpointInit {
  const filterMetadata: Record<string, JsonObject> = {};
  const tlsMode = tlsModeOf(e);
  if (mtls && tlsMode !== '' && tlsMode !== 'disabled') filterMetadata[TRANSPORT_SOCKET_MATCH_KEY] = { tlsMode };
  filterMetadata.istio = { workload: workloadLabel(push, service, e) };
  return {
    hostIdentifier: { case: 'endpoint', value: { address: endpointAddress(e) } },
    healthStatus: endpointHealth(e),
    loadBalancingWeight: e.weight,
    metadata: { filterMetadata },
  };
}

const localityKey = (l: Locality): string =>
  l.region === '' && l.zone === '' && l.subzone === '' ? '' : `${l.region}/${l.zone}/${l.subzone}`;

/**
 * Groups endpoints by locality (sorted by locality label, as istiod), each group weighted by the
 * sum of its endpoints' weights. `mtls` says per endpoint whether the tlsMode metadata is sent.
 */
export function groupByLocality(
  push: PushContext,
  service: Service,
  endpoints: readonly Endpoint[],
  mtls: (e: Endpoint) => boolean,
): LocalityGroup[] {
  const groups = new Map<string, LocalityGroup>();
  for (const e of endpoints) {
    const k = localityKey(e.locality);
    let g = groups.get(k);
    if (!g) groups.set(k, (g = { locality: e.locality, priority: 0, weight: 0, endpoints: [] }));
    const network = push.endpointNetworks.networkOf(e);
    g.endpoints.push({
      endpoint: e,
      network,
      labels: topologyLabels(e.labels, e.locality, network, endpointCluster(push, e)),
      lb: lbEndpoint(push, service, e, mtls(e)),
    });
    g.weight = Math.min((g.weight ?? 0) + e.weight, 0xffffffff);
  }
  return [...groups.keys()].sort().map((k) => groups.get(k)!);
}

export function hasMtlsMetadata(w: WrappedEndpoint): boolean {
  return w.lb.metadata?.filterMetadata?.[TRANSPORT_SOCKET_MATCH_KEY]?.tlsMode === 'istio';
}

export function toLocalityLbEndpoints(groups: readonly LocalityGroup[]): LocalityLbEndpointsInit[] {
  return groups.map((g) => ({
    locality: { region: g.locality.region, zone: g.locality.zone, subZone: g.locality.subzone },
    lbEndpoints: g.endpoints.map((w) => w.lb),
    ...(g.weight !== undefined ? { loadBalancingWeight: g.weight } : {}),
    priority: g.priority,
  }));
}
