/**
 * Workloads of the workload API (istio.workload.Workload) from Kubernetes Pods, WorkloadEntries and
 * ServiceEntry inline endpoints, as istiod builds them (pilot/pkg/serviceregistry/ambient/workloads.go
 * podWorkloadBuilder, workloadEntryWorkloadBuilder, serviceEntryWorkloadBuilder).
 */
import { create } from '@bufbuild/protobuf';
import { labelsSubsetOf, workloadEntryLabels, type Config } from '../../config/index.js';
import {
  AUTO_REGISTRATION_GROUP_ANNOTATION,
  CANONICAL_NAME_LABEL,
  CANONICAL_REVISION_LABEL,
  DATAPLANE_MODE_LABEL,
  DEFAULT_TRUST_DOMAIN,
  SIDECAR_STATUS_ANNOTATION,
} from '../../config/constants.js';
import { ServiceEntry_Resolution } from '../../gen/networking/v1alpha3/service_entry_pb.js';
import type { WorkloadEntry } from '../../gen/networking/v1alpha3/workload_entry_pb.js';
import {
  AddressSchema,
  LocalitySchema,
  NetworkMode,
  PortListSchema,
  PortSchema,
  TunnelProtocol,
  WorkloadSchema,
  WorkloadStatus,
  WorkloadType,
  type Address,
  type Locality,
  type PortList,
  type Workload,
} from '../../gen/workloadapi/workload_pb.js';
import type { AmbientEndpointSlice, AmbientPod } from '../../registry/index.js';
import { ipAddressBytes } from '../../util/ip.js';
import type { ServiceInfo } from './services.js';
import type { Waypoints } from './waypoints.js';

type Labels = Readonly<Record<string, string>>;

/** Set by istio-cni once it captured a pod's traffic for ztunnel (istiod reads only this). */
export const AMBIENT_REDIRECTION_ANNOTATION = 'ambient.istio.io/redirection';
/** A workload that speaks HBONE itself (a waypoint, a proxy with native tunnel support). */
const TUNNEL_LABEL = 'networking.istio.io/tunnel';
const WORKLOAD_NAME_LABEL = 'service.istio.io/workload-name';

/** One workload of the index with the resource name ztunnel knows it by (its uid). */
export interface WorkloadAddress {
  readonly name: string;
  readonly address: Address;
}

export interface WorkloadContext {
  readonly clusterId: string;
  readonly trustDomain: string;
  readonly network: string;
  readonly waypoints: Waypoints;
  readonly namespaceLabels: (namespace: string) => Labels;
  /** The services of a namespace (for selectors). */
  readonly services: (namespace: string) => readonly ServiceInfo[];
  /** Workload.authorization_policies: `namespace/name` of the selector-based policies that apply. */
  readonly policies: (namespace: string, labels: Labels) => string[];
}

/** istiod's pickTrustDomain: the default `cluster.local` is left out (ztunnel assumes it). */
const trustDomainOf = (td: string): string => (td === DEFAULT_TRUST_DOMAIN ? '' : td);

/** istiod's kubelabels.CanonicalService. */
export function canonicalService(labels: Labels, workloadName: string): { name: string; revision: string } {
  return {
    name: labels[CANONICAL_NAME_LABEL] ?? labels['app.kubernetes.io/name'] ?? labels.app ?? workloadName,
    revision: labels[CANONICAL_REVISION_LABEL] ?? labels['app.kubernetes.io/version'] ?? labels.version ?? 'latest',
  };
}

/**
 * Whether ztunnel carries this workload's traffic (HBONE). istiod relies on istio-cni's
 * `ambient.istio.io/redirection: enabled` annotation; meshpilot also takes the label that makes
 * istio-cni capture a workload — `istio.io/dataplane-mode: ambient` on it, or for a pod (the only
 * workload istio-cni captures) on its namespace, unless the pod says otherwise (`none`) or has a
 * sidecar. `namespaceLabels` undefined: not a pod (a WorkloadEntry, a ServiceEntry endpoint).
 */
