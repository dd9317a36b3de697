/**
 * Kubernetes objects → the mesh's service model, as istiod's kube registry converts them
 * (pilot/pkg/serviceregistry/kube/conversion.go, controller/endpointslice.go, endpoint_builder.go).
 * Pure functions: the registry feeds them its caches, tests feed them plain objects.
 */
import type { V1EndpointSlice, V1Node, V1Pod, V1Service, V1ServicePort } from '@kubernetes/client-node';
import { labelsSubsetOf, type ConfigKey, type KindName } from '../../config/index.js';
import type { Endpoint, Locality, Protocol, Service, ServicePort, WorkloadInstance } from '../model.js';
import { parseLocality, parseProtocol } from '../service-entry-registry.js';
import {
  EXPORT_TO_ANNOTATION,
  NETWORK_LABEL,
  NODE_SELECTOR_ANNOTATION,
  REGION_LABEL,
  SUBZONE_LABEL,
  ZONE_LABEL,
} from '../../config/constants.js';

/** Kubernetes kinds that define registry services and endpoints (not Istio config kinds). */
export type KubeSourceKind = 'Service' | 'Pod' | 'EndpointSlice';

/**
 * The `source` of a Kubernetes service or endpoint. The model types `source` as a ConfigKey, whose
 * kind is an Istio config kind; Kubernetes objects are not, so the kind is widened here, in this
 * one place. Readers only compare `source.kind` with Istio kinds (never index KINDS by it).
 */
export function kubeSourceKey(kind: KubeSourceKind, namespace: string, name: string): ConfigKey {
  return { kind: kind as string as KindName, namespace, name };
}

export function serviceHostname(name: string, namespace: string, domainSuffix: string): string {
  return `${name}.${namespace}.svc.${domainSuffix}`;
}

/** Ports whose traffic is never sniffed: TCP when neither appProtocol nor the name says otherwise. */
const WELL_KNOWN_PORTS = new Set([25, 53, 3306, 27017]);

/**
 * istiod's kube.ConvertProtocol: UDP stays UDP; `appProtocol` wins over the port name (with
 * Kubernetes' standard `kubernetes.io/h2c|ws|wss` names); `grpc-web…` before the general rule;
 * otherwise the name's prefix before the first `-`. Unknown → UNSUPPORTED (auto-detect), except
 * on well-known ports (SMTP, DNS, MySQL, MongoDB), which are TCP.
 */
export function convertProtocol(port: number, name: string, protocol: string | undefined, appProtocol: string | undefined): Protocol {
  if (protocol === 'UDP') return 'UDP';
  let n = name;
  if (appProtocol !== undefined) {
    n = appProtocol;
    if (n === 'kubernetes.io/h2c') return 'HTTP2';
    if (n === 'kubernetes.io/ws') return 'HTTP';
    if (n === 'kubernetes.io/wss') return 'HTTPS';
  }
  if (n.toLowerCase().startsWith('grpc-web')) return 'GRPC-WEB';
  const dash = n.indexOf('-');
  const prefix = (dash >= 0 ? n.slice(0, dash) : n).toLowerCase();
  // istiod's protocol.Parse also knows http_proxy, which the model has no protocol for.
  const p = parseProtocol(prefix);
  if (p === 'UNSUPPORTED' && WELL_KNOWN_PORTS.has(port)) return 'TCP';
  return p;
}

/** `networking.istio.io/exportTo` (comma-separated; `.` is the own namespace); everywhere when absent. */
export function serviceExportTo(annotations: Readonly<Record<string, string>> | undefined, namespace: string): readonly string[] {
  const raw = annotations?.[EXPORT_TO_ANNOTATION];
  if (raw === undefined || raw.trim() === '') return ['*'];
  const out = raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map((s) => (s === '.' ? namespace : s));
  return [...new Set(out)];
}

function convertPort(p: V1ServicePort): ServicePort {
  const name = p.name ?? '';
  return {
    name,
    port: p.port,
    protocol: convertProtocol(p.port, name, p.protocol, p.appProtocol),
    ...(typeof p.targetPort === 'number' && p.targetPort !== p.port ? { targetPort: p.targetPort } : {}),
    ...(typeof p.targetPort === 'string' && p.targetPort !== '' ? { targetPortName: p.targetPort } : {}),
  };
}

