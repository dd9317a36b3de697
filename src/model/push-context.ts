import type { Config } from '../config/config.js';
import type { ConfigSnapshot } from '../config/store-types.js';
import type { Subset } from '../gen/networking/v1alpha3/destination_rule_pb.js';
import type { RegistrySnapshot, Service } from '../registry/model.js';
import { buildServiceEntryRegistry } from '../registry/service-entry-registry.js';
import { XdsCache } from '../xds/xds-cache.js';
import type { XdsResource } from '../xds/resource.js';
import { isVisible } from './hosts.js';
import { DestinationRuleIndex } from './indexes/destination-rule-index.js';
import { GatewayIndex } from './indexes/gateway-index.js';
import { SecurityPolicyIndex } from './indexes/security-index.js';
import { VirtualServiceIndex } from './indexes/virtual-service-index.js';
import type { MeshConfig } from './mesh-config.js';
import type { Proxy } from './proxy.js';
import { proxyServiceInstances, type ServiceInstance } from './service-instances.js';
import { buildSidecarScope, selectSidecar, type SidecarScope } from './sidecar-scope.js';
import { viewKey, viewSensitivity, type ViewSensitivity } from './view-keys.js';

export interface PushContextInput {
  readonly version: string;
  readonly mesh: MeshConfig;
  readonly config: ConfigSnapshot;
  readonly cacheSize?: number;
}

/**
 * An immutable snapshot of everything one push needs, indexed up front so per-proxy generation
 * is lookups only. Built whole per full push (each index by its own builder, so an incremental
 * rebuild can later reuse untouched ones); never mutated after publication — the resource cache is
 * the one exception, and it only memoises pure functions of this snapshot.
 */
export class PushContext {
  readonly version: string;
  readonly mesh: MeshConfig;
  readonly config: ConfigSnapshot;
  readonly registry: RegistrySnapshot;
  readonly cache: XdsCache<XdsResource | undefined>;
  private readonly virtualServices: VirtualServiceIndex;
  private readonly destinationRules: DestinationRuleIndex;
  /** Gateways and the VirtualServices bound to them (router proxies). */
  readonly gateways: GatewayIndex;
  /** PeerAuthentication, RequestAuthentication and AuthorizationPolicy by workload. */
  readonly security: SecurityPolicyIndex;
  /** Memoised per-push derivations (sidecar scopes, service instances); pure functions of this snapshot. */
  private readonly memo = new Map<string, unknown>();

  constructor(input: PushContextInput) {
    this.version = input.version;
    this.mesh = input.mesh;
    this.config = input.config;
    this.registry = buildServiceEntryRegistry(input.config);
    this.virtualServices = new VirtualServiceIndex(input.config, input.mesh.domain);
    this.destinationRules = new DestinationRuleIndex(input.config, input.mesh.domain, input.mesh.rootNamespace);
    this.gateways = new GatewayIndex(input.config, input.mesh.domain);
    this.security = new SecurityPolicyIndex(input.config, input.mesh.rootNamespace);
    this.cache = new XdsCache(input.cacheSize);
  }

  /** The service `hostname` as seen from `namespace` (exportTo applied; own namespace first). */
  service(hostname: string, namespace: string): Service | undefined {
    const svc = this.registry.serviceByHost(hostname, namespace);
    return svc && isVisible(svc.exportTo, svc.namespace, namespace) ? svc : undefined;
  }

  virtualService(hostname: string, namespace: string): Config<'VirtualService'> | undefined {
    return this.virtualServices.forHost(hostname, namespace);
  }

  destinationRule(service: Service, proxyNamespace: string): Config<'DestinationRule'> | undefined {
    return this.destinationRules.forHost(service.hostname, proxyNamespace, service.namespace);
  }

  subset(service: Service, proxyNamespace: string, name: string): Subset | undefined {
    return DestinationRuleIndex.subset(this.destinationRule(service, proxyNamespace), name);
  }

  /** The Sidecar scope of a proxy: shared by every proxy of the same namespace and Sidecar. */
  sidecarScope(proxy: Proxy): SidecarScope {
    const sidecar = selectSidecar(this.config, this.mesh.rootNamespace, proxy.namespace, proxy.labels);
    const key = `scope|${proxy.namespace}|${sidecar ? `${sidecar.meta.namespace}/${sidecar.meta.name}` : ''}`;
    return this.derive(key, () => buildSidecarScope(this.registry, this.mesh, sidecar, proxy.namespace));
  }

  /** The service ports the proxy's workload serves (registry endpoints on its IPs). */
  serviceInstances(proxy: Proxy): readonly ServiceInstance[] {
    return this.derive(`instances|${proxy.ipAddresses.join(',')}`, () => proxyServiceInstances(this.registry, proxy));
  }

  /** What proxy attributes config depends on in this snapshot (computed once). */
  get sensitivity(): ViewSensitivity {
    return this.derive('view-sensitivity', () => viewSensitivity(this.config));
  }

  /** Cache-key part for route-level config (RDS, outbound LDS): namespace, plus labels when sourceLabels matches exist. */
  routeViewKey(proxy: Proxy): string {
    return viewKey(proxy, this.sensitivity.sourceLabels);
  }

  /** Cache-key part for clusters and endpoints: namespace, plus labels when failoverPriority is used. */
  clusterViewKey(proxy: Proxy): string {
    return viewKey(proxy, this.sensitivity.failoverPriority);
  }

  /** Memoises a pure function of this snapshot under `key` (per-view resource lists, scopes). */
  derive<T>(key: string, build: () => T): T {
    if (this.memo.has(key)) return this.memo.get(key) as T;
    const v = build();
    this.memo.set(key, v);
    return v;
  }
}
