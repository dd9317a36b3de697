import { create, fromBinary } from '@bufbuild/protobuf';
import { anyUnpack, type Any } from '@bufbuild/protobuf/wkt';
import {
  BootstrapConfigDumpSchema,
  ConfigDumpSchema,
  SecretsConfigDumpSchema,
  type BootstrapConfigDump,
  type ConfigDump,
} from '../../gen/envoy/admin/v3/config_dump_pb.js';
import {
  ClustersConfigDumpSchema,
  EndpointsConfigDumpSchema,
  ListenersConfigDumpSchema,
  RoutesConfigDumpSchema,
} from '../../gen/envoy/admin/v3/config_dump_shared_pb.js';
import { ClusterSchema, type Cluster } from '../../gen/envoy/config/cluster/v3/cluster_pb.js';
import { ClusterLoadAssignmentSchema, type ClusterLoadAssignment } from '../../gen/envoy/config/endpoint/v3/endpoint_pb.js';
import { ListenerSchema, type Listener } from '../../gen/envoy/config/listener/v3/listener_pb.js';
import { RouteConfigurationSchema, type RouteConfiguration } from '../../gen/envoy/config/route/v3/route_pb.js';
import { SecretSchema, type Secret } from '../../gen/envoy/extensions/transport_sockets/tls/v3/secret_pb.js';

/** One SDS secret as Envoy's SecretsConfigDump lists it. */
export interface DumpedSecret {
  readonly secret: Secret;
  /** istioctl's STATUS column: ACTIVE, WARMING or UNINITIALIZED. */
  readonly state: 'ACTIVE' | 'WARMING' | 'UNINITIALIZED';
}

/** A proxy's config, decoded from a ConfigDump: what the proxy-config tables read. */
export interface ProxyConfigData {
  readonly dump: ConfigDump;
  readonly bootstrap: BootstrapConfigDump | undefined;
  readonly clusters: readonly Cluster[];
  readonly listeners: readonly Listener[];
  readonly routes: readonly RouteConfiguration[];
  /** undefined when the dump has no EndpointsConfigDump (Envoy without ?include_eds). */
  readonly endpoints: readonly ClusterLoadAssignment[] | undefined;
  /** undefined when the dump has no SecretsConfigDump. */
  readonly secrets: readonly DumpedSecret[] | undefined;
}

const ADMIN = 'type.googleapis.com/envoy.admin.v3.';

/** The istio.io/debug/config_dump response's resources (one Any per dump section) as a ConfigDump. */
export function configDumpOf(resources: readonly Any[]): ConfigDump {
  return create(ConfigDumpSchema, { configs: resources.filter((a) => a.typeUrl.startsWith(ADMIN)) });
}

function unpackAll<T>(anys: readonly (Any | undefined)[], decode: (a: Any) => T): T[] {
  return anys.flatMap((a) => (a ? [decode(a)] : []));
}

/** Decodes dynamic and static entries of each section, as istioctl's configdump.Wrapper does. */
export function decodeConfigDump(dump: ConfigDump): ProxyConfigData {
  let bootstrap: BootstrapConfigDump | undefined;
  const clusters: Cluster[] = [];
  const listeners: Listener[] = [];
  const routes: RouteConfiguration[] = [];
  let endpoints: ClusterLoadAssignment[] | undefined;
  let secrets: DumpedSecret[] | undefined;
  // Section payloads are decoded by their own type URL so the Any's type name need not match Envoy's version.
  const cluster = (a: Any): Cluster => fromBinary(ClusterSchema, a.value);
  for (const section of dump.configs) {
    const type = section.typeUrl.slice(ADMIN.length);
    switch (type) {
      case 'BootstrapConfigDump':
        bootstrap = anyUnpack(section, BootstrapConfigDumpSchema);
        break;
      case 'ClustersConfigDump': {
        const d = fromBinary(ClustersConfigDumpSchema, section.value);
        clusters.push(
          ...unpackAll(
            d.dynamicActiveClusters.map((c) => c.cluster),
            cluster,
          ),
          ...unpackAll(
            d.staticClusters.map((c) => c.cluster),
            cluster,
          ),
        );
        break;
      }
      case 'ListenersConfigDump': {
        const d = fromBinary(ListenersConfigDumpSchema, section.value);
        const l = (a: Any): Listener => fromBinary(ListenerSchema, a.value);
        listeners.push(
          ...unpackAll(
            d.dynamicListeners.map((x) => x.activeState?.listener),
            l,
          ),
          ...unpackAll(
            d.staticListeners.map((x) => x.listener),
            l,
          ),
        );
        break;
      }
      case 'RoutesConfigDump': {
        const d = fromBinary(RoutesConfigDumpSchema, section.value);
        const r = (a: Any): RouteConfiguration => fromBinary(RouteConfigurationSchema, a.value);
        routes.push(
          ...unpackAll(
            d.dynamicRouteConfigs.map((x) => x.routeConfig),
            r,
          ),
          ...unpackAll(
            d.staticRouteConfigs.map((x) => x.routeConfig),
            r,
          ),
        );
        break;
      }
      case 'EndpointsConfigDump': {
        const d = fromBinary(EndpointsConfigDumpSchema, section.value);
        const e = (a: Any): ClusterLoadAssignment => fromBinary(ClusterLoadAssignmentSchema, a.value);
        endpoints = [
          ...unpackAll(
            d.dynamicEndpointConfigs.map((x) => x.endpointConfig),
            e,
          ),
          ...unpackAll(
            d.staticEndpointConfigs.map((x) => x.endpointConfig),
            e,
          ),
        ];
        break;
      }
      case 'SecretsConfigDump': {
        const d = fromBinary(SecretsConfigDumpSchema, section.value);
        const s = (a: Any): Secret => fromBinary(SecretSchema, a.value);
        secrets = [
          ...d.dynamicWarmingSecrets.flatMap((x) => (x.secret ? [{ secret: s(x.secret), state: 'WARMING' as const }] : [])),
          ...d.dynamicActiveSecrets.flatMap((x) =>
            x.secret
              ? [{ secret: s(x.secret), state: x.versionInfo === 'uninitialized' ? ('UNINITIALIZED' as const) : ('ACTIVE' as const) }]
              : [],
          ),
        ];
        break;
      }
      default:
        break;
    }
  }
  return { dump, bootstrap, clusters, listeners, routes, endpoints, secrets };
}
