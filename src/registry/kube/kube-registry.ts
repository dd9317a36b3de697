/**
 * The Kubernetes service registry: Services, EndpointSlices (discovery.k8s.io/v1), Pods, Nodes and
 * Namespaces watched through reflectors, turned into an immutable KubeRegistrySnapshot. Work is
 * incremental: each informer batch marks what it touched (services; pods and their IPs; nodes;
 * namespaces entering or leaving the discovery selection), and one rebuild per event-loop tick
 * recomputes only the services those reach. Listeners hear which hosts' services and which hosts'
 * endpoints changed, and which workload addresses' instances may have — an endpoints-only change
 * is the EDS-only path (no PushContext rebuild) — and which ready pods changed (ServiceEntry
 * workloadSelectors select pods too).
 */
import type { V1EndpointSlice, V1Node, V1Pod, V1Service } from '@kubernetes/client-node';
import type { KubeConfig } from '../../kube/index.js';
import { errorMessage } from '../../util/errors.js';
import type { Logger } from '../../util/log.js';
import {
  NamespaceFilter,
  objectKey,
  rawListTarget,
  Reflector,
  type BackoffOptions,
  type KubeObject,
  type NamespaceSelectionChange,
  type ReflectorEvent,
  type ReflectorStats,
} from '../../config/sources/kube/index.js';
import type { LabelSelector } from '../../config/index.js';
import type { WorkloadInstance } from '../model.js';
import { WorkloadInstanceMap } from '../workload-instances.js';
import { KubeRegistrySnapshot, type KubeServiceEntry } from './kube-snapshot.js';
import { ambientEndpointSlice, ambientPod, ambientService } from './ambient-translate.js';
import type { AmbientEndpointSlice, AmbientKubeService, AmbientKubeState, AmbientPod } from '../ambient-model.js';
import {
  convertService,
  isNodePortGateway,
  podIps,
  podServesIp,
  podWorkload,
  serviceEndpoints,
  serviceHostname,
  withNodeAddresses,
  type PodLookup,
} from './translate.js';
import { DEFAULT_DOMAIN_SUFFIX, NETWORK_LABEL } from '../../config/constants.js';
import { stripEndpointSlice, stripNode, stripPod, stripService } from './strip.js';

export interface KubeRegistryOptions {
  readonly kubeConfig: KubeConfig;
  readonly logger: Logger;
  /** Cluster domain of service hostnames (default `cluster.local`). */
  readonly domainSuffix?: string;
  /** istiod's discoverySelectors: only namespaces whose labels match one (none: all namespaces). */
  readonly discoverySelectors?: readonly LabelSelector[];
  readonly backoff?: BackoffOptions;
  /** Keep what ambient's workload discovery reads (every pod with an IP, Services, namespace labels). */
  readonly ambient?: boolean;
  /** The cluster's id (istiod's cluster.ID), recorded on the snapshot and on every endpoint. */
  readonly clusterId?: string;
  /**
   * The cluster's system namespace (a remote cluster's): its `topology.istio.io/network` label is
   * recorded on the snapshot (systemNamespaceNetwork) and a change of it is a `network` change.
   */
  readonly systemNamespace?: string;
}

/** What one rebuild changed. */
export interface KubeRegistryChange {
  /** Hosts whose Service changed (added, removed, ports, addresses, exportTo, …). */
  readonly services: ReadonlySet<string>;
  /** Hosts whose endpoints changed. */
  readonly endpoints: ReadonlySet<string>;
  /** Workload IPs whose instances may have changed. */
  readonly addresses: ReadonlySet<string>;
  /** Ready pods (workload instances) that appeared, changed or went away. */
  readonly workloads: readonly WorkloadChange[];
  /** The system namespace's network label changed: every endpoint of the cluster may be in another network. */
  readonly network?: true;
  /** What changed of the ambient state (`namespace/name` of pods and Services, namespace names). */
  readonly ambient?: AmbientChange;
}

/** Keys of the ambient state that changed in one rebuild. */
export interface AmbientChange {
  readonly pods: ReadonlySet<string>;
  readonly services: ReadonlySet<string>;
  readonly namespaces: ReadonlySet<string>;
  readonly slices: ReadonlySet<string>;
}

/** One pod's workload instance before and after a rebuild (absent: not a ready pod then). */
export interface WorkloadChange {
  readonly namespace: string;
  readonly before?: WorkloadInstance;
  readonly after?: WorkloadInstance;
}

