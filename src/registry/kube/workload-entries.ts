/**
 * Kubernetes Services select WorkloadEntries, as istiod's kube controller does with the workload
 * instances the ServiceEntry controller forwards to it (PILOT_ENABLE_K8S_SELECT_WORKLOAD_ENTRIES,
 * on by default): a Service with a selector, ClientSideLB (not headless, not ExternalName), gets as
 * endpoints, after its EndpointSlices' ones, the WorkloadEntries of its own namespace whose labels
 * match the selector. Only the config cluster's registry joins them (istiod adds the handler to
 * the config cluster's controller only).
 *
 * The WorkloadEntries are indexed by namespace and label (`k=v`), built per namespace on first use
 * and carried over to the next config snapshot for the namespaces without changes; a Service's
 * entries are the smallest candidate list of its selector's labels, filtered. Nothing is computed
 * per push: the joined registry fills its endpoints per host as they are asked for.
 */
import { isIP } from 'node:net';
import { labelsSubsetOf, workloadEntryLabels, type Config, type ConfigKey, type ConfigSnapshot } from '../../config/index.js';
import type { Endpoint, RegistryInstance, RegistrySnapshot, Service, ServicePort } from '../model.js';
import { isHealthyWorkloadEntry, parseLocality } from '../service-entry-registry.js';

type Labels = Readonly<Record<string, string>>;

/** A WorkloadEntry a Kubernetes Service can select (an IP address, at least one label). */
interface SelectableEntry {
  readonly config: Config<'WorkloadEntry'>;
  /** Its labels (workloadEntryLabels: spec labels with the metadata's over them). */
  readonly labels: Labels;
  readonly healthy: boolean;
}

/** One namespace's selectable entries (name order) by `key=value` label. */
interface NamespaceEntries {
  readonly byLabel: ReadonlyMap<string, readonly SelectableEntry[]>;
}

const EMPTY_NAMESPACE: NamespaceEntries = { byLabel: new Map() };

/**
 * istiod forwards only entries with an IP address (a hostname or `unix://` address is for
 * ServiceEntries only) and ignores those without labels; a health-checked entry that is not
 * healthy is not forwarded at all.
 */
function selectable(we: Config<'WorkloadEntry'>): SelectableEntry | undefined {
  const labels = workloadEntryLabels(we);
  if (isIP(we.spec.address) === 0 || Object.keys(labels).length === 0) return undefined;
  return { config: we, labels, healthy: isHealthyWorkloadEntry(we) };
}

/** The WorkloadEntries of one config snapshot as Kubernetes Services select them. */
export class KubeWorkloadEntries {
  static readonly EMPTY = new KubeWorkloadEntries(undefined, new Map());
  #byAddress: Map<string, SelectableEntry[]> | undefined;

  private constructor(
    private readonly snapshot: ConfigSnapshot | undefined,
    /** Namespaces indexed so far (those of the index before that did not change, then those asked for). */
    private readonly namespaces: Map<string, NamespaceEntries>,
  ) {}

  /**
   * The index of `snapshot`. With the index of the snapshot before and the entries that changed
   * since, the namespaces it indexed that did not change are taken over (not the index itself:
   * no chain of old snapshots stays reachable).
   */
  static of(
    snapshot: ConfigSnapshot,
    previous?: { readonly index: KubeWorkloadEntries; readonly changed: readonly ConfigKey[] },
  ): KubeWorkloadEntries {
    if (snapshot.byKind('WorkloadEntry').size === 0) return KubeWorkloadEntries.EMPTY;
    const changed = new Set(previous?.changed.map((k) => k.namespace));
    const kept = new Map<string, NamespaceEntries>();
    for (const [ns, entries] of previous?.index.namespaces ?? []) if (!changed.has(ns)) kept.set(ns, entries);
    return new KubeWorkloadEntries(snapshot, kept);
  }

