import { create, fromBinary, toJson, type JsonValue, type Registry } from '@bufbuild/protobuf';
import { AnySchema, anyPack, timestampFromMs, type Any } from '@bufbuild/protobuf/wkt';
import {
  BootstrapConfigDumpSchema,
  ConfigDumpSchema,
  type BootstrapConfigDump,
  SecretsConfigDumpSchema,
  type ConfigDump,
} from '../../gen/envoy/admin/v3/config_dump_pb.js';
import {
  ClustersConfigDumpSchema,
  EndpointsConfigDumpSchema,
  ListenersConfigDumpSchema,
  RoutesConfigDumpSchema,
  ScopedRoutesConfigDumpSchema,
} from '../../gen/envoy/admin/v3/config_dump_shared_pb.js';
import { type PushContext, pushRequest, xdsJsonRegistry } from '../../model/index.js';
import type { Connection } from '../connection.js';
import type { GeneratorRegistry } from '../generator.js';
import type { XdsResource } from '../resource.js';
import { TypeUrl } from '../type-urls.js';

export interface ConfigDumpOptions {
  /** Add the EndpointsConfigDump (default true; Envoy's admin needs ?include_eds). */
  readonly includeEds?: boolean;
  /** Epoch ms for the request start (generators may look at it). */
  readonly now: number;
}

/**
 * What this server would send `conn` now: every watched type generated from `push` with the
 * proxy's own generators and names, as an envoy.admin.v3.ConfigDump of dynamic entries (istiod's
 * /debug/config_dump). Types the proxy does not watch come out empty.
 */
export function buildConfigDump(conn: Connection, push: PushContext, generators: GeneratorRegistry, opts: ConfigDumpOptions): ConfigDump {
  const req = pushRequest({ full: true, reason: 'debug', start: opts.now });
  const version = push.version;
  const resources = (typeUrl: string): readonly XdsResource[] => {
    const w = conn.watched(typeUrl);
    const gen = generators.lookup(conn.proxy, typeUrl);
    return w && gen ? gen.generate(conn.proxy, w, push, req) : [];
  };
  const generate = (typeUrl: string): Any[] => resources(typeUrl).map(toAny);
  const configs: Any[] = [
    anyPack(BootstrapConfigDumpSchema, bootstrapOf(conn)),
    anyPack(
      ClustersConfigDumpSchema,
      create(ClustersConfigDumpSchema, {
        versionInfo: version,
        dynamicActiveClusters: generate(TypeUrl.Cluster).map((cluster) => ({ versionInfo: version, cluster })),
      }),
    ),
  ];
  if (opts.includeEds ?? true) {
    configs.push(
      anyPack(
        EndpointsConfigDumpSchema,
        create(EndpointsConfigDumpSchema, {
          dynamicEndpointConfigs: generate(TypeUrl.ClusterLoadAssignment).map((endpointConfig) => ({
            versionInfo: version,
            endpointConfig,
          })),
        }),
      ),
    );
  }
  const listeners = resources(TypeUrl.Listener);
  configs.push(
    anyPack(
      ListenersConfigDumpSchema,
      create(ListenersConfigDumpSchema, {
        versionInfo: version,
        dynamicListeners: listeners.map((l) => ({ name: l.name, activeState: { versionInfo: version, listener: toAny(l) } })),
      }),
    ),
    anyPack(ScopedRoutesConfigDumpSchema, create(ScopedRoutesConfigDumpSchema)),
    anyPack(
      RoutesConfigDumpSchema,
      create(RoutesConfigDumpSchema, {
        dynamicRouteConfigs: generate(TypeUrl.RouteConfiguration).map((routeConfig) => ({ versionInfo: version, routeConfig })),
      }),
    ),
    // Secrets are not dumped: they would need redaction and meshpilot serves no SDS yet.
    anyPack(SecretsConfigDumpSchema, create(SecretsConfigDumpSchema)),
  );
  return create(ConfigDumpSchema, { configs });
}

/**
 * What the control plane knows of the proxy's bootstrap: the node it introduced itself with (id,
 * cluster, metadata, locality, user agent; the extension list is left out). istiod sends an empty
 * BootstrapConfigDump; the node is what `proxy-config bootstrap` and the version line need.
 */
function bootstrapOf(conn: Connection): BootstrapConfigDump {
  const p = conn.proxy;
  return create(BootstrapConfigDumpSchema, {
    bootstrap: {
      node: {
        id: p.id,
        ...(p.cluster !== undefined ? { cluster: p.cluster } : {}),
        metadata: p.metadata.raw,
        locality: { region: p.locality.region, zone: p.locality.zone, subZone: p.locality.subzone },
        ...(p.userAgent ? { userAgentName: p.userAgent.name, userAgentVersionType: p.userAgent.versionType } : {}),
      },
    },
    lastUpdated: timestampFromMs(Math.floor(conn.connectedAt)),
  });
}

function toAny(r: XdsResource): Any {
  return fromBinary(AnySchema, r.any);
}

let registry: Registry | undefined;

/** The dump as proto3 JSON with typed `@type` Anys and proto field names, as Envoy's admin prints it. */
export function configDumpJson(dump: ConfigDump): JsonValue {
  registry ??= xdsJsonRegistry();
  return toJson(ConfigDumpSchema, dump, { registry, useProtoFieldName: true });
}
