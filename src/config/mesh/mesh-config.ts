import { defaultMeshTelemetry, type MeshTelemetry } from './mesh-telemetry.js';
import { DEFAULT_DOMAIN_SUFFIX, DEFAULT_TRUST_DOMAIN, ISTIO_SYSTEM_NAMESPACE } from '../constants.js';
import type { ServiceSetting } from './cluster-local.js';
import type { ServiceEntryVisibility } from './service-entry-visibility.js';

/** The subset of Istio's MeshConfig the control plane uses so far, with istiod's defaults. */
export interface MeshConfig {
  readonly trustDomain: string;
  /** Namespace whose DestinationRules/Sidecars apply mesh-wide (istiod: istio-system). */
  readonly rootNamespace: string;
  /** DNS suffix of Kubernetes-style hosts (`--domain`, default cluster.local). */
  readonly domain: string;
  /** Cluster connect timeout (MeshConfig.connectTimeout, default 10s). */
  readonly connectTimeoutMs: number;
  readonly outboundTrafficPolicy: 'ALLOW_ANY' | 'REGISTRY_ONLY';
  /** Extension providers, default providers and the legacy access log / tracing settings. */
  readonly telemetry: MeshTelemetry;
  /** MeshConfig.enableAutoMtls (default true): clients send mTLS to endpoints with a sidecar unless a DestinationRule says otherwise. */
  readonly enableAutoMtls?: boolean;
  /** MeshConfig.serviceSettings: hosts whose endpoints stay in the proxy's cluster (cluster-local.ts). */
  readonly serviceSettings?: readonly ServiceSetting[];
  /**
   * MeshConfig.defaultConfig.discoveryAddress (istiod's default `istiod.istio-system.svc:15012`): its
   * host is cluster-local by default, as in istiod.
   */
  readonly discoveryAddress?: string;
  /** MeshConfig.serviceEntryVisibility (service-entry-visibility.ts); absent: every ServiceEntry is public. */
  readonly serviceEntryVisibility?: ServiceEntryVisibility;
}

export function defaultMeshConfig(overrides: Partial<MeshConfig> = {}): MeshConfig {
  return {
    trustDomain: DEFAULT_TRUST_DOMAIN,
    rootNamespace: ISTIO_SYSTEM_NAMESPACE,
    domain: DEFAULT_DOMAIN_SUFFIX,
    connectTimeoutMs: 10_000,
    outboundTrafficPolicy: 'ALLOW_ANY',
    telemetry: defaultMeshTelemetry(),
    ...overrides,
  };
}