  /** The entries of `namespace` whose labels match `selector` (name order). */
  selected(namespace: string, selector: Labels): SelectableEntry[] {
    const byLabel = this.#namespace(namespace).byLabel;
    let candidates: readonly SelectableEntry[] | undefined;
    for (const [k, v] of Object.entries(selector)) {
      const list = byLabel.get(`${k}=${v}`);
      if (!list) return [];
      if (!candidates || list.length < candidates.length) candidates = list;
    }
    return (candidates ?? []).filter((e) => labelsSubsetOf(selector, e.labels));
  }

  /** The selectable entries at an address (namespace/name order); built on first use. */
  at(address: string): readonly SelectableEntry[] {
    if (!this.#byAddress) {
      this.#byAddress = new Map();
      for (const we of this.snapshot?.list('WorkloadEntry') ?? []) {
        const e = selectable(we);
        if (!e) continue;
        const list = this.#byAddress.get(we.spec.address);
        if (list) list.push(e);
        else this.#byAddress.set(we.spec.address, [e]);
      }
    }
    return this.#byAddress.get(address) ?? [];
  }

  #namespace(namespace: string): NamespaceEntries {
    let out = this.namespaces.get(namespace);
    if (!out) this.namespaces.set(namespace, (out = this.#build(namespace)));
    return out;
  }

  #build(namespace: string): NamespaceEntries {
    const entries = this.snapshot?.list('WorkloadEntry', namespace) ?? [];
    if (entries.length === 0) return EMPTY_NAMESPACE;
    const byLabel = new Map<string, SelectableEntry[]>();
    for (const we of entries) {
      const e = selectable(we);
      if (!e) continue;
      for (const [k, v] of Object.entries(e.labels)) {
        const key = `${k}=${v}`;
        const list = byLabel.get(key);
        if (list) list.push(e);
        else byLabel.set(key, [e]);
      }
    }
    return { byLabel };
  }
}

/** Whether a Service selects WorkloadEntries: istiod's ClientSideLB Kubernetes services with a selector. */
const selectsEntries = (svc: Service): svc is Service & { selector: Labels } =>
  svc.selector !== undefined && svc.resolution === 'STATIC' && !svc.meshExternal;

/**
 * istiod's serviceInstanceFromWorkloadInstance: a numeric targetPort is the port, unless the entry
 * names the Service port in its `ports`; a named targetPort must be in the entry's `ports`, else
 * the entry is no endpoint of that port.
 */
function entryPort(port: ServicePort, we: Config<'WorkloadEntry'>): number | undefined {
  if (port.targetPortName !== undefined) return we.spec.ports[port.targetPortName];
  return (port.name !== '' ? we.spec.ports[port.name] : undefined) ?? port.targetPort ?? port.port;
}

function entryEndpoint(port: ServicePort, e: SelectableEntry): Endpoint | undefined {
  const target = entryPort(port, e.config);
  if (target === undefined || target === 0) return undefined;
  const we = e.config.spec;
  return {
    address: we.address,
    port: target,
    servicePort: port.port,
    labels: e.labels,
    locality: parseLocality(we.locality),
    weight: we.weight > 0 ? we.weight : 1,
    serviceAccount: we.serviceAccount,
    network: we.network,
    source: { kind: 'WorkloadEntry', namespace: e.config.meta.namespace, name: e.config.meta.name },
    ...(e.healthy ? {} : { unhealthy: true as const }),
  };
}

/** A Kubernetes registry's services with a selector, by namespace (built once per registry snapshot). */
const selectingByNamespace = new WeakMap<RegistrySnapshot, ReadonlyMap<string, readonly Service[]>>();

function selectingServices(registry: RegistrySnapshot, namespace: string): readonly Service[] {
  let index = selectingByNamespace.get(registry);
  if (!index) {
    const map = new Map<string, Service[]>();
    for (const svc of registry.services) {
      if (!selectsEntries(svc)) continue;
      const list = map.get(svc.namespace);
      if (list) list.push(svc);
      else map.set(svc.namespace, [svc]);
    }
    selectingByNamespace.set(registry, (index = map));
  }
  return index.get(namespace) ?? [];
}