export type KubeRegistryListener = (change: KubeRegistryChange, snapshot: KubeRegistrySnapshot) => void;

const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';

/** Services whose slices name a pod, or hold an address, that changed. */
interface Dirty {
  readonly services: Set<string>;
  readonly pods: Set<string>;
  readonly ips: Set<string>;
  readonly nodes: Set<string>;
  readonly namespaces: Set<string>;
  /** Namespaces whose labels changed (ambient reads them). */
  readonly namespaceLabels: Set<string>;
  /** EndpointSlices (`namespace/name`) that changed (ambient reads the endpoints no pod backs). */
  readonly slices: Set<string>;
}

const newDirty = (): Dirty => ({
  services: new Set(),
  pods: new Set(),
  ips: new Set(),
  nodes: new Set(),
  namespaces: new Set(),
  namespaceLabels: new Set(),
  slices: new Set(),
});

const sliceService = (s: V1EndpointSlice): string | undefined => {
  const name = s.metadata?.labels?.[SERVICE_NAME_LABEL];
  return name ? `${s.metadata?.namespace ?? ''}/${name}` : undefined;
};

export class KubeRegistry {
  readonly #log: Logger;
  readonly #domain: string;
  readonly #clusterId: string | undefined;
  readonly #systemNamespace: string | undefined;
  readonly #services: Reflector<V1Service>;
  readonly #slices: Reflector<V1EndpointSlice>;
  readonly #pods: Reflector<V1Pod>;
  readonly #nodes: Reflector<V1Node>;
  readonly #namespaces: NamespaceFilter;
  /** Service key → slice name → slice. */
  readonly #slicesByService = new Map<string, Map<string, V1EndpointSlice>>();
  /** IP → pod key → pod, for pods that serve their IP. */
  readonly #podsByIp = new Map<string, Map<string, V1Pod>>();
  readonly #indexedIps = new Map<string, readonly string[]>();
  /** `node/namespace/serviceAccount` → how many pods (not Failed) run so; and the key each pod was counted under. */
  readonly #accountsOnNodes = new Map<string, number>();
  readonly #podAccountOnNode = new Map<string, string>();
  /** Namespace → pod name → workload instance, for ready pods of selected namespaces. */
  readonly #workloads = new Map<string, Map<string, WorkloadInstance>>();
  readonly #listeners = new Set<KubeRegistryListener>();
  readonly #lookup: PodLookup;
  #dirty = newDirty();
  #tick: NodeJS.Immediate | undefined;
  #snapshot: KubeRegistrySnapshot;
  /** Ambient's state, kept only when asked for (published copy-on-write: unchanged entries stay identical). */
  #ambient: AmbientKubeState | undefined;
  /** No rebuilds before every resource was listed: a half-listed cluster would flap endpoints. */
  #synced = false;
  #stopped = false;

