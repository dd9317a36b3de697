/**
 * The waypoint Gateway istioctl's `waypoint generate|apply` writes (istioctl/pkg/waypoint): class
 * istio-waypoint, one HBONE listener `mesh` on 15008, the `istio.io/waypoint-for` label only
 * when --for is given (otherwise istiod's default for the class applies), `istio.io/rev` with
 * --revision. Printed as sigs.k8s.io/yaml prints the Go object, without the empty
 * creationTimestamp and status.
 */
import { REVISION_LABEL, WAYPOINT_FOR_LABEL, WAYPOINT_GATEWAY_CLASS } from '../../config/constants.js';
import { marshalYaml } from '../../template/index.js';
import { MeshError } from '../../util/errors.js';

/** The name a waypoint gets without --name (istio's DefaultNamespaceWaypoint). */
export const DEFAULT_WAYPOINT_NAME = 'waypoint';
export const TRAFFIC_TYPES = ['all', 'none', 'service', 'workload'] as const;

export interface WaypointSpec {
  /** Empty: the Gateway names no namespace (generate without -n). */
  readonly namespace: string;
  readonly name?: string;
  readonly trafficType?: string;
  readonly revision?: string;
}

export interface WaypointGateway {
  readonly apiVersion: 'gateway.networking.k8s.io/v1';
  readonly kind: 'Gateway';
  readonly metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  readonly spec: {
    readonly gatewayClassName: string;
    readonly listeners: readonly { name: string; port: number; protocol: string }[];
  };
}

/** The waypoint's name: --name, `waypoint` when empty; `none` is refused (it means "no waypoint" in use-waypoint). */
export function waypointName(name: string | undefined): string {
  if (name === undefined || name === '') return DEFAULT_WAYPOINT_NAME;
  if (name === 'none')
    throw new MeshError('INVALID_ARGUMENT', "failed to create gateway: invalid name provided for waypoint, 'none' is a reserved value");
  return name;
}

export function makeWaypoint(w: WaypointSpec): WaypointGateway {
  const name = waypointName(w.name);
  const labels: Record<string, string> = {};
  if (w.trafficType !== undefined && w.trafficType !== '') {
    if (!(TRAFFIC_TYPES as readonly string[]).includes(w.trafficType))
      throw new MeshError(
        'INVALID_ARGUMENT',
        `failed to create gateway: invalid traffic type: ${w.trafficType}. Valid options are: [${TRAFFIC_TYPES.join(' ')}]`,
      );
    labels[WAYPOINT_FOR_LABEL] = w.trafficType;
  }
  if (w.revision !== undefined && w.revision !== '') labels[REVISION_LABEL] = w.revision;
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { name, ...(w.namespace !== '' ? { namespace: w.namespace } : {}), ...(Object.keys(labels).length > 0 ? { labels } : {}) },
    spec: { gatewayClassName: WAYPOINT_GATEWAY_CLASS, listeners: [{ name: 'mesh', port: 15008, protocol: 'HBONE' }] },
  };
}

/** The Gateway as `istioctl waypoint generate` prints it. */
export function waypointYaml(gw: WaypointGateway): string {
  return marshalYaml(gw);
}
