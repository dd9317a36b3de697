import type { Config } from '../config/config.js';
import type { ConfigSnapshot } from '../config/store-types.js';
import type { Subset } from '../gen/networking/v1alpha3/destination_rule_pb.js';
import type { RegistrySnapshot, Service } from '../registry/model.js';
import { buildServiceEntryRegistry } from '../registry/service-entry-registry.js';
import { XdsCache } from '../xds/xds-cache.js';
import type { XdsResource } from '../xds/resource.js';
import { isVisible } from './hosts.js';
import { DestinationRuleIndex } from './indexes/destination-rule-index.js';
import { VirtualServiceIndex } from './indexes/virtual-service-index.js';
import type { MeshConfig } from './mesh-config.js';

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

  constructor(input: PushContextInput) {
    this.version = input.version;
    this.mesh = input.mesh;
    this.config = input.config;
    this.registry = buildServiceEntryRegistry(input.config);
    this.virtualServices = new VirtualServiceIndex(input.config, input.mesh.domain);
    this.destinationRules = new DestinationRuleIndex(input.config, input.mesh.domain, input.mesh.rootNamespace);
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
}
