import {
  type Config,
  type ConfigKey,
  type KindName,
  type ConfigSnapshot,
  changedIdsBetween,
  ClusterLocalHosts,
  isVisible,
} from '../config/index.js';
import { compareIds } from '../util/order.js';
import type { Subset } from '../gen/networking/v1alpha3/destination_rule_pb.js';
import {
  type Endpoint,
  type RegistrySnapshot,
  type Service,
  type WorkloadInstances,
  aggregateRegistry,
  buildServiceEntryRegistry,
  hasWorkloadSelector,
  KubeWorkloadEntries,
  kubeServicesSelecting,
  updateSelectedPods,
  updateWorkloadEntries,
  withWorkloadEntries,
  workloadInstancesOf,
} from '../registry/index.js';
import { XdsCache } from './xds-cache.js';
import { anyOf, endpointsDep, hostDep, instancesDep } from './dependency-tokens.js';
import { DestinationRuleIndex } from './indexes/destination-rule-index.js';
import { EnvoyFilterIndex } from './indexes/envoy-filter-index.js';
import { GatewayIndex } from './indexes/gateway-index.js';
import { envoyFilterRegistries } from './envoy-filter.js';
import { SecurityPolicyIndex } from './indexes/security-index.js';
import { TelemetryIndex, TrackedTelemetry } from './indexes/telemetry-index.js';
import { VirtualServiceIndex } from './indexes/virtual-service-index.js';
import { GAMMA_KINDS, gammaVirtualServices } from './gateway-api/gamma-routes.js';
import { GATEWAY_API_MODEL_KINDS, gatewayApiConfig, type GatewayApiConfig } from './gateway-api/gateway-api-model.js';
import type { MeshConfig } from '../config/index.js';
import type { Proxy } from './proxy.js';
import { proxyServiceInstances, type ServiceInstance } from './service-instances.js';
import { buildSidecarScope, selectSidecar, type SidecarScope } from './sidecar-scope.js';
import { TrackedGateways, TrackedSecurity, trackedScope, trackedSnapshot } from './tracked-views.js';
import { proxyLabelsKey, viewKey, viewSensitivity, type ViewSensitivity } from './view-keys.js';
import { AmbientIndex } from './ambient/ambient-index.js';
import { workloadPolicyNames, type ZtunnelPolicyOptions } from './ambient/policies.js';
import { EMPTY_AMBIENT_STATE } from '../registry/index.js';
import {
  DEFAULT_NETWORK_SETTINGS,
  EndpointNetworks,
  networkGateways,
  remoteClusterNetworks,
  type NetworkGateways,
  type NetworkSettings,
} from './networks.js';

/** The cluster id an ambient index is built for when no ztunnel asked for one yet (istiod's CLUSTER_ID default). */
const DEFAULT_AMBIENT_CLUSTER_ID = 'Kubernetes';

export interface PushContextInput {
  readonly version: string;
  readonly mesh: MeshConfig;
  readonly config: ConfigSnapshot;
  /** The cache shared across pushes (the DiscoveryServer's); a private one when absent. */
  readonly cache?: XdsCache;
  readonly cacheSize?: number;
  /**
   * The snapshot this one follows: indexes whose kinds did not change are reused from it. Leave
   * out for a full rebuild.
   */
  readonly previous?: PushContext;
  /**
   * Registries other than the config's ServiceEntries (Kubernetes), at this push; they own a host
   * before a ServiceEntry does (istiod's aggregate order). Snapshots are immutable: the same object
   * as in `previous` means nothing changed there.
   */
  readonly registries?: readonly RegistrySnapshot[];
  /** meshNetworks and what else decides networks (DEFAULT_NETWORK_SETTINGS when absent: one network). */
  readonly networks?: NetworkSettings;
  /** The gateways of `networks` and `registries`, when the caller already computed them (networkGateways). */
  readonly networkGateways?: NetworkGateways;
  /** This control plane's cluster (--clusterID; istiod's default `Kubernetes`): the cluster of endpoints that name none. */
  readonly clusterId?: string;
  /** AMBIENT_ENABLE_DRY_RUN_AUTHORIZATION_POLICY: dry-run AuthorizationPolicies go to ztunnel (marked dryRun) instead of being left out. */
  readonly ztunnelDryRunPolicies?: boolean;
  /**
   * ISTIO_DUAL_STACK (istiod's default, false): a dual-stack proxy is given a service's addresses
   * of both families (one listener, the other family's address additional) and listeners on both
   * wildcards. Off, it gets the family of a service's first address only.
   */
  readonly dualStack?: boolean;
  /** PILOT_ENABLE_AMBIENT: istiod gives a dual-stack proxy both families of a service's addresses with ambient on too. */
  readonly ambient?: boolean;
}

