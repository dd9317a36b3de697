/**
 * The endpoints of a waypoint's inbound-vip clusters (istiod's endpoint builder for
 * TrafficDirectionInboundVIP): an ambient workload is reached over HBONE — an internal address of
 * `connect_originate` whose `original_dst` metadata names `<ip>:<port>` — and any other workload
 * (a sidecar, a VM, a plain endpoint) directly at its address.
 */
import { create, type JsonObject } from '@bufbuild/protobuf';
import { ClusterLoadAssignmentSchema, type ClusterLoadAssignment } from '../../gen/envoy/config/endpoint/v3/endpoint_pb.js';
import type { PushContext } from '../../model/index.js';
import type { Endpoint, Service } from '../../registry/index.js';
import { labelsSubsetOf } from '../../config/index.js';
import { endpointAddress, endpointHealth, tlsModeOf, DEFAULT_CLUSTER_ID, TRANSPORT_SOCKET_MATCH_KEY } from '../endpoint/istio-endpoint.js';
import { TunnelProtocol } from '../../gen/workloadapi/workload_pb.js';
import { CONNECT_ORIGINATE, ORIGINAL_DST_METADATA_KEY, parseInboundVipClusterName } from './waypoint-common.js';

/** A Kubernetes endpoint (a pod, or an EndpointSlice address without one): the registry's source kinds outside Istio's config kinds. */
const isKubeEndpoint = (e: Endpoint): boolean => ['Pod', 'EndpointSlice'].includes(e.source.kind as string);
/** The workload behind an endpoint: its Pod or WorkloadEntry. */
const workloadName = (e: Endpoint): string =>
  (e.source.kind as string) === 'Pod' || e.source.kind === 'WorkloadEntry' ? e.source.name : '';

const DATAPLANE_MODE_LABEL = 'istio.io/dataplane-mode';

/**
 * Whether the waypoint reaches this endpoint over HBONE: a Kubernetes pod without a sidecar that
 * has not opted out of ambient, or any endpoint labelled ambient. (istiod asks the ambient index,
 * which also knows the namespace's enrolment; the registries here do not carry namespace labels.)
 */
export function reachedOverHbone(e: Endpoint): boolean {
  const mode = e.labels[DATAPLANE_MODE_LABEL];
  if (mode === 'ambient') return true;
  if (mode === 'none') return false;
  return isKubeEndpoint(e) && tlsModeOf(e) !== 'istio';
}

/**
 * istiod's `istio` workload metadata (AppendLbEndpointMetadata):
 * `<workload>;<namespace>;<canonical service>;<revision>;<cluster>`, the revision left empty when it
 * is the default `latest`. A Pod or WorkloadEntry names itself and its namespace, a ServiceEntry's
 * inline endpoint is `<entry>-<index>`; an EndpointSlice address no pod backs has neither.
 */
function workloadMetadata(push: PushContext, e: Endpoint): string {
  const { kind, namespace, name: sourceName } = e.source;
  let name = workloadName(e);
  let ownNamespace = (kind as string) === 'Pod' || kind === 'WorkloadEntry' ? namespace : '';
  if (kind === 'ServiceEntry') {
    // An inline endpoint is istiod's workload `<entry>-<index>` of the entry's namespace.
    const i = push.config.get('ServiceEntry', namespace, sourceName)?.spec.endpoints.findIndex((ep) => ep.address === e.address) ?? -1;
    if (i >= 0) [name, ownNamespace] = [`${sourceName}-${i}`, namespace];
  }
  const app = e.labels['service.istio.io/canonical-name'] ?? e.labels.app ?? name;
  const rev = e.labels['service.istio.io/canonical-revision'] ?? e.labels.version ?? 'latest';
  return `${name};${ownNamespace};${ownNamespace === '' && name === '' ? '' : app};${rev === 'latest' ? '' : rev};${DEFAULT_CLUSTER_ID}`;
}

/**
 * Whether the waypoint reaches an endpoint over HBONE (istiod's supportTunnel): another waypoint
 * (`gateway.istio.io/managed: istio.io-mesh-controller`), a workload that says it terminates HTTP
 * tunnels (`networking.istio.io/tunnel: http`), or one the ambient index captures (tunnel protocol
 * HBONE). An address the index does not know falls back to its labels (reachedOverHbone).
 */
function overHbone(push: PushContext, e: Endpoint): boolean {
  if (e.labels['gateway.istio.io/managed'] === 'istio.io-mesh-controller' || e.labels['networking.istio.io/tunnel'] === 'http') return true;
  const w = push.ambientBinding().workloadAt(e.address);
  return w ? w.tunnelProtocol === TunnelProtocol.HBONE : reachedOverHbone(e);
}

/** The ClusterLoadAssignment of `inbound-vip|…` for a bound service; undefined for other names. */
export function buildWaypointEndpoints(
  push: PushContext,
  clusterName: string,
  services: readonly Service[],
): ClusterLoadAssignment | undefined {
  const parsed = parseInboundVipClusterName(clusterName);
  if (!parsed) return undefined;
  const svc = services.find((s) => s.hostname === parsed.host);
  if (!svc) return undefined;
  const subsetName = parsed.subset.split('/')[1];
  const subset = subsetName !== undefined ? push.subset(svc, svc.namespace, subsetName) : undefined;
  const endpoints = push
    .endpoints(svc.hostname, parsed.port, svc.namespace)
    // A workload without an address is reachable only through its network's gateway: not from here.
    .filter((e) => e.address !== '' && (subset === undefined || labelsSubsetOf(subset.labels, e.labels)));
  const byLocality = new Map<string, { locality: Endpoint['locality']; eps: Endpoint[] }>();
  for (const e of endpoints) {
    const k = `${e.locality.region}/${e.locality.zone}/${e.locality.subzone}`;
    const g = byLocality.get(k) ?? { locality: e.locality, eps: [] };
    g.eps.push(e);
    byLocality.set(k, g);
  }
  return create(ClusterLoadAssignmentSchema, {
    clusterName,
    endpoints: [...byLocality.values()].map((g) => ({
      locality: g.locality,
      loadBalancingWeight: g.eps.reduce((n, e) => n + e.weight, 0),
      lbEndpoints: g.eps.map((e) => {
        const hbone = overHbone(push, e);
        const target = `${e.address}:${e.port}`;
        const filterMetadata: Record<string, JsonObject> = { istio: { workload: workloadMetadata(push, e) } };
        if (hbone) filterMetadata[ORIGINAL_DST_METADATA_KEY] = { local: target };
        if (tlsModeOf(e) === 'istio') filterMetadata[TRANSPORT_SOCKET_MATCH_KEY] = { tlsMode: 'istio' };
        return {
          hostIdentifier: {
            case: 'endpoint' as const,
            value: {
              address: hbone
                ? {
                    address: {
                      case: 'envoyInternalAddress' as const,
                      value: {
                        addressNameSpecifier: { case: 'serverListenerName' as const, value: CONNECT_ORIGINATE },
                        endpointId: target,
                      },
                    },
                  }
                : endpointAddress(e),
            },
          },
          healthStatus: endpointHealth(e),
          metadata: { filterMetadata },
          loadBalancingWeight: e.weight,
        };
      }),
    })),
  });
}
