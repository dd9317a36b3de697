/**
 * The MeshConfig and ProxyConfig that injection renders with, as full Istio protos (the
 * templates read `.MeshConfig.*` and `.ProxyConfig.*`, and write PROXY_CONFIG as proto JSON).
 * Defaults are istiod's (pkg/config/mesh DefaultMeshConfig / DefaultProxyConfig): the sidecar's
 * discoveryAddress is `istiod.istio-system.svc:15012`, which is where meshpilot serves.
 */
import { parseBoundedYaml } from '../config/index.js';
import { clone, create, equals, fromJson, mergeFromJson, type JsonValue } from '@bufbuild/protobuf';
import { DurationSchema } from '@bufbuild/protobuf/wkt';
import {
  MeshConfigSchema,
  MeshConfig_InboundTrafficPolicy_Mode,
  MeshConfig_OutboundTrafficPolicy_Mode,
  type MeshConfig,
} from '../gen/mesh/v1alpha1/config_pb.js';
import { AuthenticationPolicy, ProxyConfigSchema, type ProxyConfig } from '../gen/mesh/v1alpha1/proxy_pb.js';
import { MeshError, errorMessage } from '../util/errors.js';
import { DEFAULT_SERVICE_CLUSTER, DEFAULT_TRUST_DOMAIN, ISTIO_SYSTEM_NAMESPACE } from '../config/constants.js';

const seconds = (s: number) => create(DurationSchema, { seconds: BigInt(s) });

/** istiod's mesh.DefaultProxyConfig(). */
export function defaultProxyConfig(): ProxyConfig {
  return create(ProxyConfigSchema, {
    configPath: './etc/istio/proxy',
    clusterName: { case: 'serviceCluster', value: DEFAULT_SERVICE_CLUSTER },
    drainDuration: seconds(45),
    terminationDrainDuration: seconds(5),
    proxyAdminPort: 15000,
    controlPlaneAuthPolicy: AuthenticationPolicy.MUTUAL_TLS,
    discoveryAddress: 'istiod.istio-system.svc:15012',
    binaryPath: '/usr/local/bin/envoy',
    statNameLength: 189,
    statusPort: 15020,
  });
}

/** The parts of istiod's mesh.DefaultMeshConfig() that injection can see. */
export function defaultMeshConfig(): MeshConfig {
  return create(MeshConfigSchema, {
    enableTracing: true,
    ingressService: 'istio-ingressgateway',
    ingressClass: 'istio',
    trustDomain: DEFAULT_TRUST_DOMAIN,
    enableAutoMtls: true,
    outboundTrafficPolicy: { mode: MeshConfig_OutboundTrafficPolicy_Mode.ALLOW_ANY },
    inboundTrafficPolicy: { mode: MeshConfig_InboundTrafficPolicy_Mode.PASSTHROUGH },
    defaultConfig: defaultProxyConfig(),
    rootNamespace: ISTIO_SYSTEM_NAMESPACE,
    proxyListenPort: 15001,
    proxyInboundListenPort: 15006,
    connectTimeout: seconds(10),
    defaultServiceExportTo: ['*'],
    defaultVirtualServiceExportTo: ['*'],
    defaultDestinationRuleExportTo: ['*'],
    dnsRefreshRate: seconds(60),
    enablePrometheusMerge: true,
  });
}

function yamlObject(text: string, origin: string): Record<string, unknown> {
  const doc = parseBoundedYaml(text, origin) ?? {};
  if (typeof doc !== 'object' || Array.isArray(doc)) throw new MeshError('INVALID_ARGUMENT', `${origin}: must be a mapping`);
  return doc as Record<string, unknown>;
}

/**
 * istiod's mesh.MergeProxyConfig: the YAML's fields over `base`, proxyMetadata merged key by key
 * (the YAML's entries win). Used for mesh defaultConfig and the pod's `proxy.istio.io/config`.
 */
export function mergeProxyConfig(base: ProxyConfig, yamlText: string, origin: string): ProxyConfig {
  const doc = yamlObject(yamlText, origin);
  const merged = clone(ProxyConfigSchema, base);
  const origMetadata = { ...base.proxyMetadata };
  try {
    mergeFromJson(ProxyConfigSchema, merged, doc as JsonValue);
  } catch (err) {
    throw new MeshError('INVALID_ARGUMENT', `${origin}: not a ProxyConfig: ${errorMessage(err)}`);
  }
  merged.proxyMetadata = { ...origMetadata, ...merged.proxyMetadata };
  return merged;
}

/**
 * istiod's mesh.ApplyMeshConfig over the defaults: every field overrides, except `defaultConfig`,
 * which is merged into the default ProxyConfig. `origin` names the source in errors.
 */
export function meshConfigFromYaml(text: string, origin: string): MeshConfig {
  const doc = yamlObject(text, origin);
  const { defaultConfig, ...rest } = doc;
  let mesh: MeshConfig;
  try {
    mesh = fromJson(MeshConfigSchema, rest as JsonValue);
  } catch (err) {
    throw new MeshError('INVALID_ARGUMENT', `${origin}: not a MeshConfig: ${errorMessage(err)}`);
  }
  const defaults = defaultMeshConfig();
  // Proto3 JSON leaves unset scalars at zero: take istiod's defaults where the document is silent.
  for (const [key, value] of Object.entries(defaults)) {
    if (key === '$typeName' || key === 'defaultConfig') continue;
    if (!Object.hasOwn(rest, key)) (mesh as unknown as Record<string, unknown>)[key] = value;
  }
  mesh.defaultConfig =
    defaultConfig === undefined || defaultConfig === null
      ? defaultProxyConfig()
      : mergeProxyConfig(defaultProxyConfig(), JSON.stringify(defaultConfig), `${origin} defaultConfig`);
  return mesh;
}

/**
 * istiod's cleanProxyConfig: fields equal to the defaults are dropped before PROXY_CONFIG is
 * written, so that the env var carries only what differs.
 */
export function cleanProxyConfig(pc: ProxyConfig): ProxyConfig {
  const out = clone(ProxyConfigSchema, pc);
  const d = defaultProxyConfig();
  if (out.configPath === d.configPath) out.configPath = '';
  if (out.binaryPath === d.binaryPath) out.binaryPath = '';
  if (out.controlPlaneAuthPolicy === d.controlPlaneAuthPolicy) out.controlPlaneAuthPolicy = AuthenticationPolicy.NONE;
  if (out.clusterName.case === 'serviceCluster' && out.clusterName.value === DEFAULT_SERVICE_CLUSTER) out.clusterName = { case: undefined };
  const sameDuration = (a: typeof out.drainDuration, b: typeof out.drainDuration) =>
    a === undefined ? b === undefined : b !== undefined && equals(DurationSchema, a, b);
  if (sameDuration(out.drainDuration, d.drainDuration)) delete out.drainDuration;
  if (sameDuration(out.terminationDrainDuration, d.terminationDrainDuration)) delete out.terminationDrainDuration;
  if (out.discoveryAddress === d.discoveryAddress) out.discoveryAddress = '';
  if (out.proxyAdminPort === d.proxyAdminPort) out.proxyAdminPort = 0;
  if (out.statNameLength === d.statNameLength) out.statNameLength = 0;
  if (out.statusPort === d.statusPort) out.statusPort = 0;
  // Defaults of envoyMetricsService, envoyAccessLogService, tracing and concurrency are unset.
  return out;
}