export function inAmbientMesh(labels: Labels, annotations: Labels, namespaceLabels: Labels | undefined): boolean {
  if (annotations[AMBIENT_REDIRECTION_ANNOTATION] === 'enabled') return true;
  if (annotations[SIDECAR_STATUS_ANNOTATION] !== undefined) return false;
  const own = labels[DATAPLANE_MODE_LABEL];
  if (own !== undefined) return own === 'ambient';
  return namespaceLabels?.[DATAPLANE_MODE_LABEL] === 'ambient';
}

/** istiod's setTunnelProtocol, with meshpilot's ambient-mode labels (see inAmbientMesh). */
function setTunnel(w: Workload, labels: Labels, annotations: Labels, namespaceLabels: Labels | undefined): void {
  if (inAmbientMesh(labels, annotations, namespaceLabels)) w.tunnelProtocol = TunnelProtocol.HBONE;
  if (labels[TUNNEL_LABEL] === 'http') {
    w.tunnelProtocol = TunnelProtocol.HBONE;
    w.nativeTunnel = true;
  }
}

function localityOf(region: string, zone: string, subzone: string): Locality | undefined {
  return region === '' && zone === '' && subzone === '' ? undefined : create(LocalitySchema, { region, zone, subzone });
}

/** The services (same namespace) whose selector selects these labels. */
function selecting(ctx: WorkloadContext, namespace: string, labels: Labels): ServiceInfo[] {
  return ctx.services(namespace).filter((s) => s.selector !== undefined && labelsSubsetOf(s.selector, labels));
}

/** A pod's ports per service (istiod's constructServices): named targetPorts through its container ports. */
function podServices(pod: AmbientPod, services: readonly ServiceInfo[]): Record<string, PortList> {
  const named = (n: string): number | undefined => pod.containerPorts.find((c) => c.name === n)?.port;
  const out: Record<string, PortList> = {};
  for (const svc of services) {
    const ports = [];
    for (const p of svc.ports) {
      let target = p.targetPort;
      if (p.targetPortName !== undefined) {
        const found = named(p.targetPortName);
        if (found === undefined) continue; // the pod does not serve this port
        target = found;
      } else if (svc.sourceKind === 'ServiceEntry' && p.portName !== '') {
        target = named(p.portName) ?? (target === 0 ? p.servicePort : target);
      }
      ports.push(create(PortSchema, { servicePort: p.servicePort, targetPort: target }));
    }
    out[svc.name] = create(PortListSchema, { ports });
  }
  return out;
}

/** A WorkloadEntry's (or inline endpoint's) ports per service (istiod's constructServicesFromWorkloadEntry). */
function entryServices(ports: Readonly<Record<string, number>>, services: readonly ServiceInfo[]): Record<string, PortList> {
  const out: Record<string, PortList> = {};
  for (const svc of services) {
    const list = [];
    for (const p of svc.ports) {
      let target = p.targetPort;
      if (svc.sourceKind === 'Service') {
        if (p.targetPortName !== undefined) {
          const found = ports[p.targetPortName];
          if (found === undefined) continue;
          target = found;
        } else if (ports[p.portName] !== undefined) {
          target = ports[p.portName] ?? target;
        }
      } else {
        target = ports[p.portName] ?? (target === 0 ? p.servicePort : target);
      }
      list.push(create(PortSchema, { servicePort: p.servicePort, targetPort: target }));
    }
    out[svc.name] = create(PortListSchema, { ports: list });
  }
  return out;
}

const asAddress = (uid: string, w: Workload): WorkloadAddress => ({
  name: uid,
  address: create(AddressSchema, { type: { case: 'workload', value: w } }),
});

