import { defaultMeshTelemetry, type MeshTelemetry } from './mesh-telemetry.js';
import { DEFAULT_DOMAIN_SUFFIX, DEFAULT_TRUST_DOMAIN, ISTIO_SYSTEM_NAMESPACE } from '../constants.js';

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