/**
 * A Service as the mesh sees it. ClusterIP, NodePort and LoadBalancer: STATIC (istiod's
 * ClientSideLB, EDS) on the cluster IP(s). Headless (`clusterIP: None`): NONE (Passthrough) with
 * the EndpointSlices' endpoints. ExternalName: mesh-external DNS with the external name as the
 * endpoint (istiod before PILOT_ENABLE_EXTERNAL_NAME_ALIAS; today's istiod makes it an Alias,
 * which the model has no resolution for).
 */
export function convertService(svc: V1Service, domainSuffix: string): Service {
  const name = svc.metadata?.name ?? '';
  const namespace = svc.metadata?.namespace ?? '';
  const spec = svc.spec ?? {};
  const externalName = spec.type === 'ExternalName' ? (spec.externalName ?? '') : '';
  let resolution: Service['resolution'] = externalName !== '' ? 'DNS' : 'STATIC';
  let addresses: readonly string[] = [];
  if (spec.clusterIP === 'None') resolution = 'NONE';
  else if (spec.clusterIP !== undefined && spec.clusterIP !== '')
    addresses = (spec.clusterIPs?.length ?? 0) > 1 ? [...(spec.clusterIPs ?? [])] : [spec.clusterIP];
  return {
    hostname: serviceHostname(name, namespace, domainSuffix),
    namespace,
    ports: (spec.ports ?? []).map(convertPort),
    resolution,
    addresses,
    meshExternal: externalName !== '',
    exportTo: serviceExportTo(svc.metadata?.annotations, namespace),
    source: kubeSourceKey('Service', namespace, name),
    labels: svc.metadata?.labels ?? {},
    ...(spec.selector && Object.keys(spec.selector).length > 0 ? { selector: spec.selector } : {}),
    ...externalAddressesOf(svc),
    ...nodePortsOf(svc),
  };
}

function nodePortsOf(svc: V1Service): { nodePorts?: Readonly<Record<number, number>> } {
  if (svc.spec?.type !== 'NodePort') return {};
  const out: Record<number, number> = {};
  for (const p of svc.spec.ports ?? []) if (p.nodePort !== undefined && p.nodePort > 0) out[p.port] = p.nodePort;
  return Object.keys(out).length > 0 ? { nodePorts: out } : {};
}

/** istiod's isNodePortGatewayService: type NodePort with the node selector annotation. */
export function isNodePortGateway(svc: V1Service): boolean {
  return svc.spec?.type === 'NodePort' && svc.metadata?.annotations?.[NODE_SELECTOR_ANNOTATION] !== undefined;
}

/**
 * A NodePort gateway Service with no address of its own (istiod uses its load balancer or
 * externalIPs first): the ExternalIP of every node whose labels the annotation's selector (JSON
 * labels; unparsable selects every node, as istiod) contains.
 */
export function withNodeAddresses(service: Service, svc: V1Service, nodes: readonly V1Node[]): Service {
  if (!isNodePortGateway(svc) || (service.externalAddresses?.length ?? 0) > 0) return service;
  let selector: Record<string, string> = {};
  try {
    const parsed = JSON.parse(svc.metadata?.annotations?.[NODE_SELECTOR_ANNOTATION] ?? '') as unknown;
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) selector = parsed as Record<string, string>;
  } catch {
    // istiod logs it at debug and selects every node.
  }
  const addresses: string[] = [];
  for (const n of nodes) {
    if (!labelsSubsetOf(selector, n.metadata?.labels ?? {})) continue;
    const external = n.status?.addresses?.find((a) => a.type === 'ExternalIP' && a.address !== '');
    if (external) addresses.push(external.address);
  }
  return addresses.length > 0 ? { ...service, externalAddresses: addresses.sort() } : service;
}

/**
 * istiod's ClusterExternalAddresses: a LoadBalancer's ingress IPs (or host names), then the
 * Service's externalIPs. A network gateway Service is reached from other networks there.
 */
function externalAddressesOf(svc: V1Service): { externalAddresses?: readonly string[] } {
  const out: string[] = [];
  if (svc.spec?.type === 'LoadBalancer')
    for (const i of svc.status?.loadBalancer?.ingress ?? []) if (i.ip || i.hostname) out.push(i.ip || i.hostname!);
  for (const ip of svc.spec?.externalIPs ?? []) if (!out.includes(ip)) out.push(ip);
  return out.length > 0 ? { externalAddresses: out } : {};
}

