import type { Endpoint, RegistryInstance, RegistrySnapshot, Service, WorkloadInstance } from '../model.js';
import { WorkloadInstanceMap } from '../workload-instances.js';
import type { AmbientKubeState } from '../ambient-model.js';

/** One Kubernetes Service in a snapshot: the service and its endpoints per service port. */
export interface KubeServiceEntry {
  readonly service: Service;
  readonly endpoints: ReadonlyMap<number, readonly Endpoint[]>;
}

const byNamespaceThenHost = (a: Service, b: Service): number =>
  a.namespace < b.namespace ? -1 : a.namespace > b.namespace ? 1 : a.hostname < b.hostname ? -1 : a.hostname > b.hostname ? 1 : 0;

/**
 * The Kubernetes registry at one moment; never changed after it is built. Entries of services that
 * did not change are shared with the previous snapshot (same objects), so consumers can compare
 * by identity. A Kubernetes hostname names its namespace, so `namespace` arguments are not needed
 * to tell services apart and are ignored.
 */
export class KubeRegistrySnapshot implements RegistrySnapshot {
  /** Sorted by namespace, then hostname. */
  readonly services: readonly Service[];
  #addressIndex: Map<string, RegistryInstance[]> | undefined;

  constructor(
    /** By hostname. */
    readonly entries: ReadonlyMap<string, KubeServiceEntry>,
    services?: readonly Service[],
    /** The ready pods by namespace: the previous snapshot's object when no pod or node changed. */
    readonly workloadInstances: WorkloadInstanceMap = WorkloadInstanceMap.EMPTY,
    /** Ambient's pods, Services and namespace labels (only when the registry keeps them). */
    readonly ambient?: AmbientKubeState,
    /** The cluster the registry reads (istiod's cluster id); services of several clusters merge by hostname. */
    readonly clusterId?: string,
    /** The system namespace's `topology.istio.io/network` label (only when the registry was told its system namespace). */
    readonly systemNamespaceNetwork = '',
  ) {
    this.services = services ?? Object.freeze([...entries.values()].map((e) => e.service).sort(byNamespaceThenHost));
  }

  static readonly EMPTY = new KubeRegistrySnapshot(new Map());

  /** The ready pods of a namespace (name order), for ServiceEntry workloadSelectors. */
  workloads(namespace: string): readonly WorkloadInstance[] {
    return this.workloadInstances.inNamespace(namespace);
  }

  serviceByHost(hostname: string): Service | undefined {
    return this.entries.get(hostname)?.service;
  }

  endpoints(hostname: string, servicePort: number): readonly Endpoint[] {
    return this.entries.get(hostname)?.endpoints.get(servicePort) ?? [];
  }

  instancesAt(address: string): readonly RegistryInstance[] {
    this.#addressIndex ??= this.#indexAddresses();
    return this.#addressIndex.get(address) ?? [];
  }

  /** Built on first use: service then port order, as `services` lists them. */
  #indexAddresses(): Map<string, RegistryInstance[]> {
    const index = new Map<string, RegistryInstance[]>();
    for (const service of this.services) {
      const eps = this.entries.get(service.hostname)?.endpoints;
      for (const servicePort of service.ports) {
        for (const endpoint of eps?.get(servicePort.port) ?? []) {
          const list = index.get(endpoint.address);
          if (list) list.push({ service, servicePort, endpoint });
          else index.set(endpoint.address, [{ service, servicePort, endpoint }]);
        }
      }
    }
    return index;
  }
}
