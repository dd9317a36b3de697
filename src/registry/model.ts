import type { ConfigKey } from '../config/index.js';
import type { AmbientKubeState } from './ambient-model.js';

/** Istio protocol names, as on ServiceEntry ports / Kubernetes port names. */
export type Protocol =
  'HTTP' | 'HTTP2' | 'HTTPS' | 'GRPC' | 'GRPC-WEB' | 'TCP' | 'TLS' | 'MONGO' | 'REDIS' | 'MYSQL' | 'UDP' | 'UNSUPPORTED';

export interface ServicePort {
  readonly name: string;
  readonly port: number;
  readonly protocol: Protocol;
  /** Port on the workloads when it differs from `port` (ServiceEntry targetPort). */
  readonly targetPort?: number;
  /** A Kubernetes Service's targetPort given by name: a selected WorkloadEntry's `ports` entry of that name. */
  readonly targetPortName?: string;
}

export type Resolution = 'NONE' | 'STATIC' | 'DNS' | 'DNS_ROUND_ROBIN' | 'DYNAMIC_DNS';

/** One service (a hostname) in the mesh registry. */
export interface Service {
  /** FQDN, e.g. `reviews.default.svc.cluster.local` or `api.example.com`. */
  readonly hostname: string;
  readonly namespace: string;
  readonly ports: readonly ServicePort[];
  readonly resolution: Resolution;
  readonly addresses: readonly string[];
  readonly meshExternal: boolean;
  /** Namespaces this service is exported to (`*` = all, `.` resolved to the own namespace). */
  readonly exportTo: readonly string[];
  /** The config object(s) that define this service (for scoping pushes). */
  readonly source: ConfigKey;
  /** The defining object's labels (Kubernetes Service or ServiceEntry metadata): ambient reads `istio.io/use-waypoint`. */
  readonly labels?: Readonly<Record<string, string>>;
  /** Where the service is reached from outside its cluster (a Kubernetes LoadBalancer's ingress, externalIPs): network gateways. */
  readonly externalAddresses?: readonly string[];
  /** A Kubernetes NodePort Service's node port per service port (istiod's ClusterExternalPorts): a NodePort gateway is reached there. */
  readonly nodePorts?: Readonly<Record<number, number>>;
  /**
   * Addresses allocated to a ServiceEntry host that has none (auto-allocate.ts); only proxies that
   * capture DNS and ask for them (`DNS_CAPTURE` and `DNS_AUTO_ALLOCATE`) see them.
   */
  readonly autoAllocated?: { readonly v4: string; readonly v6: string };
  /**
   * A Kubernetes Service's `spec.selector` (absent when it has none): the WorkloadEntries of its
   * namespace with these labels are its endpoints too (kube/workload-entries.ts).
   */
  readonly selector?: Readonly<Record<string, string>>;
  /**
   * A Kubernetes Service of the same hostname in several clusters (merged by the aggregate
   * registry): each cluster's own addresses, by cluster id (istiod's ClusterVIPs). `addresses` is
   * the first cluster's (istiod's DefaultAddress); a proxy uses its own cluster's
   * (addressesInCluster). Absent for a service of one cluster.
   */
  readonly clusterAddresses?: Readonly<Record<string, readonly string[]>>;
}

/**
 * The addresses of `svc` as seen from `clusterId` (istiod's ClusterVIPs.GetAddressesFor, else the
 * default address): that cluster's own when the service is in it, else the first cluster's.
 */
export function addressesInCluster(svc: Service, clusterId: string): readonly string[] {
  return svc.clusterAddresses?.[clusterId] ?? svc.addresses;
}

export interface Locality {
  readonly region: string;
  readonly zone: string;
  readonly subzone: string;
}

/** One workload address serving one port of one service. */
export interface Endpoint {
  readonly address: string;
  /** Port on the workload (after targetPort / WorkloadEntry port mapping). */
  readonly port: number;
  /** The service port this endpoint serves (`Service.ports[].port`). */
  readonly servicePort: number;
  readonly labels: Readonly<Record<string, string>>;
  readonly locality: Locality;
  /** LB weight, default 1. */
  readonly weight: number;
  readonly serviceAccount: string;
  readonly network: string;
  /** The config that produced it: ServiceEntry (inline endpoint) or WorkloadEntry. */
  readonly source: ConfigKey;
  /**
   * A health-checked WorkloadEntry whose Healthy condition is not True: still an instance of its
   * services (the VM keeps its inbound config), but never served to clients (registry `endpoints`).
   */
  readonly unhealthy?: true;
  /**
   * A Kubernetes pod with `spec.subdomain`: its DNS hostname (`spec.hostname`, else its name) and
   * that subdomain, so `<hostname>.<subdomain>.<ns>.svc.<domain>` names it (headless services).
   */
  readonly podDns?: { readonly hostname: string; readonly subdomain: string };
  /**
   * The Kubernetes cluster the endpoint was read from (istiod's Locality.ClusterID); absent for
   * ServiceEntry and WorkloadEntry endpoints, which belong to meshpilot's own cluster.
   */
  readonly clusterId?: string;
}

/** One port of one service served by the workload at an address. */
export interface RegistryInstance {
  readonly service: Service;
  readonly servicePort: ServicePort;
  readonly endpoint: Endpoint;
}

/** The service registry as one immutable view: what PushContext and generators read. */
export interface RegistrySnapshot {
  readonly services: readonly Service[];
  serviceByHost(hostname: string, namespace?: string): Service | undefined;
  /** Endpoints of one service port, in a stable order. */
  endpoints(hostname: string, servicePort: number, namespace?: string): readonly Endpoint[];
  /** The service ports whose endpoints have this address, in service then port order. */
  instancesAt(address: string): readonly RegistryInstance[];
  /**
   * Workloads of this registry that ServiceEntry workloadSelectors select too (Kubernetes Pods;
   * istiod's workload instances). The same object as long as none changed, so identity tells.
   */
  readonly workloadInstances?: WorkloadInstances | undefined;
  /**
   * What ambient's workload discovery reads of this registry (Kubernetes pods, Services and
   * namespace labels); absent when the registry has none or ambient is off.
   */
  readonly ambient?: AmbientKubeState | undefined;
  /**
   * The Kubernetes cluster this registry reads (multicluster): registries that name a cluster are
   * merged by hostname as istiod's aggregate controller merges Kubernetes registries.
   */
  readonly clusterId?: string | undefined;
  /**
   * The `topology.istio.io/network` label of the cluster's system namespace, for a remote cluster's
   * registry: the network of its endpoints that name none (istiod reads it per cluster).
   */
  readonly systemNamespaceNetwork?: string | undefined;
  /**
   * The clusters from which some merged service has addresses other than its default ones
   * (`clusterAddresses`): only a proxy of one of them sees addresses that differ, so only they need
   * config of their own.
   */
  readonly clustersWithOwnAddresses?: ReadonlySet<string> | undefined;
}

/** A workload that is not a WorkloadEntry (a ready Kubernetes Pod), as a ServiceEntry selects it. */
export interface WorkloadInstance {
  readonly name: string;
  readonly namespace: string;
  /** Its IPs: one endpoint per address. */
  readonly addresses: readonly string[];
  readonly labels: Readonly<Record<string, string>>;
  readonly serviceAccount: string;
  readonly locality: Locality;
  readonly network: string;
  readonly source: ConfigKey;
}

/** Workload instances by namespace, each list in name order. */
export interface WorkloadInstances {
  inNamespace(namespace: string): readonly WorkloadInstance[];
}