/** A pod (istiod's podWorkloadBuilder). */
export function podWorkload(pod: AmbientPod, ctx: WorkloadContext): WorkloadAddress | undefined {
  const addresses = pod.addresses.map(ipAddressBytes);
  if (addresses.some((a) => a === undefined)) return undefined; // garbage in status: istiod builds none
  const nsLabels = ctx.namespaceLabels(pod.namespace);
  const services = selecting(ctx, pod.namespace, pod.labels);
  const waypoint = ctx.waypoints.forWorkload(pod.namespace, pod.labels, nsLabels);
  const uid = `${ctx.clusterId}//Pod/${pod.namespace}/${pod.name}`;
  const canonical = canonicalService(pod.labels, pod.workloadName);
  const w = create(WorkloadSchema, {
    uid,
    name: pod.name,
    namespace: pod.namespace,
    addresses: addresses as Uint8Array[],
    // The cluster's network, as istiod's ambient index (not the pod's label, which its endpoints read).
    network: ctx.network,
    serviceAccount: pod.serviceAccount,
    ...(waypoint ? { waypoint: waypoint.address } : {}),
    node: pod.nodeName,
    services: podServices(pod, services),
    authorizationPolicies: ctx.policies(pod.namespace, pod.labels),
    status: pod.healthy ? WorkloadStatus.HEALTHY : WorkloadStatus.UNHEALTHY,
    clusterId: ctx.clusterId,
    trustDomain: trustDomainOf(ctx.trustDomain),
    ...(pod.locality ? { locality: localityOf(pod.locality.region, pod.locality.zone, pod.locality.subzone) } : {}),
    networkMode: pod.hostNetwork ? NetworkMode.HOST_NETWORK : NetworkMode.STANDARD,
    workloadName: pod.workloadName,
    workloadType: WorkloadType.POD,
    canonicalName: canonical.name,
    canonicalRevision: canonical.revision,
  });
  setTunnel(w, pod.labels, pod.annotations, nsLabels);
  return asAddress(uid, w);
}

/** Fields shared by WorkloadEntries and inline endpoints. */
function entryWorkload(
  uid: string,
  name: string,
  namespace: string,
  we: WorkloadEntry,
  labels: Labels,
  services: readonly ServiceInfo[],
  waypointLabels: Labels | undefined,
  workloadName: string,
  ctx: WorkloadContext,
  policyLabels: Labels,
): Workload {
  const nsLabels = ctx.namespaceLabels(namespace);
  const waypoint = waypointLabels ? ctx.waypoints.forWorkload(namespace, waypointLabels, nsLabels) : undefined;
  const ip = ipAddressBytes(we.address);
  const [region = '', zone = '', subzone = ''] = we.locality.split('/');
  const canonical = canonicalService(labels, workloadName);
  const locality = localityOf(region, zone, subzone);
  return create(WorkloadSchema, {
    uid,
    name,
    namespace,
    ...(ip ? { addresses: [ip] } : { hostname: we.address }),
    network: we.network !== '' ? we.network : ctx.network,
    serviceAccount: we.serviceAccount,
    ...(waypoint ? { waypoint: waypoint.address } : {}),
    services: entryServices(we.ports, services),
    authorizationPolicies: ctx.policies(namespace, policyLabels),
    status: WorkloadStatus.HEALTHY,
    clusterId: ctx.clusterId,
    trustDomain: trustDomainOf(ctx.trustDomain),
    ...(locality ? { locality } : {}),
    ...(we.weight > 0 ? { capacity: we.weight } : {}),
    workloadName,
    // istiod sends a WorkloadEntry as a pod ("impersonate pod").
    workloadType: WorkloadType.POD,
    canonicalName: canonical.name,
    canonicalRevision: canonical.revision,
  });
}

/** A WorkloadEntry (istiod's workloadEntryWorkloadBuilder); its labels are the spec's with the metadata's over them. */
export function workloadEntryWorkload(we: Config<'WorkloadEntry'>, ctx: WorkloadContext): WorkloadAddress {
  const { namespace, name } = we.meta;
  const labels = workloadEntryLabels(we);
  const workloadName = we.meta.annotations[AUTO_REGISTRATION_GROUP_ANNOTATION] ?? labels[WORKLOAD_NAME_LABEL] ?? name;
  const uid = `${ctx.clusterId}/networking.istio.io/WorkloadEntry/${namespace}/${name}`;
  const meta = { ...we.meta, labels };
  const w = entryWorkload(uid, name, namespace, we.spec, labels, selecting(ctx, namespace, labels), meta.labels, workloadName, ctx, labels);
  setTunnel(w, labels, we.meta.annotations, undefined);
  return asAddress(uid, w);
}