  constructor(opts: KubeRegistryOptions) {
    this.#log = opts.logger;
    this.#domain = opts.domainSuffix ?? DEFAULT_DOMAIN_SUFFIX;
    this.#clusterId = opts.clusterId;
    this.#systemNamespace = opts.systemNamespace;
    this.#snapshot =
      opts.clusterId === undefined
        ? KubeRegistrySnapshot.EMPTY
        : new KubeRegistrySnapshot(new Map(), [], undefined, undefined, opts.clusterId);
    if (opts.ambient === true) this.#ambient = { pods: new Map(), services: new Map(), namespaces: new Map() };
    const kc = opts.kubeConfig;
    const common = { kubeConfig: kc, logger: opts.logger, ...(opts.backoff ? { backoff: opts.backoff } : {}) };
    // Raw JSON lists, stripped to what the registry reads before anything is cached.
    const reflector = <T extends KubeObject>(
      name: string,
      path: string,
      transform: (object: T) => T,
      onBatch: (events: readonly ReflectorEvent<T>[]) => void,
    ): Reflector<T> =>
      new Reflector<T>({
        ...common,
        name,
        targets: [rawListTarget<T>(kc, path)],
        transform,
        onBatch: (events) => this.#mark(() => onBatch(events)),
      });

    this.#services = reflector('services', '/api/v1/services', stripService, (events) => {
      for (const e of events) this.#dirty.services.add(objectKey(e.object));
    });
    this.#slices = reflector(
      'endpointslices.discovery.k8s.io',
      '/apis/discovery.k8s.io/v1/endpointslices',
      stripEndpointSlice,
      (events) => {
        for (const e of events) this.#onSlice(e);
      },
    );
    this.#pods = reflector('pods', '/api/v1/pods', stripPod, (events) => {
      for (const e of events) this.#onPod(e);
    });
    this.#nodes = reflector('nodes', '/api/v1/nodes', stripNode, (events) => {
      for (const e of events) this.#dirty.nodes.add(e.object.metadata?.name ?? '');
    });
    this.#namespaces = new NamespaceFilter({ ...common, selectors: opts.discoverySelectors ?? [] });
    this.#namespaces.onChange((c) => this.#mark(() => this.#onNamespaces(c)));
    this.#lookup = {
      podByName: (ns, name) => this.#pods.get(ns, name),
      podsByIp: (ip) => [...(this.#podsByIp.get(ip)?.values() ?? [])],
      node: (name) => this.#nodes.get('', name),
    };
  }

  /** Resolves once every resource was listed and the first snapshot built. */
  async start(): Promise<void> {
    await this.#namespaces.start();
    await Promise.all([this.#nodes, this.#pods, this.#services, this.#slices].map((r) => r.start()));
    if (this.#stopped) return;
    this.#synced = true;
    this.#rebuild();
    this.#log.info('kubernetes registry synced', { services: this.#snapshot.services.length });
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#tick) clearImmediate(this.#tick);
    await Promise.all([this.#services, this.#slices, this.#pods, this.#nodes].map((r) => r.stop()));
    await this.#namespaces.stop();
  }

  snapshot(): KubeRegistrySnapshot {
    return this.#snapshot;
  }

  /** Called after each rebuild that changed something; returns the unsubscribe. */
  onChange(fn: KubeRegistryListener): () => void {
    const entry: KubeRegistryListener = (c, s) => fn(c, s);
    this.#listeners.add(entry);
    return () => void this.#listeners.delete(entry);
  }

  /** List/watch counters per resource (debug output and tests). */
  stats(): ReadonlyMap<string, ReflectorStats> {
    return new Map([
      ['services', this.#services.stats()],
      ['endpointslices', this.#slices.stats()],
      ['pods', this.#pods.stats()],
      ['nodes', this.#nodes.stats()],
    ]);
  }

  /** Records what a batch touched; the rebuild runs once the event loop is idle. */
  #mark(record: () => void): void {
    if (this.#stopped) return;
    record();
    if (this.#synced) this.#tick ??= setImmediate(() => this.#rebuild());
  }

  #onSlice(e: ReflectorEvent<V1EndpointSlice>): void {
    this.#dirty.slices.add(objectKey(e.object));
    const before = e.type === 'update' ? e.old : e.type === 'delete' ? e.object : undefined;
    const name = e.object.metadata?.name ?? '';
    if (before) {
      const key = sliceService(before);
      if (key !== undefined) {
        this.#dirty.services.add(key);
        this.#slicesByService.get(key)?.delete(name);
        if (this.#slicesByService.get(key)?.size === 0) this.#slicesByService.delete(key);
      }
    }
    const key = e.type === 'delete' ? undefined : sliceService(e.object);
    if (key === undefined) return;
    this.#dirty.services.add(key);
    let slices = this.#slicesByService.get(key);
    if (!slices) this.#slicesByService.set(key, (slices = new Map()));
    slices.set(name, e.object);
  }

  /**
   * A pod (not Failed, in a namespace meshpilot sees) by name, as the CA's node check reads it
   * (istiod's node authorizer watches pods with `status.phase!=Failed` and the discovery filter).
   */
  placedPod(namespace: string, name: string): { uid: string; serviceAccount: string; nodeName: string } | undefined {
    const pod = this.#pods.get(namespace, name);
    if (!pod || pod.status?.phase === 'Failed' || !this.#namespaces.selects(namespace)) return undefined;
    return { uid: pod.metadata?.uid ?? '', serviceAccount: pod.spec?.serviceAccountName ?? '', nodeName: pod.spec?.nodeName ?? '' };
  }

  /** Does a pod (not Failed) of a namespace meshpilot sees run as `serviceAccount` on `nodeName`? (istiod's saNode index.) */
  serviceAccountOnNode(nodeName: string, namespace: string, serviceAccount: string): boolean {
    return this.#namespaces.selects(namespace) && (this.#accountsOnNodes.get(`${nodeName}/${namespace}/${serviceAccount}`) ?? 0) > 0;
  }

  #indexAccountOnNode(key: string, pod: V1Pod | undefined): void {
    const before = this.#podAccountOnNode.get(key);
    const node = pod?.spec?.nodeName ?? '';
    const sa = pod?.spec?.serviceAccountName ?? '';
    const after =
      pod && node !== '' && sa !== '' && pod.status?.phase !== 'Failed' ? `${node}/${pod.metadata?.namespace ?? ''}/${sa}` : undefined;
    if (before === after) return;
    if (before !== undefined) {
      const n = (this.#accountsOnNodes.get(before) ?? 1) - 1;
      if (n > 0) this.#accountsOnNodes.set(before, n);
      else this.#accountsOnNodes.delete(before);
      this.#podAccountOnNode.delete(key);
    }
    if (after !== undefined) {
      this.#accountsOnNodes.set(after, (this.#accountsOnNodes.get(after) ?? 0) + 1);
      this.#podAccountOnNode.set(key, after);
    }
  }

  #onPod(e: ReflectorEvent<V1Pod>): void {
    const key = objectKey(e.object);
    this.#indexAccountOnNode(key, e.type === 'delete' ? undefined : e.object);
    this.#dirty.pods.add(key);
    for (const ip of this.#indexedIps.get(key) ?? []) {
      this.#dirty.ips.add(ip);
      this.#podsByIp.get(ip)?.delete(key);
      if (this.#podsByIp.get(ip)?.size === 0) this.#podsByIp.delete(ip);
    }
    this.#indexedIps.delete(key);
    if (e.type === 'delete' || !podServesIp(e.object)) return;
    const ips = podIps(e.object);
    this.#indexedIps.set(key, ips);
    for (const ip of ips) {
      this.#dirty.ips.add(ip);
      let pods = this.#podsByIp.get(ip);
      if (!pods) this.#podsByIp.set(ip, (pods = new Map()));
      pods.set(key, e.object);
    }
  }

  #onNamespaces(c: NamespaceSelectionChange): void {
    for (const ns of [...c.added, ...c.removed]) this.#dirty.namespaces.add(ns);
    for (const ns of c.labelsChanged) this.#dirty.namespaceLabels.add(ns);
  }

  /** The services a batch of pod, node and namespace changes reaches, added to `dirty.services`. */
  #expand(dirty: Dirty): void {
    if (dirty.nodes.size > 0) {
      // A NodePort gateway is reached at its nodes' external IPs.
      for (const svc of this.#services.list()) if (isNodePortGateway(svc)) dirty.services.add(objectKey(svc));
      for (const pod of this.#pods.list()) {
        if (!dirty.nodes.has(pod.spec?.nodeName ?? '')) continue;
        dirty.pods.add(objectKey(pod));
        for (const ip of podIps(pod)) dirty.ips.add(ip);
      }
    }
    if (dirty.pods.size + dirty.ips.size > 0) {
      for (const [svc, slices] of this.#slicesByService) {
        if (dirty.services.has(svc)) continue;
        const touched = [...slices.values()].some((s) =>
          (s.endpoints ?? []).some((e) => {
            const ref = e.targetRef;
            if (ref?.kind === 'Pod' && dirty.pods.has(`${ref.namespace ?? s.metadata?.namespace ?? ''}/${ref.name ?? ''}`)) return true;
            return (e.addresses ?? []).some((a) => dirty.ips.has(a));
          }),
        );
        if (touched) dirty.services.add(svc);
      }
    }
    if (dirty.namespaces.size > 0) {
      for (const svc of this.#services.list()) if (dirty.namespaces.has(svc.metadata?.namespace ?? '')) dirty.services.add(objectKey(svc));
    }
  }

  #entry(key: string): KubeServiceEntry | undefined {
    const slash = key.indexOf('/');
    const svc = this.#services.get(key.slice(0, slash), key.slice(slash + 1));
    if (!svc || !this.#namespaces.selects(svc.metadata?.namespace ?? '')) return undefined;
    const converted = convertService(svc, this.#domain);
    const service = isNodePortGateway(svc) ? withNodeAddresses(converted, svc, this.#nodes.list()) : converted;
    const slices = [...(this.#slicesByService.get(key)?.values() ?? [])];
    return { service, endpoints: serviceEndpoints(service, svc, slices, this.#lookup, this.#clusterId) };
  }

  #rebuild(): void {
    if (this.#tick) clearImmediate(this.#tick);
    this.#tick = undefined;
    if (this.#stopped) return;
    const dirty = this.#dirty;
    this.#dirty = newDirty();
    try {
      this.#expand(dirty);
      this.#apply(dirty.services, this.#updateWorkloads(dirty), this.#updateAmbient(dirty));
    } catch (err) {
      // Keep serving the previous snapshot; the next change tries again.
      this.#log.error('kubernetes registry rebuild failed', { error: errorMessage(err) });
    }
  }

  /** Recomputes the workload instances of the pods a batch touched; returns what changed. */
  #updateWorkloads(dirty: Dirty): WorkloadChange[] {
    const keys = new Set(dirty.pods);
    if (dirty.namespaces.size > 0)
      for (const pod of this.#pods.list()) if (dirty.namespaces.has(pod.metadata?.namespace ?? '')) keys.add(objectKey(pod));
    const changes: WorkloadChange[] = [];
    for (const key of keys) {
      const slash = key.indexOf('/');
      const namespace = key.slice(0, slash);
      const name = key.slice(slash + 1);
      const pod = this.#pods.get(namespace, name);
      const nodeName = pod?.spec?.nodeName;
      const after =
        pod && this.#namespaces.selects(namespace) ? podWorkload(pod, nodeName ? this.#nodes.get('', nodeName) : undefined) : undefined;
      let pods = this.#workloads.get(namespace);
      const before = pods?.get(name);
      if (JSON.stringify(before) === JSON.stringify(after)) continue;
      changes.push({ namespace, ...(before ? { before } : {}), ...(after ? { after } : {}) });
      if (after) {
        if (!pods) this.#workloads.set(namespace, (pods = new Map()));
        pods.set(name, after);
      } else if (pods) {
        pods.delete(name);
        if (pods.size === 0) this.#workloads.delete(namespace);
      }
    }
    return changes;
  }

  /** The published workload instances: only the namespaces that changed get new lists. */
  #workloadMap(prev: WorkloadInstanceMap, changes: readonly WorkloadChange[]): WorkloadInstanceMap {
    if (changes.length === 0) return prev;
    const byNamespace = new Map(prev.byNamespace);
    for (const namespace of new Set(changes.map((c) => c.namespace))) {
      const pods = this.#workloads.get(namespace);
      if (!pods) byNamespace.delete(namespace);
      else byNamespace.set(namespace, Object.freeze([...pods.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))));
    }
    return new WorkloadInstanceMap(byNamespace);
  }

  /**
   * The ambient state after a batch: the pods, Services and namespace labels it touched are
   * translated again; an entry whose translation did not change keeps its object.
   */
  #updateAmbient(dirty: Dirty): { state: AmbientKubeState; change: AmbientChange } | undefined {
    const prev = this.#ambient;
    if (!prev) return undefined;
    const podKeys = new Set(dirty.pods);
    if (dirty.namespaces.size > 0)
      for (const pod of this.#pods.list()) if (dirty.namespaces.has(pod.metadata?.namespace ?? '')) podKeys.add(objectKey(pod));
    const split = (key: string): [string, string] => {
      const slash = key.indexOf('/');
      return [key.slice(0, slash), key.slice(slash + 1)];
    };
    const pods = updated<AmbientPod>(prev.pods, podKeys, (key) => {
      const [ns, name] = split(key);
      const pod = this.#pods.get(ns, name);
      if (!pod || !this.#namespaces.selects(ns)) return undefined;
      const nodeName = pod.spec?.nodeName;
      return ambientPod(pod, nodeName ? this.#nodes.get('', nodeName) : undefined);
    });
    const services = updated<AmbientKubeService>(prev.services, dirty.services, (key) => {
      const [ns, name] = split(key);
      const svc = this.#services.get(ns, name);
      return svc && this.#namespaces.selects(ns) ? ambientService(svc) : undefined;
    });
    const namespaces = updated<Readonly<Record<string, string>>>(
      prev.namespaces,
      new Set([...dirty.namespaceLabels, ...dirty.namespaces]),
      (ns) => (this.#namespaces.selects(ns) ? this.#namespaces.labels(ns) : undefined),
    );
    const sliceKeys = new Set(dirty.slices);
    if (dirty.namespaces.size > 0)
      for (const s of this.#slices.list()) if (dirty.namespaces.has(s.metadata?.namespace ?? '')) sliceKeys.add(objectKey(s));
    const slices = updated<AmbientEndpointSlice>(prev.endpointSlices ?? new Map(), sliceKeys, (key) => {
      const [ns, name] = split(key);
      const slice = this.#slices.get(ns, name);
      return slice && this.#namespaces.selects(ns) ? ambientEndpointSlice(slice) : undefined;
    });
    if (pods.changed.size + services.changed.size + namespaces.changed.size + slices.changed.size === 0) return undefined;
    this.#ambient = { pods: pods.map, services: services.map, namespaces: namespaces.map, endpointSlices: slices.map };
    return {
      state: this.#ambient,
      change: { pods: pods.changed, services: services.changed, namespaces: namespaces.changed, slices: slices.changed },
    };
  }

  #apply(
    keys: ReadonlySet<string>,
    workloads: readonly WorkloadChange[],
    ambient?: { readonly state: AmbientKubeState; readonly change: AmbientChange },
  ): void {
    const prev = this.#snapshot;
    let entries: Map<string, KubeServiceEntry> | undefined;
    const services = new Set<string>();
    const endpoints = new Set<string>();
    const addresses = new Set<string>();
    for (const key of keys) {
      const slash = key.indexOf('/');
      const host = serviceHostname(key.slice(slash + 1), key.slice(0, slash), this.#domain);
      const before = prev.entries.get(host);
      const after = this.#entry(key);
      const serviceChanged = JSON.stringify(before?.service) !== JSON.stringify(after?.service);
      const endpointsChanged = JSON.stringify([...(before?.endpoints ?? [])]) !== JSON.stringify([...(after?.endpoints ?? [])]);
      if (!serviceChanged && !endpointsChanged) continue;
      entries ??= new Map(prev.entries);
      if (serviceChanged) services.add(host);
      if (endpointsChanged) endpoints.add(host);
      for (const e of [before, after]) for (const list of e?.endpoints.values() ?? []) for (const ep of list) addresses.add(ep.address);
      if (!after) entries.delete(host);
      else
        entries.set(host, {
          service: serviceChanged || !before ? after.service : before.service,
          endpoints: endpointsChanged || !before ? after.endpoints : before.endpoints,
        });
    }
    const network = this.#systemNamespace === undefined ? '' : (this.#namespaces.labels(this.#systemNamespace)?.[NETWORK_LABEL] ?? '');
    const networkChanged = network !== prev.systemNamespaceNetwork;
    if (!entries && workloads.length === 0 && !ambient && !networkChanged) return;
    this.#snapshot = new KubeRegistrySnapshot(
      entries ?? prev.entries,
      services.size > 0 ? undefined : prev.services,
      this.#workloadMap(prev.workloadInstances, workloads),
      ambient?.state ?? prev.ambient,
      this.#clusterId,
      network,
    );
    const change: KubeRegistryChange = {
      services,
      endpoints,
      addresses,
      workloads,
      ...(ambient ? { ambient: ambient.change } : {}),
      ...(networkChanged ? { network: true as const } : {}),
    };
    for (const fn of [...this.#listeners]) {
      try {
        fn(change, this.#snapshot);
      } catch (err) {
        this.#log.error('kubernetes registry listener failed', { error: errorMessage(err) });
      }
    }
  }
}

/**
 * `prev` with the entries of `keys` translated again (`translate` undefined: gone). A new map only
 * when something changed; an entry that translates to the same JSON keeps its old object.
 */
function updated<T>(
  prev: ReadonlyMap<string, T>,
  keys: ReadonlySet<string>,
  translate: (key: string) => T | undefined,
): { map: ReadonlyMap<string, T>; changed: Set<string> } {
  const changed = new Set<string>();
  let next: Map<string, T> | undefined;
  for (const key of keys) {
    const before = prev.get(key);
    const after = translate(key);
    if (before === after || (before !== undefined && after !== undefined && JSON.stringify(before) === JSON.stringify(after))) continue;
    changed.add(key);
    next ??= new Map(prev);
    if (after === undefined) next.delete(key);
    else next.set(key, after);
  }
  return { map: next ?? prev, changed };
}
