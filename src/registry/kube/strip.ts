/**
 * What the registry keeps of each object it watches (client-go transforms, as istiod's
 * StripPodUnusedFields / StripNodeUnusedFields): applied by the reflectors before an object is
 * cached, so a cluster's worth of Pods and EndpointSlices holds only the fields translate.ts and
 * ambient-translate.ts read. Everything else (managedFields, status of Services, volumes,
 * env, images, node capacity, …) is dropped on arrival. A field read later must be kept here too.
 */
import type { V1EndpointSlice, V1Node, V1Pod, V1Service } from '@kubernetes/client-node';

/** Annotations no consumer reads that can be large (a whole copy of the object; per-pod proxy overrides). */
const DROPPED_ANNOTATIONS = ['kubectl.kubernetes.io/last-applied-configuration', 'proxy.istio.io/overrides'];

type Meta = NonNullable<V1Pod['metadata']>;

function keptMeta(m: Meta | undefined, opts: { annotations: boolean; owners: boolean }): Meta {
  if (m === undefined) return {};
  const out: Meta = {};
  if (m.name !== undefined) out.name = m.name;
  if (m.namespace !== undefined) out.namespace = m.namespace;
  if (m.resourceVersion !== undefined) out.resourceVersion = m.resourceVersion;
  if (m.uid !== undefined) out.uid = m.uid;
  // Orders services where istiod orders by age (a waypoint's filter chains, the canonical ServiceEntry).
  if (m.creationTimestamp !== undefined) out.creationTimestamp = m.creationTimestamp;
  if (m.labels !== undefined) out.labels = m.labels;
  if (m.deletionTimestamp !== undefined && m.deletionTimestamp !== null) out.deletionTimestamp = m.deletionTimestamp;
  if (m.generateName !== undefined) out.generateName = m.generateName;
  if (opts.owners && m.ownerReferences !== undefined) out.ownerReferences = m.ownerReferences;
  if (opts.annotations && m.annotations !== undefined) {
    const kept = Object.entries(m.annotations).filter(([k]) => !DROPPED_ANNOTATIONS.includes(k));
    if (kept.length > 0) out.annotations = Object.fromEntries(kept);
  }
  return out;
}

/**
 * A Service: metadata (with annotations: exportTo and ambient's), spec; of the status only a load
 * balancer's ingress addresses (a network gateway's address, as istiod's ClusterExternalAddresses).
 */
export function stripService(svc: V1Service): V1Service {
  const ingress = svc.spec?.type === 'LoadBalancer' ? svc.status?.loadBalancer?.ingress : undefined;
  return {
    metadata: keptMeta(svc.metadata, { annotations: true, owners: false }),
    ...(svc.spec ? { spec: svc.spec } : {}),
    ...(ingress && ingress.length > 0
      ? {
          status: {
            loadBalancer: {
              ingress: ingress.map((i) => ({ ...(i.ip ? { ip: i.ip } : {}), ...(i.hostname ? { hostname: i.hostname } : {}) })),
            },
          },
        }
      : {}),
  };
}

/** An EndpointSlice: its service-name label, endpoints and ports; no annotations or owners. */
export function stripEndpointSlice(slice: V1EndpointSlice): V1EndpointSlice {
  return {
    metadata: keptMeta(slice.metadata, { annotations: false, owners: false }),
    addressType: slice.addressType,
    endpoints: slice.endpoints ?? [],
    ...(slice.ports ? { ports: slice.ports } : {}),
  };
}

/** A Pod: identity, owners (workload name), node, service account, host networking, container ports; phase, IPs, conditions. */
export function stripPod(pod: V1Pod): V1Pod {
  const spec = pod.spec;
  const status = pod.status;
  return {
    metadata: keptMeta(pod.metadata, { annotations: true, owners: true }),
    ...(spec
      ? {
          spec: {
            containers: (spec.containers ?? []).map((c) => ({ name: c.name, ...(c.ports ? { ports: c.ports } : {}) })),
            ...(spec.nodeName !== undefined ? { nodeName: spec.nodeName } : {}),
            ...(spec.serviceAccountName !== undefined ? { serviceAccountName: spec.serviceAccountName } : {}),
            ...(spec.hostNetwork !== undefined ? { hostNetwork: spec.hostNetwork } : {}),
          },
        }
      : {}),
    ...(status
      ? {
          status: {
            ...(status.phase !== undefined ? { phase: status.phase } : {}),
            ...(status.podIP !== undefined ? { podIP: status.podIP } : {}),
            ...(status.podIPs !== undefined ? { podIPs: status.podIPs } : {}),
            ...(status.conditions !== undefined
              ? { conditions: status.conditions.map((c) => ({ type: c.type, status: c.status }) as (typeof status.conditions)[number]) }
              : {}),
          },
        }
      : {}),
  };
}

/** A Node: its name and labels (locality), and of its status the ExternalIP (NodePort network gateways). */
export function stripNode(node: V1Node): V1Node {
  const external = (node.status?.addresses ?? []).filter((a) => a.type === 'ExternalIP' && a.address !== '');
  return {
    metadata: keptMeta(node.metadata, { annotations: false, owners: false }),
    ...(external.length > 0 ? { status: { addresses: external.map((a) => ({ type: a.type, address: a.address })) } } : {}),
  };
}