/**
 * A ServiceEntry's inline endpoints (istiod's serviceEntryWorkloadBuilder), each a workload of all
 * its hosts; a DNS ServiceEntry without endpoints or selector has one implicit endpoint per host.
 * Labels (canonical names, tunnel, policies) are the ServiceEntry's; waypoints the endpoint's.
 */
export function serviceEntryWorkloads(se: Config<'ServiceEntry'>, infos: readonly ServiceInfo[], ctx: WorkloadContext): WorkloadAddress[] {
  // A ServiceEntry published to no one (visibility none) has no endpoints either, as in istiod.
  if (infos.length === 0) return [];
  const { namespace, name } = se.meta;
  const spec = se.spec;
  const dns =
    spec.resolution === ServiceEntry_Resolution.DNS ||
    spec.resolution === ServiceEntry_Resolution.DNS_ROUND_ROBIN ||
    spec.resolution === ServiceEntry_Resolution.DYNAMIC_DNS;
  const implicit = spec.endpoints.length === 0 && dns && spec.workloadSelector === undefined;
  const endpoints: { we: WorkloadEntry; services: readonly ServiceInfo[] }[] = implicit
    ? infos.map((info, i) => ({
        we: {
          address: spec.hosts[i] ?? '',
          ports: {},
          labels: {},
          network: '',
          locality: '',
          weight: 0,
          serviceAccount: '',
        } as WorkloadEntry,
        services: [info],
      }))
    : spec.endpoints.map((we) => ({ we, services: infos }));
  return endpoints.map(({ we, services }) => {
    const uid = `${ctx.clusterId}/networking.istio.io/ServiceEntry/${namespace}/${name}/${we.address}`;
    const w = entryWorkload(
      uid,
      name,
      namespace,
      we,
      se.meta.labels,
      services,
      implicit ? undefined : we.labels,
      name,
      ctx,
      se.meta.labels,
    );
    setTunnel(w, { ...se.meta.labels, ...we.labels }, se.meta.annotations, undefined);
    return asAddress(uid, w);
  });
}

/**
 * The endpoints of an EndpointSlice that no pod backs (istiod's endpointSlicesBuilder), one
 * workload each, joined to the slice's Kubernetes Service by port name (TCP ports only). Only what
 * a client needs to reach them: no identity, policies, waypoint or locality.
 */
export function endpointSliceWorkloads(
  slice: AmbientEndpointSlice,
  service: ServiceInfo | undefined,
  ctx: WorkloadContext,
): WorkloadAddress[] {
  if (!service) return [];
  const ports = [];
  for (const p of slice.ports) {
    if (p.protocol !== 'TCP') continue;
    const match = service.ports.find((sp) => sp.portName === p.name);
    if (match) ports.push(create(PortSchema, { servicePort: match.servicePort, targetPort: p.port }));
  }
  const services = { [service.name]: create(PortListSchema, { ports }) };
  const seen = new Set<string>();
  const out: WorkloadAddress[] = [];
  for (const ep of slice.endpoints) {
    const key = ep.addresses[0] ?? '';
    if (seen.has(key)) continue;
    seen.add(key);
    const addresses = ep.addresses.map(ipAddressBytes);
    if (addresses.some((a) => a === undefined)) continue;
    const uid = `${ctx.clusterId}/discovery.k8s.io/EndpointSlice/${slice.namespace}/${slice.name}/${key}`;
    const w = create(WorkloadSchema, {
      uid,
      name: slice.name,
      namespace: slice.namespace,
      addresses: addresses as Uint8Array[],
      network: ctx.network,
      trustDomain: trustDomainOf(ctx.trustDomain),
      services,
      status: ep.ready ? WorkloadStatus.HEALTHY : WorkloadStatus.UNHEALTHY,
      clusterId: ctx.clusterId,
      networkMode: NetworkMode.HOST_NETWORK,
    });
    out.push(asAddress(uid, w));
  }
  return out;
}
