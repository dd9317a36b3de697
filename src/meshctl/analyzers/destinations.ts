/** The destinations a VirtualService routes to (http, tcp, tls routes), shared by the virtualservice analyzers. */
import type { Destination, VirtualService } from '../../gen/networking/v1alpha3/virtual_service_pb.js';

export interface RouteDestination {
  readonly destination: Destination;
  /** Field path of the destination, e.g. `spec.http[0].route[1].destination`. */
  readonly path: string;
  /** An http mirror rather than a route destination. */
  readonly mirror?: boolean;
}

export function routeDestinations(vs: VirtualService): RouteDestination[] {
  const out: RouteDestination[] = [];
  const sections = [
    ['http', vs.http],
    ['tcp', vs.tcp],
    ['tls', vs.tls],
  ] as const;
  for (const [name, routes] of sections) {
    routes.forEach((r, i) =>
      r.route.forEach((d, j) => {
        if (d.destination) out.push({ destination: d.destination, path: `spec.${name}[${i}].route[${j}].destination` });
      }),
    );
  }
  return out;
}

/** The http mirrors (`mirror`, and each of `mirrors`). */
export function mirrorDestinations(vs: VirtualService): RouteDestination[] {
  const out: RouteDestination[] = [];
  vs.http.forEach((r, i) => {
    if (r.mirror) out.push({ destination: r.mirror, path: `spec.http[${i}].mirror`, mirror: true });
    r.mirrors.forEach((m, k) => {
      if (m.destination) out.push({ destination: m.destination, path: `spec.http[${i}].mirrors[${k}].destination`, mirror: true });
    });
  });
  return out;
}

/** Whether the VirtualService applies to sidecars (no gateways, or `mesh` among them). */
export const boundToMesh = (vs: VirtualService): boolean => vs.gateways.length === 0 || vs.gateways.includes('mesh');
