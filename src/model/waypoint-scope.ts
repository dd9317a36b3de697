/**
 * What a waypoint proxy serves (istiod's findWaypointResources: ServicesForWaypoint and
 * WorkloadsForWaypoint). A service or workload names its waypoint with `istio.io/use-waypoint`
 * (`none` opts out; `istio.io/use-waypoint-namespace` names another namespace than its own); the
 * Gateway API Gateway of that name carries `istio.io/waypoint-for` (`service`, the default;
 * `workload`, `all` or `none`), which says whether services, workloads or both bind to it. The
 * binding holds only while the named Gateway exists.
 *
 * Namespace-wide binding (the label on a Namespace) needs the namespaces' labels, which the
 * registries do not carry: `namespaceLabels` supplies them when a caller has them. The ambient
 * index (src/model/ambient/) computes the same binding for ztunnel; the two are meant to merge.
 */
import { type Config, type GatewaySpec, specJson } from '../config/index.js';
import { GATEWAY_NAME_LABEL } from '../config/constants.js';
import type { Service } from '../registry/index.js';
import type { Proxy } from './proxy.js';
import type { PushContext } from './push-context.js';

export const USE_WAYPOINT_LABEL = 'istio.io/use-waypoint';
export const USE_WAYPOINT_NAMESPACE_LABEL = 'istio.io/use-waypoint-namespace';
export const WAYPOINT_FOR_LABEL = 'istio.io/waypoint-for';
export const WAYPOINT_GATEWAY_CLASS = 'istio-waypoint';

type Labels = Readonly<Record<string, string>>;
export type WaypointTrafficType = 'service' | 'workload' | 'all' | 'none';

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
  /** Bound services, in registry order (namespace, then hostname). */
  readonly services: readonly Service[];
  readonly workloads: readonly WaypointWorkload[];
}

/** The waypoint a proxy is: the Gateway named by its pod's `gateway.networking.k8s.io/gateway-name` label, in its namespace. */
export function waypointKeyOf(proxy: Proxy): WaypointKey | undefined {
  const name = proxy.labels[GATEWAY_NAME_LABEL];
  return name ? { namespace: proxy.namespace, name } : undefined;
}

const TRAFFIC_TYPES = new Set<string>(['service', 'workload', 'all', 'none']);

/** The Gateway's `istio.io/waypoint-for`, else its GatewayClass's, else `service` (istiod's default). */
export function trafficTypeOf(push: PushContext, gateway: Config<'KubernetesGateway'>): WaypointTrafficType {
  const className = specJson<GatewaySpec>(gateway.spec).gatewayClassName;
  // GatewayClass is cluster-scoped: a file source may give it a namespace, so look it up by name.
  const cls =
    typeof className === 'string'
      ? (push.config.get('GatewayClass', '', className) ??
        [...push.config.byKind('GatewayClass').values()].find((c) => c.meta.name === className))
      : undefined;
  const v = gateway.meta.labels[WAYPOINT_FOR_LABEL] ?? cls?.meta.labels[WAYPOINT_FOR_LABEL] ?? 'service';
  return TRAFFIC_TYPES.has(v) ? (v as WaypointTrafficType) : 'service';
}

/** The waypoint one object's labels name (its own, else its namespace's); undefined when none or `none`. */
export function useWaypoint(labels: Labels, namespace: string, namespaceLabels: Labels | undefined): WaypointKey | undefined {
  const own = labels[USE_WAYPOINT_LABEL];
  const from = own !== undefined ? labels : namespaceLabels;
  const name = from?.[USE_WAYPOINT_LABEL];
  if (name === undefined || name === '' || name === 'none') return undefined;
  return { namespace: from?.[USE_WAYPOINT_NAMESPACE_LABEL] ?? namespace, name };
}

const sameKey = (a: WaypointKey | undefined, b: WaypointKey): boolean =>
  a !== undefined && a.namespace === b.namespace && a.name === b.name;

export interface WaypointScopeOptions {
  /** A namespace's labels, when the caller knows them (namespace-wide `istio.io/use-waypoint`). */
  readonly namespaceLabels?: (namespace: string) => Labels | undefined;
}

/**
 * The services and workloads bound to the waypoint `key` in this push: empty when its Gateway is
 * gone. Workloads are WorkloadEntries and (with a Kubernetes registry) pods of the namespaces that
 * hold services.
 */
export function waypointScope(push: PushContext, key: WaypointKey, o: WaypointScopeOptions = {}): WaypointScope {
  const gateway = push.config.get('KubernetesGateway', key.namespace, key.name);
  if (!gateway) return { key, trafficType: 'none', services: [], workloads: [] };
  const trafficType = trafficTypeOf(push, gateway);
  const nsLabels = (ns: string): Labels | undefined => o.namespaceLabels?.(ns);
  const forServices = trafficType === 'service' || trafficType === 'all';
  const forWorkloads = trafficType === 'workload' || trafficType === 'all';
  const services = forServices
    ? push.services().filter((s) => sameKey(useWaypoint(s.labels ?? {}, s.namespace, nsLabels(s.namespace)), key))
    : [];
  const workloads: WaypointWorkload[] = [];
  if (forWorkloads) {
    for (const we of push.config.list('WorkloadEntry')) {
      if (!sameKey(useWaypoint(we.meta.labels, we.meta.namespace, nsLabels(we.meta.namespace)), key)) continue;
      if (we.spec.address !== '' && !we.spec.address.startsWith('unix://')) {
        workloads.push({ namespace: we.meta.namespace, name: we.meta.name, addresses: [we.spec.address] });
      }
    }
    const instances = push.registry.workloadInstances;
    if (instances) {
      const namespaces = new Set([key.namespace, ...push.services().map((s) => s.namespace)]);
      for (const ns of [...namespaces].sort()) {
        for (const w of instances.inNamespace(ns)) {
          if (sameKey(useWaypoint(w.labels, w.namespace, nsLabels(w.namespace)), key)) {
            workloads.push({ namespace: w.namespace, name: w.name, addresses: w.addresses });
          }
        }
      }
    }
  }
  return { key, trafficType, services, workloads };
}

/**
 * The waypoint scope of a waypoint proxy, memoised for this push only (the key holds the push
 * version: what the binding reads — labels of every service and workload — is not recorded as
 * dependencies); undefined when the proxy names no Gateway.
 */
export function waypointScopeFor(push: PushContext, proxy: Proxy): WaypointScope | undefined {
  const key = waypointKeyOf(proxy);
  if (!key) return undefined;
  return push.derive(`waypoint-scope|${push.version}|${key.namespace}/${key.name}`, () => waypointScope(push, key));
}