/** What an incremental build reused (for logs and the incremental-vs-full benchmark). */
export interface RebuildSummary {
  readonly rebuilt: readonly string[];
  readonly reused: readonly string[];
}

/**
 * An immutable snapshot of everything one push needs, indexed up front so per-proxy generation
 * is lookups only. Each index is built by its own builder from the kinds it reads, so a push that
 * follows another reuses every index whose kinds did not change (the config store shares unchanged
 * kind maps between snapshots, so identity tells). Never mutated after publication; the cache it
 * shares with other pushes memoises pure functions of the snapshots, invalidated by what they read.
 */
/** The cluster-local hosts of a mesh config, built once per config. */
const clusterLocalByMesh = new WeakMap<MeshConfig, ClusterLocalHosts>();

export class PushContext {
  readonly version: string;
  readonly mesh: MeshConfig;
  /** This control plane's cluster id: ServiceEntry endpoints are in it, and so is a proxy that names none. */
  readonly clusterId: string;
  /** How AuthorizationPolicies convert for ztunnel (AMBIENT_ENABLE_DRY_RUN_AUTHORIZATION_POLICY). */
  readonly ztunnelPolicyOptions: ZtunnelPolicyOptions;
  /** ISTIO_DUAL_STACK: the dual-stack listeners istiod gates on it (virtualOutbound's `::`). */
  readonly dualStack: boolean;
  /** Whether a dual-stack proxy uses a service's addresses of both families (ISTIO_DUAL_STACK or ambient, as istiod's GetAllAddressesForProxy). */
  readonly dualStackAddresses: boolean;
  /** Config reads through here are recorded as dependencies of the cached value being built. */
  readonly config: ConfigSnapshot;
  /** The untracked snapshot (for index builders and change detection). */
  readonly snapshot: ConfigSnapshot;
  /** Every registry seen as one (the external ones first, then ServiceEntries). */
  readonly registry: RegistrySnapshot;
  /** The ServiceEntry/WorkloadEntry registry alone, and the external ones (reused by the next push). */
  private readonly serviceEntries: RegistrySnapshot;
  private readonly externalRegistries: readonly RegistrySnapshot[];
  /** The WorkloadEntries as the config cluster's Kubernetes Services select them (reused while none changed). */
  private readonly kubeWorkloadEntries: KubeWorkloadEntries;
  /** The external registries' Pods, which ServiceEntry workloadSelectors select too. */
  private readonly workloadInstances: WorkloadInstances | undefined;
  readonly cache: XdsCache;
  /** The cache epoch this snapshot was published under: builds from older snapshots are not kept. */
  readonly epoch: number;
  readonly rebuild: RebuildSummary;
  private readonly virtualServices: VirtualServiceIndex;
  private readonly destinationRules: DestinationRuleIndex;
  #servicesExportedEverywhere: boolean | undefined;
  /** Gateways and the VirtualServices bound to them (router proxies). */
  readonly gateways: TrackedGateways;
  /** Gateway API Gateways and routes as internal Gateways and VirtualServices. */
  readonly gatewayApi: GatewayApiConfig;
  /** PeerAuthentication, RequestAuthentication and AuthorizationPolicy by workload. */
  readonly security: TrackedSecurity;
  /** Telemetry objects by workload (root namespace, namespace, selected). */
  readonly telemetry: TrackedTelemetry;
  /** EnvoyFilters by namespace, compiled (patch values decoded), selected per proxy. */
  readonly envoyFilters: EnvoyFilterIndex;
  /** What proxy attributes config depends on in this snapshot (labels in cache keys or not). */
  readonly sensitivity: ViewSensitivity;
  /** meshNetworks, the system namespace's network, the cluster id. */
  readonly networkSettings: NetworkSettings;
  /** The network gateways (meshNetworks, gateway Services): split-horizon EDS reads them. */
  readonly networkGateways: NetworkGateways;
  /** Which network each endpoint is in. */
  readonly endpointNetworks: EndpointNetworks;
  /** The ambient index of this snapshot, once asked for (see ambient). */
  #ambient: AmbientIndex | undefined;
  /** The newest ambient index an earlier snapshot built: the next one is derived from it. */
  #ambientBase: AmbientIndex | undefined;
  /** Values derived after this snapshot was superseded (see derive). */
  private readonly superseded = new Map<string, unknown>();
  /** Each proxy's Sidecar scope in this snapshot (see sidecarScope). */
  private readonly scopeByProxy = new WeakMap<Proxy, SidecarScope>();
  /** Which Sidecar each proxy selects: shared with the next push while the Sidecars are the same objects. */
  private readonly sidecarSelections: WeakMap<Proxy, { readonly sidecar: Config<'Sidecar'> | undefined; readonly key: string }>;

