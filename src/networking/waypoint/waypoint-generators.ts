/**
 * The `waypoint/<typeUrl>` generators: LDS, CDS and EDS for a waypoint proxy (node type
 * `waypoint`), from the services and workloads bound to its Gateway (src/model/waypoint-scope.ts).
 * Routes are inline in main_internal's chains, as istiod sends them, so there is no RDS.
 * Every build is keyed by the push version and what the proxy can load: the binding reads labels
 * of every service and workload, which the dependency tokens do not cover.
 */
import { toBinary } from '@bufbuild/protobuf';
import { ClusterSchema } from '../../gen/envoy/config/cluster/v3/cluster_pb.js';
import { ClusterLoadAssignmentSchema } from '../../gen/envoy/config/endpoint/v3/endpoint_pb.js';
import { ListenerSchema } from '../../gen/envoy/config/listener/v3/listener_pb.js';
import { type Proxy, type PushContext, waypointScopeFor, type WaypointScope } from '../../model/index.js';
import { type Generator, makeResource, type XdsResource } from '../../xds/index.js';
import { TypeUrl } from '../../xds/type-urls.js';
import { buildWaypointClusters } from './waypoint-clusters.js';
import { buildWaypointEndpoints } from './waypoint-endpoints.js';
import { buildWaypointListeners } from './waypoint-listeners.js';
import { wildcardBinds } from '../service-addresses.js';

const EMPTY: WaypointScope = { key: { namespace: '', name: '' }, trafficType: 'none', services: [], workloads: [] };

function scopeOf(push: PushContext, proxy: Proxy): WaypointScope {
  return waypointScopeFor(push, proxy) ?? { ...EMPTY, key: { namespace: proxy.namespace, name: '' } };
}

const viewKey = (push: PushContext, proxy: Proxy): string => {
  const s = scopeOf(push, proxy);
  return `${push.version}|${s.key.namespace}/${s.key.name}|${proxy.extensions.key}|${push.clusterAddressKey(proxy)}`;
};

export const waypointListenerGenerator: Generator = {
  generate(proxy, _watched, push) {
    return push.derive(`LDS|waypoint|${viewKey(push, proxy)}|${wildcardBinds(proxy).join('+')}`, (): XdsResource[] =>
      buildWaypointListeners(push, proxy, scopeOf(push, proxy)).map((l) =>
        makeResource(l.name, TypeUrl.Listener, toBinary(ListenerSchema, l)),
      ),
    );
  },
};

export const waypointClusterGenerator: Generator = {
  generate(proxy, _watched, push) {
    return push.derive(`CDS|waypoint|${viewKey(push, proxy)}`, (): XdsResource[] =>
      buildWaypointClusters(push, proxy, scopeOf(push, proxy).services).map((c) =>
        makeResource(c.name, TypeUrl.Cluster, toBinary(ClusterSchema, c)),
      ),
    );
  },
};

export const waypointEndpointGenerator: Generator = {
  generate(proxy, watched, push) {
    const services = scopeOf(push, proxy).services;
    const key = viewKey(push, proxy);
    const out: XdsResource[] = [];
    for (const name of [...watched.names].sort()) {
      const res = push.derive(`EDS|waypoint|${key}|${name}`, () => {
        const cla = buildWaypointEndpoints(push, name, services);
        return cla ? makeResource(name, TypeUrl.ClusterLoadAssignment, toBinary(ClusterLoadAssignmentSchema, cla)) : undefined;
      });
      if (res) out.push(res);
    }
    return out;
  },
};

/** A waypoint has no RDS: an empty answer to a subscription keeps Envoy from waiting. */
export const waypointRouteGenerator: Generator = { generate: () => [] };