/** The hosts of a Kubernetes registry's Services that select a WorkloadEntry with these labels in its namespace. */
export function kubeServicesSelecting(registry: RegistrySnapshot, namespace: string, labels: Labels): string[] {
  return selectingServices(registry, namespace)
    .filter((s) => s.selector !== undefined && labelsSubsetOf(s.selector, labels))
    .map((s) => s.hostname);
}

/** The addresses of the WorkloadEntries a Service selects (for the instances a Service change touches). */
export function selectedEntryAddresses(svc: Service, config: ConfigSnapshot): string[] {
  if (!selectsEntries(svc)) return [];
  return config
    .list('WorkloadEntry', svc.namespace)
    .filter((we) => selectable(we) !== undefined && labelsSubsetOf(svc.selector, workloadEntryLabels(we)))
    .map((we) => we.spec.address);
}

/**
 * A Kubernetes registry with the WorkloadEntries its Services select as further endpoints. The
 * registry itself when no entry exists, so an entry-less mesh pays nothing.
 */
export function withWorkloadEntries(registry: RegistrySnapshot, entries: KubeWorkloadEntries): RegistrySnapshot {
  return entries === KubeWorkloadEntries.EMPTY ? registry : new KubeRegistryWithEntries(registry, entries);
}

class KubeRegistryWithEntries implements RegistrySnapshot {
  /** Host → service port → the served endpoints of the selected entries, filled on first ask. */
  readonly #byHost = new Map<string, ReadonlyMap<number, readonly Endpoint[]>>();

  constructor(
    private readonly kube: RegistrySnapshot,
    private readonly entries: KubeWorkloadEntries,
  ) {}

  get services(): readonly Service[] {
    return this.kube.services;
  }
  get workloadInstances(): RegistrySnapshot['workloadInstances'] {
    return this.kube.workloadInstances;
  }
  get ambient(): RegistrySnapshot['ambient'] {
    return this.kube.ambient;
  }
  get clusterId(): string | undefined {
    return this.kube.clusterId;
  }

  serviceByHost(hostname: string, namespace?: string): Service | undefined {
    return this.kube.serviceByHost(hostname, namespace);
  }

  endpoints(hostname: string, servicePort: number, namespace?: string): readonly Endpoint[] {
    const own = this.kube.endpoints(hostname, servicePort, namespace);
    const extra = this.#entryEndpoints(hostname).get(servicePort);
    return extra && extra.length > 0 ? [...own, ...extra] : own;
  }

  instancesAt(address: string): readonly RegistryInstance[] {
    const own = this.kube.instancesAt(address);
    const at = this.entries.at(address);
    if (at.length === 0) return own;
    const out = [...own];
    for (const e of at) {
      for (const service of selectingServices(this.kube, e.config.meta.namespace)) {
        if (service.selector === undefined || !labelsSubsetOf(service.selector, e.labels)) continue;
        for (const servicePort of service.ports) {
          const endpoint = entryEndpoint(servicePort, e);
          if (endpoint) out.push({ service, servicePort, endpoint });
        }
      }
    }
    return out;
  }

  /** Unhealthy entries are left out (istiod's PILOT_SEND_UNHEALTHY_ENDPOINTS=false); they stay instances. */
  #entryEndpoints(hostname: string): ReadonlyMap<number, readonly Endpoint[]> {
    const cached = this.#byHost.get(hostname);
    if (cached) return cached;
    const svc = this.kube.serviceByHost(hostname);
    const byPort = new Map<number, readonly Endpoint[]>();
    if (svc && selectsEntries(svc)) {
      const selected = this.entries.selected(svc.namespace, svc.selector).filter((e) => e.healthy);
      for (const port of svc.ports)
        byPort.set(
          port.port,
          selected.flatMap((e) => entryEndpoint(port, e) ?? []),
        );
    }
    this.#byHost.set(hostname, byPort);
    return byPort;
  }
}