  constructor(input: PushContextInput) {
    this.version = input.version;
    this.mesh = input.mesh;
    this.clusterId = input.clusterId ?? DEFAULT_AMBIENT_CLUSTER_ID;
    this.ztunnelPolicyOptions = { dryRunPolicies: input.ztunnelDryRunPolicies === true };
    this.dualStack = input.dualStack === true;
    this.dualStackAddresses = this.dualStack || input.ambient === true;
    this.snapshot = input.config;
    this.cache = input.cache ?? new XdsCache(input.cacheSize);
    this.epoch = this.cache.epoch;
    this.config = trackedSnapshot(input.config, this.cache);
    // Indexes hold the cache they record into: reuse only within one cache and mesh config.
    const prev = input.previous?.mesh === input.mesh && input.previous.cache === this.cache ? input.previous : undefined;
    const rebuilt: string[] = [];
    const reused: string[] = [];
    /** The previous index when none of `kinds` changed, else a new one. */
    const index = <T>(name: string, kinds: readonly KindName[], old: ((p: PushContext) => T) | undefined, build: () => T): T => {
      if (prev && old && kinds.every((k) => prev.snapshot.byKind(k) === input.config.byKind(k))) {
        reused.push(name);
        return old(prev);
      }
      rebuilt.push(name);
      return build();
    };
    const { domain, rootNamespace } = input.mesh;
    const unchanged = (kind: KindName): boolean => prev !== undefined && prev.snapshot.byKind(kind) === input.config.byKind(kind);
    // What changed is read off the snapshots, not the push request: the store may already hold
    // changes whose events are still being debounced, and an index must match its snapshot.
    const changedWorkloadEntries = prev && changedObjects(prev.snapshot, input.config, 'WorkloadEntry');
    const changedVirtualServices = prev && changedObjects(prev.snapshot, input.config, 'VirtualService');
    const external = input.registries ?? [];
    const pods = workloadInstancesOf(external);
    this.workloadInstances = pods;
    const seConfigUnchanged = unchanged('ServiceEntry') && unchanged('WorkloadEntry');
    // Pods matter only to ServiceEntries with a workloadSelector; without one the index is reused.
    if (prev && prev.workloadInstances !== pods && hasWorkloadSelector(input.config)) {
      rebuilt.push('serviceEntries');
      this.serviceEntries = seConfigUnchanged
        ? updateSelectedPods(prev.serviceEntries, input.config, pods)
        : buildServiceEntryRegistry(input.config, pods);
    } else {
      this.serviceEntries = index(
        'serviceEntries',
        ['ServiceEntry', 'WorkloadEntry'],
        (p) => p.serviceEntries,
        () =>
          changedWorkloadEntries && unchanged('ServiceEntry')
            ? updateWorkloadEntries(prev.serviceEntries, prev.snapshot, input.config, changedWorkloadEntries, pods)
            : buildServiceEntryRegistry(input.config, pods),
      );
    }
    const sameExternal =
      prev !== undefined &&
      prev.externalRegistries.length === external.length &&
      external.every((r, i) => prev.externalRegistries[i] === r);
    this.externalRegistries = sameExternal ? prev.externalRegistries : external;
    this.kubeWorkloadEntries =
      prev && unchanged('WorkloadEntry')
        ? prev.kubeWorkloadEntries
        : KubeWorkloadEntries.of(
            input.config,
            prev && changedWorkloadEntries ? { index: prev.kubeWorkloadEntries, changed: changedWorkloadEntries } : undefined,
          );
    if (sameExternal && prev.serviceEntries === this.serviceEntries && prev.kubeWorkloadEntries === this.kubeWorkloadEntries) {
      this.registry = prev.registry;
    } else {
      if (external.length > 0) rebuilt.push('registry');
      // Kubernetes Services of the config cluster select WorkloadEntries too (istiod's config cluster only).
      const joined = external.map((r) => (this.#configCluster(r) ? withWorkloadEntries(r, this.kubeWorkloadEntries) : r));
      this.registry = aggregateRegistry([...joined, this.serviceEntries]);
    }
    // GAMMA routes become VirtualServices; a change to them (rare, small) rebuilds the index.
    this.virtualServices = index(
      'virtualServices',
      ['VirtualService', ...GAMMA_KINDS],
      (p) => p.virtualServices,
      () =>
        changedVirtualServices && GAMMA_KINDS.every(unchanged)
          ? prev.virtualServices.withChanges(input.config, changedVirtualServices, domain)
          : VirtualServiceIndex.build(input.config, domain, gammaVirtualServices(input.config, domain)),
    );
    this.destinationRules = index(
      'destinationRules',
      ['DestinationRule'],
      (p) => p.destinationRules,
      () => new DestinationRuleIndex(input.config, domain, rootNamespace),
    );
    this.gatewayApi = index(
      'gatewayApi',
      GATEWAY_API_MODEL_KINDS,
      (p) => p.gatewayApi,
      () => gatewayApiConfig(input.config, domain),
    );
    const gatewayApiUnchanged = prev !== undefined && prev.gatewayApi === this.gatewayApi;
    this.gateways = index(
      'gateways',
      ['Gateway', 'VirtualService', ...GATEWAY_API_MODEL_KINDS],
      (p) => p.gateways,
      () =>
        new TrackedGateways(
          changedVirtualServices && unchanged('Gateway') && gatewayApiUnchanged
            ? prev.gateways.index.withVirtualServiceChanges(input.config, changedVirtualServices)
            : GatewayIndex.build(input.config, this.gatewayApi),
          this.cache,
        ),
    );
    this.security = index(
      'security',
      ['PeerAuthentication', 'RequestAuthentication', 'AuthorizationPolicy'],
      (p) => p.security,
      () => new TrackedSecurity(new SecurityPolicyIndex(input.config, rootNamespace), rootNamespace, this.cache),
    );
    this.envoyFilters = index(
      'envoyFilters',
      ['EnvoyFilter'],
      (p) => p.envoyFilters,
      () => EnvoyFilterIndex.build(input.config, rootNamespace, envoyFilterRegistries().json, prev?.envoyFilters),
    );
    this.telemetry = index(
      'telemetry',
      ['Telemetry'],
      (p) => p.telemetry,
      () => new TrackedTelemetry(new TelemetryIndex(input.config, rootNamespace), rootNamespace, this.cache),
    );
    this.sensitivity = index(
      'sensitivity',
      ['VirtualService', 'DestinationRule'],
      (p) => p.sensitivity,
      () =>
        viewSensitivity(
          input.config,
          prev
            ? {
                previous: prev.sensitivity,
                changed: [
                  ...(changedVirtualServices ?? []),
                  ...(unchanged('DestinationRule') ? [] : changedObjects(prev.snapshot, input.config, 'DestinationRule')),
                ],
                unchangedDestinationRules: unchanged('DestinationRule'),
              }
            : undefined,
        ),
    );
    this.sidecarSelections = prev && unchanged('Sidecar') ? prev.sidecarSelections : new WeakMap();
    this.networkSettings = input.networks ?? DEFAULT_NETWORK_SETTINGS;
    const sameNetworks = prev !== undefined && prev.networkSettings === this.networkSettings;
    const clusterNetworks = remoteClusterNetworks(this.networkSettings, this.externalRegistries);
    this.endpointNetworks =
      sameNetworks && prev.endpointNetworks.sameClusterNetworks(clusterNetworks)
        ? prev.endpointNetworks
        : new EndpointNetworks(this.networkSettings, clusterNetworks);
    this.networkGateways =
      input.networkGateways ??
      (sameNetworks && sameExternal && unchanged('KubernetesGateway')
        ? prev.networkGateways
        : networkGateways(this.networkSettings, this.externalRegistries, input.config.list('KubernetesGateway')));
    this.rebuild = { rebuilt, reused };
    // Only the index itself is kept, never the snapshot that built it (no chain of old snapshots).
    this.#ambientBase = input.previous ? (input.previous.#ambient ?? input.previous.#ambientBase) : undefined;
  }

  /**
   * The ambient index (ztunnel's workloads and services) of this snapshot: built on first use
   * (nothing is spent while no ztunnel is connected), from the last one built when there is one.
   */
  ambient(clusterId: string): AmbientIndex {
    if (this.#ambient?.inputs.clusterId === clusterId) return this.#ambient;
    const kube = this.externalRegistries.find((r) => r.ambient !== undefined)?.ambient ?? EMPTY_AMBIENT_STATE;
    const inputs = {
      config: this.snapshot,
      kube,
      domain: this.mesh.domain,
      trustDomain: this.mesh.trustDomain,
      rootNamespace: this.mesh.rootNamespace,
      clusterId,
      network: '',
      ...(this.mesh.serviceEntryVisibility ? { serviceEntryVisibility: this.mesh.serviceEntryVisibility } : {}),
    };
    this.#ambient = AmbientIndex.build(inputs, (ns, labels) => workloadPolicyNames(this, ns, labels), this.#ambient ?? this.#ambientBase);
    this.#ambientBase = undefined;
    return this.#ambient;
  }

  /**
   * The ambient index for what does not depend on the cluster id (waypoint binding): the one built
   * for ztunnel when there is one, so a waypoint never makes it build a second.
   */
  ambientBinding(): AmbientIndex {
    return this.#ambient ?? this.ambient(DEFAULT_AMBIENT_CLUSTER_ID);
  }

  /** The service `hostname` as seen from `namespace` (exportTo applied; own namespace first). */
  service(hostname: string, namespace: string): Service | undefined {
    this.cache.record(hostDep('ServiceEntry', hostname));
    const svc = this.registry.serviceByHost(hostname, namespace);
    return svc && isVisible(svc.exportTo, svc.namespace, namespace) ? svc : undefined;
  }

  /** The hosts of the config cluster's Kubernetes Services that select a WorkloadEntry with these labels in `namespace`. */
  kubeServicesSelecting(namespace: string, labels: Readonly<Record<string, string>>): string[] {
    return this.externalRegistries.filter((r) => this.#configCluster(r)).flatMap((r) => kubeServicesSelecting(r, namespace, labels));
  }

  /** Whether a registry reads the config cluster (the one whose WorkloadEntries its Services select, as in istiod). */
  #configCluster(r: RegistrySnapshot): boolean {
    return r.clusterId === undefined || r.clusterId === this.clusterId;
  }

  /** Every service in the registry (a dependency on the whole service set). */
  services(): readonly Service[] {
    this.cache.record(anyOf('ServiceEntry'));
    return this.registry.services;
  }

  /** Endpoints of one service port (registry order). */
  endpoints(hostname: string, servicePort: number, namespace?: string): readonly Endpoint[] {
    this.cache.record(endpointsDep(hostname));
    return this.registry.endpoints(hostname, servicePort, namespace);
  }

  /** The Gateways that apply to a router proxy (labels, or for Gateway API its namespace and services). */
  gatewaysFor(proxy: Proxy): readonly Config<'Gateway'>[] {
    const serviceHosts = new Set(this.serviceInstances(proxy).map((i) => i.service.hostname));
    return this.gateways.forProxy(proxy.labels, { namespace: proxy.namespace, serviceHosts });
  }

  virtualService(hostname: string, namespace: string): Config<'VirtualService'> | undefined {
    this.cache.record(hostDep('VirtualService', hostname));
    return this.virtualServices.forHost(hostname, namespace);
  }

  destinationRule(service: Service, proxyNamespace: string): Config<'DestinationRule'> | undefined {
    this.cache.record(hostDep('DestinationRule', service.hostname));
    return this.destinationRules.forHost(service.hostname, proxyNamespace, service.namespace);
  }

  /**
   * Cache-key part naming the DestinationRule a proxy in `proxyNamespace` applies to `service` (''
   * for none): a service's outbound clusters keyed by it rather than by the proxy's namespace are
   * shared by every namespace that resolves the same rule, as istiod keys its cluster cache by the
   * rule. Not recorded as a dependency: the value built under the key reads the rule itself, and
   * whatever reused that value goes when it goes.
   */
  destinationRuleKey(service: Service, proxyNamespace: string): string {
    const dr = this.destinationRules.forHost(service.hostname, proxyNamespace, service.namespace);
    return dr ? `${dr.meta.namespace}/${dr.meta.name}` : '';
  }

  subset(service: Service, proxyNamespace: string, name: string): Subset | undefined {
    return DestinationRuleIndex.subset(this.destinationRule(service, proxyNamespace), name);
  }
  /** Subset names of the DestinationRules (any namespace) whose host overlaps `host`: see DestinationRuleIndex.subsetNamesOverlapping. */
  subsetNamesOverlapping(host: string): ReadonlySet<string> {
    return this.destinationRules.subsetNamesOverlapping(host);
  }

  /** The Sidecar scope of a proxy: shared by every proxy of the same namespace and Sidecar. */
  sidecarScope(proxy: Proxy): SidecarScope {
    // Push planning and every generator ask again for the same proxy: outside a cached build (where
    // the read must be recorded as a dependency) the answer of this snapshot is remembered.
    const building = this.cache.isBuilding();
    const known = building ? undefined : this.scopeByProxy.get(proxy);
    if (known) return known;
    const { sidecar, key } = this.sidecarSelection(proxy, building);
    const scope = this.derive(key, () => {
      this.cache.record(anyOf('Sidecar'));
      return trackedScope(buildSidecarScope(this.services(), this.mesh, sidecar, proxy.namespace), this.cache);
    });
    this.scopeByProxy.set(proxy, scope);
    return scope;
  }

  /**
   * The key of a proxy's Sidecar scope (namespace and selected Sidecar): proxies with the same key
   * share one scope, so push planning judges a scope once per key, not once per proxy.
   */
  sidecarScopeKey(proxy: Proxy): string {
    return this.sidecarSelection(proxy, this.cache.isBuilding()).key;
  }

  private sidecarSelection(proxy: Proxy, building: boolean): { readonly sidecar: Config<'Sidecar'> | undefined; readonly key: string } {
    let selected = this.sidecarSelections.get(proxy);
    if (!selected) {
      const sidecar = selectSidecar(this.config, this.mesh.rootNamespace, proxy.namespace, proxy.labels);
      selected = { sidecar, key: `scope|${proxy.namespace}|${sidecar ? `${sidecar.meta.namespace}/${sidecar.meta.name}` : ''}` };
      this.sidecarSelections.set(proxy, selected);
    } else if (building) {
      this.cache.record(anyOf('Sidecar'));
    }
    return selected;
  }

  /** The service ports the proxy's workload serves (registry endpoints on its IPs). */
  serviceInstances(proxy: Proxy): readonly ServiceInstance[] {
    return this.derive(`instances|${proxy.ipAddresses.join(',')}`, () => {
      for (const ip of proxy.ipAddresses) this.cache.record(instancesDep(ip));
      return proxyServiceInstances(this.registry, proxy);
    });
  }

  /** Cache-key part for route-level config (RDS, outbound LDS): namespace, plus labels when sourceLabels matches exist. */
  routeViewKey(proxy: Proxy): string {
    return viewKey(proxy, this.sensitivity.sourceLabels);
  }

  /**
   * Whether a service's endpoints reach only proxies of their own cluster (istiod's IsClusterLocal):
   * the mesh config's serviceSettings, over istiod's default cluster-local hosts.
   */
  isClusterLocal(service: Service): boolean {
    let hosts = clusterLocalByMesh.get(this.mesh);
    if (!hosts) {
      hosts = new ClusterLocalHosts(this.mesh.serviceSettings ?? [], this.mesh.domain, this.mesh.discoveryAddress);
      clusterLocalByMesh.set(this.mesh, hosts);
    }
    return hosts.isClusterLocal(service.hostname);
  }

  /** The cluster a proxy is in: its node metadata CLUSTER_ID, else this control plane's. */
  proxyCluster(proxy: Proxy): string {
    return proxy.metadata.clusterId ?? this.clusterId;
  }

  /**
   * Cache-key part for config that carries service addresses (listeners, route domains, the name
   * table): the proxy's cluster when some service has addresses of its own there (a Service merged
   * from several clusters whose ClusterIPs differ), else '' — every other proxy sees the same ones.
   */
  clusterAddressKey(proxy: Proxy): string {
    const own = this.registry.clustersWithOwnAddresses;
    if (own === undefined) return '';
    const cluster = this.proxyCluster(proxy);
    return own.has(cluster) ? cluster : '';
  }

  /**
   * The part of the cache key of a sidecar's outbound cluster list that its namespace decides: '*'
   * where every namespace sees the same list (no Sidecar applies, every service is exported
   * everywhere, and no DestinationRule lookup depends on the namespace), else its scope and
   * namespace. A mesh without such scoping then builds and diffs one list, not one per namespace.
   */
  outboundViewKey(proxy: Proxy, scope: SidecarScope): string {
    const shared = this.#seesEveryService(scope) && !this.destinationRules.dependsOnNamespace(proxy.namespace);
    return shared ? '*' : `${scope.key}|${proxy.namespace}`;
  }

  /**
   * A key of the services a proxy's scope admits: '*' where every namespace's scope admits every
   * service, else its scope's selection key. From the Sidecar selection alone: push planning asks
   * for every proxy and need not build their scopes.
   */
  scopeServicesKey(proxy: Proxy): string {
    const { sidecar, key } = this.sidecarSelection(proxy, this.cache.isBuilding());
    return sidecar === undefined && this.#allServicesExported() ? '*' : key;
  }

  /** No Sidecar applies and every service is exported everywhere: the scope admits every service, whatever its namespace. */
  #seesEveryService(scope: SidecarScope): boolean {
    return scope.sidecar === undefined && this.#allServicesExported();
  }

  #allServicesExported(): boolean {
    return (this.#servicesExportedEverywhere ??= this.registry.services.every((s) => s.exportTo.length === 0 || s.exportTo.includes('*')));
  }

  /** Cache-key part for clusters and endpoints: namespace, plus labels when failoverPriority is used. */
  clusterViewKey(proxy: Proxy): string {
    return viewKey(proxy, this.sensitivity.failoverPriority);
  }

  /**
   * clusterViewKey without the namespace, for one service's clusters keyed by the DestinationRule
   * that applies (destinationRuleKey): labels when failoverPriority is used, else ''.
   */
  serviceClusterViewKey(proxy: Proxy): string {
    return this.sensitivity.failoverPriority ? proxyLabelsKey(proxy) : '';
  }

  /**
   * derive() for a value built from a Service object obtained outside the build (a scope's service
   * list): the build depends on that service's ServiceEntry (ports, addresses, resolution) too.
   */
  deriveForService<T>(service: Service, key: string, build: () => T): T {
    return this.derive(key, () => {
      this.cache.record(hostDep('ServiceEntry', service.hostname));
      return build();
    });
  }

  /**
   * Memoises a pure function of the snapshot under `key`, across pushes: reused until a change
   * touches something it read (per-view resource lists, scopes, encoded resources). A snapshot
   * that a newer one has superseded (a push still in flight, push scoping against the old
   * snapshot) memoises for itself only: its values may be stale for the shared cache; it reads
   * the shared values built from it or older snapshots that no change has invalidated.
   */
  derive<T>(key: string, build: () => T): T {
    if (this.cache.epoch === this.epoch) return this.cache.getOrBuild(key, build, this.epoch);
    if (this.superseded.has(key)) return this.superseded.get(key) as T;
    const shared = this.cache.peekAsOf(key, this.epoch);
    const value = shared ? (shared.value as T) : build();
    this.superseded.set(key, value);
    return value;
  }
}

/**
 * The objects of `kind` that differ between two snapshots (added, changed or removed), in id
 * order. The store keeps unchanged objects identical across snapshots, so this is one identity
 * check per candidate: the ids the store's copies touched, or every object when it cannot tell.
 */
export function changedObjects(before: ConfigSnapshot, after: ConfigSnapshot, kind: KindName): ConfigKey[] {
  const a = before.byKind(kind);
  const b = after.byKind(kind);
  if (a === b) return [];
  // The store knows which ids its copies touched: confirm just those (else compare every object).
  const candidates = changedIdsBetween(a, b) ?? new Set([...a.keys(), ...b.keys()]);
  const out: ConfigKey[] = [];
  for (const id of [...candidates].sort(compareIds)) {
    const c = b.get(id) ?? a.get(id);
    if (c && a.get(id) !== b.get(id)) out.push({ kind, namespace: c.meta.namespace, name: c.meta.name });
  }
  return out;
}