/** What endpoint building needs from the Pod and Node caches. */
export interface PodLookup {
  podByName(namespace: string, name: string): V1Pod | undefined;
  /** Pods that may serve this IP (running, ready, not being deleted). */
  podsByIp(ip: string): readonly V1Pod[];
  node(name: string): V1Node | undefined;
}

const NO_LOCALITY: Locality = { region: '', zone: '', subzone: '' };

/**
 * istiod's getPodLocality: the pod's `topology.istio.io/locality` (or legacy `istio-locality`,
 * `.`-separated) label, else its Node's region/zone (GA labels, then the beta ones) and
 * `topology.istio.io/subzone`.
 */
export function podLocality(pod: V1Pod | undefined, node: V1Node | undefined): Locality {
  const labels = pod?.metadata?.labels ?? {};
  const label = labels['topology.istio.io/locality'] ?? labels['istio-locality'];
  if (label !== undefined && label !== '') return parseLocality(label.includes('/') ? label : label.replaceAll('.', '/'));
  const n = node?.metadata?.labels;
  if (!n) return NO_LOCALITY;
  return {
    region: n[REGION_LABEL] ?? n['failure-domain.beta.kubernetes.io/region'] ?? '',
    zone: n[ZONE_LABEL] ?? n['failure-domain.beta.kubernetes.io/zone'] ?? '',
    subzone: n[SUBZONE_LABEL] ?? '',
  };
}

