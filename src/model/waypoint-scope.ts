/**
 * What a waypoint proxy serves (istiod's findWaypointResources: ServicesForWaypoint and
 * WorkloadsForWaypoint), read from the ambient index's binding (src/model/ambient/waypoints.ts):
 * `istio.io/use-waypoint` on the Service, ServiceEntry, pod or WorkloadEntry, else on its
 * Namespace, and the Gateway's `istio.io/waypoint-for`. The waypoint thus serves exactly what
 * ztunnel is told to send it; nothing is bound while the Gateway does not exist.
 */
import { GATEWAY_NAME_LABEL } from '../config/constants.js';
import type { Service } from '../registry/index.js';
import { ipAddressText } from '../util/ip.js';
import type { ServiceInfo } from './ambient/services.js';
import type { TrafficType } from './ambient/waypoints.js';
import type { Proxy } from './proxy.js';
import type { PushContext } from './push-context.js';

export type WaypointTrafficType = TrafficType;

/** A waypoint: its Gateway's namespace and name. */
export interface WaypointKey {
  readonly namespace: string;
  readonly name: string;
}

/** A workload bound to the waypoint (its addresses are matched by `main_internal`). */
export interface WaypointWorkload {
  readonly namespace: string;
  readonly name: string;
  readonly addresses: readonly string[];
}

export interface WaypointScope {
  readonly key: WaypointKey;
  readonly trafficType: WaypointTrafficType;
  /** Bound services, oldest first (istiod's SortServicesByCreationTime). */
  readonly services: readonly Service[];
  readonly workloads: readonly WaypointWorkload[];
}

/** The waypoint a proxy is: the Gateway named by its pod's `gateway.networking.k8s.io/gateway-name` label, in its namespace. */
export function waypointKeyOf(proxy: Proxy): WaypointKey | undefined {
  const name = proxy.labels[GATEWAY_NAME_LABEL];
  return name ? { namespace: proxy.namespace, name } : undefined;
}

/**
 * istiod's SortServicesByCreationTime: creation time, then the service's name (a Kubernetes
 * Service's name, a ServiceEntry host), then namespace. Creation times have whole seconds.
 */
function byCreation(services: readonly ServiceInfo[]): ServiceInfo[] {
  const name = (s: ServiceInfo): string =>
    s.sourceKind === 'Service' && s.address.type.case === 'service' ? s.address.type.value.name : s.hostname;
  const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
  return [...services].sort((a, b) => a.created - b.created || cmp(name(a), name(b)) || cmp(a.namespace, b.namespace));
}

const TRAFFIC_TYPES = new Set<string>(['service', 'workload', 'all', 'none']);

/** The services and workloads bound to the waypoint `key` in this push: empty when its Gateway is gone. */
export function waypointScope(push: PushContext, key: WaypointKey): WaypointScope {
  const index = push.ambientBinding();
  const waypoint = index.waypoint(key.namespace, key.name);
  if (!waypoint) return { key, trafficType: 'none', services: [], workloads: [] };
  const trafficType = (TRAFFIC_TYPES.has(waypoint.trafficType) ? waypoint.trafficType : 'service') as WaypointTrafficType;
  const bound = index.boundTo(waypoint);
  const byName = new Map(push.services().map((s) => [`${s.namespace}/${s.hostname}`, s]));
  const services = byCreation(bound.services).flatMap((info) => byName.get(info.name) ?? []);
  const workloads = bound.workloads.flatMap((w): WaypointWorkload[] =>
    w.address.type.case === 'workload'
      ? [
          {
            namespace: w.address.type.value.namespace,
            name: w.address.type.value.name,
            addresses: w.address.type.value.addresses.flatMap((a) => ipAddressText(a) ?? []),
          },
        ]
      : [],
  );
  return { key, trafficType, services, workloads };
}

/**
 * The waypoint scope of a waypoint proxy, memoised for this push only (the key holds the push
 * version: what the binding reads — labels of every service, workload and namespace — is not
 * recorded as dependencies); undefined when the proxy names no Gateway.
 */
export function waypointScopeFor(push: PushContext, proxy: Proxy): WaypointScope | undefined {
  const key = waypointKeyOf(proxy);
  if (!key) return undefined;
  return push.derive(`waypoint-scope|${push.version}|${key.namespace}/${key.name}`, () => waypointScope(push, key));
}
