import { create, fromBinary, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import { ConfigStore } from '../../src/config/store.js';
import { FileSource } from '../../src/config/sources/file-source.js';
import { ClusterSchema, type Cluster } from '../../src/gen/envoy/config/cluster/v3/cluster_pb.js';
import { NodeSchema } from '../../src/gen/envoy/config/core/v3/base_pb.js';
import { ClusterLoadAssignmentSchema, type ClusterLoadAssignment } from '../../src/gen/envoy/config/endpoint/v3/endpoint_pb.js';
import { ListenerSchema, type Listener } from '../../src/gen/envoy/config/listener/v3/listener_pb.js';
import { RouteConfigurationSchema, type RouteConfiguration } from '../../src/gen/envoy/config/route/v3/route_pb.js';
import { DownstreamTlsContextSchema } from '../../src/gen/envoy/extensions/transport_sockets/tls/v3/tls_pb.js';
import { SecretSchema, type Secret } from '../../src/gen/envoy/extensions/transport_sockets/tls/v3/secret_pb.js';
import { HttpConnectionManagerSchema } from '../../src/gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager_pb.js';
import type { JsonObject, MessageInitShape } from '@bufbuild/protobuf';
import { defaultMeshConfig, type MeshConfig } from '../../src/config/mesh/mesh-config.js';
import { parseProxy, type Proxy } from '../../src/model/proxy.js';
import { PushContext } from '../../src/model/push-context.js';
import { pushRequest } from '../../src/model/push-request.js';
import { silentLogger } from '../../src/util/log.js';
import type { GeneratorRegistry } from '../../src/xds/generator.js';
import type { XdsResource } from '../../src/xds/resource.js';
import { TypeUrl } from '../../src/xds/type-urls.js';

/** Loads a config directory through the real file source and validation, once. */
export async function loadScenario(
  dir: string,
  mesh: MeshConfig = defaultMeshConfig(),
): Promise<{ push: PushContext; store: ConfigStore }> {
  const store = new ConfigStore({ logger: silentLogger });
  const source = new FileSource({ dir, logger: silentLogger });
  await source.start(store);
  await source.stop();
  const errors = store.errors();
  if (errors.size > 0) throw new Error(`scenario ${dir} has invalid config: ${JSON.stringify([...errors.values()].flat(), undefined, 1)}`);
  return { push: new PushContext({ version: 'scenario', mesh, config: store.snapshot() }), store };
}

export interface NodeSpec {
  readonly id: string;
  readonly labels?: Record<string, string>;
  readonly metadata?: JsonObject;
  readonly locality?: { region?: string; zone?: string };
  /** What the proxy binary declares (Envoy's user agent and Node.extensions); absent for istio-proxy, as captured. */
  readonly declares?: Pick<MessageInitShape<typeof NodeSchema>, 'userAgentName' | 'userAgentVersionType' | 'extensions'>;
}

export function proxyFor(n: NodeSpec): Proxy {
  const node = create(NodeSchema, {
    id: n.id,
    metadata: { ...(n.labels ? { LABELS: n.labels } : {}), ...(n.metadata ?? {}) },
    ...(n.locality ? { locality: { region: n.locality.region ?? '', zone: n.locality.zone ?? '' } } : {}),
    ...n.declares,
  });
  const p = parseProxy(node);
  if (!p.ok) throw p.errors[0];
  return p.value;
}

/** Everything one proxy would receive, decoded: what the simulator and golden files read. */
export interface GeneratedConfig {
  readonly listeners: Listener[];
  readonly routes: RouteConfiguration[];
  readonly clusters: Cluster[];
  readonly endpoints: ClusterLoadAssignment[];
  /** SDS secrets the listeners refer to that the control plane serves (gateway credentials). */
  readonly secrets: Secret[];
  /** The encoded resources as sent, per type URL (for PGV and size checks). */
  readonly resources: ReadonlyMap<string, readonly XdsResource[]>;
}

function decode<D extends DescMessage>(schema: D, rs: readonly XdsResource[]): MessageShape<D>[] {
  return rs.map((r) => fromBinary(schema, r.value));
}

/** Names of the route configurations the listeners' HCMs (RDS) refer to. */
export function rdsNames(listeners: readonly Listener[]): Set<string> {
  const names = new Set<string>();
  for (const l of listeners) {
    for (const fc of [...l.filterChains, ...(l.defaultFilterChain ? [l.defaultFilterChain] : [])]) {
      for (const f of fc.filters) {
        if (f.configType.case !== 'typedConfig') continue;
        const hcm = anyUnpack(f.configType.value, HttpConnectionManagerSchema);
        if (hcm?.routeSpecifier.case === 'rds') names.add(hcm.routeSpecifier.value.routeConfigName);
      }
    }
  }
  return names;
}

/** Names of the SDS secrets the listeners' downstream TLS contexts refer to. */
function sdsNames(listeners: readonly Listener[]): Set<string> {
  const names = new Set<string>();
  for (const l of listeners) {
    for (const fc of [...l.filterChains, ...(l.defaultFilterChain ? [l.defaultFilterChain] : [])]) {
      const ts = fc.transportSocket;
      if (ts?.configType.case !== 'typedConfig') continue;
      const tls = anyUnpack(ts.configType.value, DownstreamTlsContextSchema);
      const common = tls?.commonTlsContext;
      if (!common) continue;
      for (const c of common.tlsCertificateSdsSecretConfigs) names.add(c.name);
      const v = common.validationContextType;
      if (v.case === 'validationContextSdsSecretConfig') names.add(v.value.name);
      if (v.case === 'combinedValidationContext' && v.value.validationContextSdsSecretConfig)
        names.add(v.value.validationContextSdsSecretConfig.name);
    }
  }
  return names;
}

/**
 * Runs the registered generators the way Envoy subscribes: LDS and CDS wildcard, then RDS for the
 * names the listeners use, EDS for the EDS clusters and SDS for the listeners' credentials.
 */
export function generateFor(push: PushContext, generators: GeneratorRegistry, proxy: Proxy): GeneratedConfig {
  const req = pushRequest({ full: true, reason: 'config', start: 0 });
  const run = (typeUrl: string, names: Set<string> | undefined): XdsResource[] => {
    const gen = generators.lookup(proxy, typeUrl);
    if (!gen) return [];
    return [...gen.generate(proxy, { typeUrl, names: names ?? new Set(), wildcard: names === undefined }, push, req)];
  };
  const lds = run(TypeUrl.Listener, undefined);
  const listeners = decode(ListenerSchema, lds);
  const rds = run(TypeUrl.RouteConfiguration, rdsNames(listeners));
  const cds = run(TypeUrl.Cluster, undefined);
  const clusters = decode(ClusterSchema, cds);
  const edsNames = new Set(clusters.filter((c) => c.edsClusterConfig).map((c) => c.edsClusterConfig!.serviceName || c.name));
  const eds = run(TypeUrl.ClusterLoadAssignment, edsNames);
  const sds = run(TypeUrl.Secret, sdsNames(listeners));
  return {
    listeners,
    routes: decode(RouteConfigurationSchema, rds),
    clusters,
    endpoints: decode(ClusterLoadAssignmentSchema, eds),
    secrets: decode(SecretSchema, sds),
    resources: new Map([
      [TypeUrl.Listener, lds],
      [TypeUrl.RouteConfiguration, rds],
      [TypeUrl.Cluster, cds],
      [TypeUrl.ClusterLoadAssignment, eds],
      [TypeUrl.Secret, sds],
    ]),
  };
}
