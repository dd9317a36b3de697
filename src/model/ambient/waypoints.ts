/**
 * Waypoint binding (istiod's pilot/pkg/serviceregistry/ambient/waypoints.go): an object, or else
 * its namespace, names a waypoint with `istio.io/use-waypoint` (`none` opts out;
 * `istio.io/use-waypoint-namespace` names another namespace). The binding holds only while the
 * named Gateway (Gateway API) exists and carries the traffic type asked for.
 */
import { create } from '@bufbuild/protobuf';
import { specJson, type Config, type ConfigSnapshot } from '../../config/index.js';
import { GATEWAY_NAME_LABEL } from '../../config/constants.js';
import { GatewayAddressSchema, NamespacedHostnameSchema, type GatewayAddress } from '../../gen/workloadapi/workload_pb.js';

export const USE_WAYPOINT_LABEL = 'istio.io/use-waypoint';
export const USE_WAYPOINT_NAMESPACE_LABEL = 'istio.io/use-waypoint-namespace';
export const INGRESS_USE_WAYPOINT_LABEL = 'istio.io/ingress-use-waypoint';

/** Go's strconv.ParseBool spellings of true (istiod reads the label with it; anything else is false). */
const TRUE_SPELLINGS = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);

/**
 * Whether ingress gateways should send a bound service's traffic through its waypoint: the
 * service's `istio.io/ingress-use-waypoint` label, else its namespace's (istiod's
 * ingressUseWaypointFromLabels).
 */
export function ingressUseWaypoint(labels: Labels, namespaceLabels: Labels): boolean {
  const value = labels[INGRESS_USE_WAYPOINT_LABEL] ?? namespaceLabels[INGRESS_USE_WAYPOINT_LABEL];
  return value !== undefined && TRUE_SPELLINGS.has(value);
}
export const WAYPOINT_FOR_LABEL = 'istio.io/waypoint-for';
const GATEWAY_MANAGED_LABEL = 'gateway.istio.io/managed';
const MESH_CONTROLLER = 'istio.io-mesh-controller';
export const WAYPOINT_CLASS = 'istio-waypoint';
/** Port ztunnel reaches a waypoint on (HBONE); istiod hard-codes it too. */
const HBONE_PORT = 15008;

type Labels = Readonly<Record<string, string>>;
export type TrafficType = 'service' | 'workload' | 'all' | 'none';

export interface Waypoint {
  readonly namespace: string;
  readonly name: string;
  readonly trafficType: string;
  readonly address: GatewayAddress;
}

/**
 * The address ztunnel sends traffic to: the Gateway's Service hostname. istiod reads it from the
 * Gateway's status; meshpilot's config objects carry no status, so it is the Service the
 * deployment controller creates (`gateway.istio.io/name-override`, else the Gateway's name for
 * the waypoint class, `<name>-<class>` otherwise).
 */
function waypointOf(gw: Config<'KubernetesGateway'>, snapshot: ConfigSnapshot, domain: string): Waypoint {
  const spec = specJson<{ gatewayClassName?: unknown }>(gw.spec);
  const className = typeof spec.gatewayClassName === 'string' ? spec.gatewayClassName : '';
  const service =
    gw.meta.annotations['gateway.istio.io/name-override'] ?? (className === WAYPOINT_CLASS ? gw.meta.name : `${gw.meta.name}-${className}`);
  // GatewayClass is cluster-scoped: a file source may give it a namespace, so look it up by name too.
  const cls =
    snapshot.get('GatewayClass', '', className) ?? [...snapshot.byKind('GatewayClass').values()].find((c) => c.meta.name === className);
  const classLabels = cls?.meta.labels ?? {};
  const trafficType = gw.meta.labels[WAYPOINT_FOR_LABEL] ?? classLabels[WAYPOINT_FOR_LABEL] ?? 'service';
  const address = create(GatewayAddressSchema, {
    destination: {
      case: 'hostname',
      value: create(NamespacedHostnameSchema, { namespace: gw.meta.namespace, hostname: `${service}.${gw.meta.namespace}.svc.${domain}` }),
    },
    hboneMtlsPort: HBONE_PORT,
  });
  return { namespace: gw.meta.namespace, name: gw.meta.name, trafficType, address };
}

/** The use-waypoint reference of one object's labels: a name, `none` (opted out), or nothing. */
function useWaypoint(labels: Labels, defaultNamespace: string): { namespace: string; name: string } | 'none' | undefined {
  const name = labels[USE_WAYPOINT_LABEL];
  if (name === undefined) return undefined;
  if (name === 'none') return 'none';
  return { namespace: labels[USE_WAYPOINT_NAMESPACE_LABEL] ?? defaultNamespace, name };
}

/** Waypoints by `namespace/name`, derived from a snapshot's Gateway API Gateways once. */
export class Waypoints {
  readonly #snapshot: ConfigSnapshot;
  readonly #domain: string;
  readonly #memo = new Map<string, Waypoint | undefined>();

  constructor(snapshot: ConfigSnapshot, domain: string) {
    this.#snapshot = snapshot;
    this.#domain = domain;
  }

  get(namespace: string, name: string): Waypoint | undefined {
    const key = `${namespace}/${name}`;
    if (this.#memo.has(key)) return this.#memo.get(key);
    const gw = this.#snapshot.get('KubernetesGateway', namespace, name);
    const w = gw ? waypointOf(gw, this.#snapshot, this.#domain) : undefined;
    this.#memo.set(key, w);
    return w;
  }

  /** istiod's fetchWaypointForTarget: the object's own label, else its namespace's. */
  #target(namespace: string, labels: Labels, namespaceLabels: Labels): { waypoint?: Waypoint; own: boolean } {
    const own = useWaypoint(labels, namespace);
    if (own === 'none') return { own: true };
    if (own) {
      const w = this.get(own.namespace, own.name);
      return w ? { waypoint: w, own: true } : { own: true };
    }
    const fromNamespace = useWaypoint(namespaceLabels, namespace);
    if (fromNamespace && fromNamespace !== 'none') {
      const w = this.get(fromNamespace.namespace, fromNamespace.name);
      if (w) return { waypoint: w, own: false };
    }
    return { own: false };
  }

  /** A service's waypoint (traffic type service or all); waypoints themselves have none. */
  forService(namespace: string, labels: Labels, namespaceLabels: Labels): Waypoint | undefined {
    if (labels[GATEWAY_MANAGED_LABEL] === MESH_CONTROLLER) return undefined;
    const w = this.#target(namespace, labels, namespaceLabels).waypoint;
    return w && (w.trafficType === 'service' || w.trafficType === 'all') ? w : undefined;
  }

  /**
   * A workload's waypoint (traffic type workload or all). A waypoint's own pods have none: they
   * are its instances (istiod's fetchWaypointForInstance), or their traffic would loop to themselves.
   */
  forWorkload(namespace: string, labels: Labels, namespaceLabels: Labels): Waypoint | undefined {
    const instanceOf = labels[GATEWAY_NAME_LABEL];
    if (instanceOf !== undefined && this.get(namespace, instanceOf)) return undefined;
    const w = this.#target(namespace, labels, namespaceLabels).waypoint;
    return w && (w.trafficType === 'workload' || w.trafficType === 'all') ? w : undefined;
  }
}