/** istiod's PodCache keeps only these pods by IP: not terminal, addressed, not being deleted, Ready. */
export function podServesIp(pod: V1Pod): boolean {
  const status = pod.status;
  if (!status || status.phase === 'Succeeded' || status.phase === 'Failed') return false;
  if (pod.metadata?.deletionTimestamp !== undefined && pod.metadata.deletionTimestamp !== null) return false;
  if (podIps(pod).length === 0) return false;
  return (status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

export function podIps(pod: V1Pod): readonly string[] {
  const ips = new Set<string>();
  if (pod.status?.podIP) ips.add(pod.status.podIP);
  for (const p of pod.status?.podIPs ?? []) if (p.ip) ips.add(p.ip);
  return [...ips];
}

/**
 * A pod as a workload instance that ServiceEntry workloadSelectors select (istiod's kube
 * controller hands ready pods to the ServiceEntry controller): undefined while it does not serve
 * its IP (not ready, terminal, being deleted, no IP). Labels, service account, network and
 * locality as its Service endpoints get them.
 */
export function podWorkload(pod: V1Pod, node: V1Node | undefined): WorkloadInstance | undefined {
  if (!podServesIp(pod)) return undefined;
  const namespace = pod.metadata?.namespace ?? '';
  const name = pod.metadata?.name ?? '';
  const labels = pod.metadata?.labels ?? {};
  return {
    name,
    namespace,
    addresses: podIps(pod),
    labels,
    serviceAccount: pod.spec?.serviceAccountName ?? '',
    locality: podLocality(pod, node),
    network: labels[NETWORK_LABEL] ?? '',
    source: kubeSourceKey('Pod', namespace, name),
  };
}

/** A Service port's port on a pod: numeric targetPort, a named one through the pod's container ports, else the port. */
export function resolveTargetPort(port: V1ServicePort, pod: V1Pod | undefined): number {
  const t = port.targetPort;
  if (typeof t === 'number') return t;
  if (typeof t === 'string' && t !== '') {
    if (/^\d+$/.test(t)) return Number(t);
    for (const c of pod?.spec?.containers ?? []) {
      const found = c.ports?.find((cp) => cp.name === t);
      if (found) return found.containerPort;
    }
  }
  return port.port;
}

/** The pod behind one EndpointSlice address; `expected` when the slice names a pod that is not (yet) known. */
function podFor(
  slice: V1EndpointSlice,
  address: string,
  targetRef: { kind?: string; name?: string; namespace?: string } | undefined,
  pods: PodLookup,
): { pod?: V1Pod; expected: boolean } {
  const ns = slice.metadata?.namespace ?? '';
  if (targetRef?.kind === 'Pod') {
    const pod = pods.podByName(targetRef.namespace ?? ns, targetRef.name ?? '');
    return pod ? { pod, expected: true } : { expected: true };
  }
  // Manually managed slice: guess by IP within the namespace, as istiod does.
  const pod = pods.podsByIp(address).find((p) => p.metadata?.namespace === ns);
  return pod ? { pod, expected: false } : { expected: false };
}

/** istiod's EndpointBuilder: a pod with a subdomain is named `<hostname or pod name>.<subdomain>` in DNS. */
function podDnsOf(pod: V1Pod | undefined): Pick<Endpoint, 'podDns'> {
  const subdomain = pod?.spec?.subdomain ?? '';
  if (subdomain === '') return {};
  return { podDns: { hostname: pod?.spec?.hostname || (pod?.metadata?.name ?? ''), subdomain } };
}

function compareEndpoints(a: Endpoint, b: Endpoint): number {
  return a.address < b.address ? -1 : a.address > b.address ? 1 : a.port - b.port;
}

/**
 * The endpoints of each service port (keyed by the service port number), in address then port
 * order. EndpointSlices of the service (any number; FQDN slices are skipped, IPv4 and IPv6 taken
 * alike) give one endpoint per ready address and slice port whose name matches a service port;
 * not-ready endpoints (terminating included) are left out, as istiod's EDS leaves out unhealthy
 * and terminating ones by default. An address whose slice names a Pod that is not known yet is
 * left out until the Pod arrives. An address in several slices counts once (first slice by name).
 * `clusterId` (multicluster) is recorded on every endpoint.
 */
export function serviceEndpoints(
  service: Service,
  svc: V1Service,
  slices: readonly V1EndpointSlice[],
  pods: PodLookup,
  clusterId?: string,
): ReadonlyMap<number, readonly Endpoint[]> {
  const out = new Map<number, Endpoint[]>(service.ports.map((p) => [p.port, []]));
  const cluster = clusterId !== undefined ? { clusterId } : {};
  const k8sPorts = svc.spec?.ports ?? [];
  if (service.meshExternal && svc.spec?.externalName) {
    for (const p of service.ports) {
      out.get(p.port)?.push({
        address: svc.spec.externalName,
        port: p.port,
        servicePort: p.port,
        labels: svc.metadata?.labels ?? {},
        locality: NO_LOCALITY,
        weight: 1,
        serviceAccount: '',
        network: '',
        source: service.source,
        ...cluster,
      });
    }
    return out;
  }
  const byName = new Map(k8sPorts.map((p) => [p.name ?? '', p]));
  const seen = new Set<string>();
  const sorted = [...slices].sort((a, b) => ((a.metadata?.name ?? '') < (b.metadata?.name ?? '') ? -1 : 1));
  for (const slice of sorted) {
    if (slice.addressType === 'FQDN') continue;
    for (const e of slice.endpoints ?? []) {
      if (e.conditions?.ready === false) continue;
      for (const address of e.addresses ?? []) {
        const { pod, expected } = podFor(slice, address, e.targetRef, pods);
        if (!pod && expected) continue;
        const labels = pod?.metadata?.labels ?? {};
        const base = {
          address,
          labels,
          locality: podLocality(pod, pod?.spec?.nodeName ? pods.node(pod.spec.nodeName) : undefined),
          weight: 1,
          serviceAccount: pod?.spec?.serviceAccountName ?? '',
          network: labels[NETWORK_LABEL] ?? '',
          source: pod
            ? kubeSourceKey('Pod', pod.metadata?.namespace ?? '', pod.metadata?.name ?? '')
            : kubeSourceKey('EndpointSlice', slice.metadata?.namespace ?? '', slice.metadata?.name ?? ''),
          ...podDnsOf(pod),
          ...cluster,
        };
        for (const sp of slice.ports ?? []) {
          const k8sPort = byName.get(sp.name ?? '');
          if (!k8sPort) continue;
          const key = `${address}|${k8sPort.port}`;
          if (seen.has(key)) continue;
          seen.add(key);
          const port = typeof sp.port === 'number' ? sp.port : resolveTargetPort(k8sPort, pod);
          out.get(k8sPort.port)?.push({ ...base, port, servicePort: k8sPort.port });
        }
      }
    }
  }
  for (const list of out.values()) list.sort(compareEndpoints);
  return out;
}
