import type { DescMessage, MessageShape } from '@bufbuild/protobuf';
import { anyUnpack, type Any } from '@bufbuild/protobuf/wkt';
import { ClusterSchema, Cluster_DiscoveryType, type Cluster } from '../../src/gen/envoy/config/cluster/v3/cluster_pb.js';
import { ClusterLoadAssignmentSchema, type ClusterLoadAssignment } from '../../src/gen/envoy/config/endpoint/v3/endpoint_pb.js';
import { ListenerSchema, type Listener } from '../../src/gen/envoy/config/listener/v3/listener_pb.js';
import { RouteConfigurationSchema, type RouteConfiguration } from '../../src/gen/envoy/config/route/v3/route_pb.js';
import {
  HttpConnectionManagerSchema,
  type HttpConnectionManager,
} from '../../src/gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager_pb.js';
import type { DiscoveryResponse } from '../../src/gen/envoy/service/discovery/v3/discovery_pb.js';

export const TYPE = {
  LDS: 'type.googleapis.com/envoy.config.listener.v3.Listener',
  RDS: 'type.googleapis.com/envoy.config.route.v3.RouteConfiguration',
  CDS: 'type.googleapis.com/envoy.config.cluster.v3.Cluster',
  EDS: 'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment',
} as const;

export const SCHEMA_BY_TYPE = {
  [TYPE.LDS]: ListenerSchema,
  [TYPE.RDS]: RouteConfigurationSchema,
  [TYPE.CDS]: ClusterSchema,
  [TYPE.EDS]: ClusterLoadAssignmentSchema,
} as const;

/** Unpacks one Any, throwing (with the type URL) if it is not a `schema` message. */
export function unpack<D extends DescMessage>(any: Any, schema: D): MessageShape<D> {
  const m = anyUnpack(any, schema);
  if (m === undefined) throw new Error(`Any holds ${any.typeUrl}, expected ${schema.typeName}`);
  return m;
}

/** Every resource of a response, decoded as `schema`. */
export function decodeResources<D extends DescMessage>(resp: DiscoveryResponse, schema: D): MessageShape<D>[] {
  return resp.resources.map((a) => unpack(a, schema));
}

/** The HttpConnectionManager inside a proxyless `api_listener`, or undefined. */
export function listenerHcm(l: Listener): HttpConnectionManager | undefined {
  const any = l.apiListener?.apiListener;
  return any ? unpack(any, HttpConnectionManagerSchema) : undefined;
}

/** The RDS route_config_name an api_listener refers to (undefined for inline route_config). */
export function listenerRouteName(l: Listener): string | undefined {
  const hcm = listenerHcm(l);
  return hcm?.routeSpecifier.case === 'rds' ? hcm.routeSpecifier.value.routeConfigName : undefined;
}

/** Every cluster a RouteConfiguration's routes point at (single and weighted). */
export function routeClusters(rc: RouteConfiguration): string[] {
  const out = new Set<string>();
  for (const vh of rc.virtualHosts) {
    for (const r of vh.routes) {
      if (r.action.case !== 'route') continue;
      const cs = r.action.value.clusterSpecifier;
      if (cs.case === 'cluster') out.add(cs.value);
      else if (cs.case === 'weightedClusters') for (const wc of cs.value.clusters) out.add(wc.name);
    }
  }
  return [...out];
}

/** The EDS service name of an EDS cluster (eds_cluster_config.service_name, else its name), or undefined. */
export function clusterEdsName(c: Cluster): string | undefined {
  if (c.clusterDiscoveryType.case !== 'type' || c.clusterDiscoveryType.value !== Cluster_DiscoveryType.EDS) return undefined;
  const sn = c.edsClusterConfig?.serviceName;
  return sn !== undefined && sn !== '' ? sn : c.name;
}

/** `ip:port` of every LbEndpoint in a ClusterLoadAssignment (socket addresses only). */
export function endpointAddresses(cla: ClusterLoadAssignment): string[] {
  const out: string[] = [];
  for (const le of cla.endpoints) {
    for (const e of le.lbEndpoints) {
      if (e.hostIdentifier.case !== 'endpoint') continue;
      const a = e.hostIdentifier.value.address?.address;
      if (a?.case === 'socketAddress') out.push(`${a.value.address}:${a.value.portSpecifier.value ?? ''}`);
    }
  }
  return out;
}

/** Endpoint addresses per ClusterLoadAssignment of an EDS response, sorted. */
export function addressesByCluster(resp: DiscoveryResponse): Record<string, string[]> {
  return Object.fromEntries(decodeResources(resp, ClusterLoadAssignmentSchema).map((c) => [c.clusterName, endpointAddresses(c).sort()]));
}
