/**
 * IST0140, part of istioctl's virtualservice.DestinationHostAnalyzer: a VirtualService bound to
 * gateways that routes to a host without a subset, while some VirtualService (itself included)
 * routes to that same host — one of its own hosts — with a subset: the subset routing does not
 * apply to requests entering through the gateway. Hosts are compared as written.
 */
import type { Destination } from '../../gen/networking/v1alpha3/virtual_service_pb.js';
import { MSG } from '../analyze/messages.js';
import { at, configsOf, fullName, refOf, type Report, type Snapshot } from '../analyze/model.js';

export function reportIngressSubsets(s: Snapshot, report: Report): void {
  const virtualServices = configsOf(s, 'VirtualService');
  // VirtualService → its subset destinations whose host is one of its own hosts.
  const withSubsets: [string, Destination[]][] = [];
  for (const vs of virtualServices) {
    const dests: Destination[] = [];
    for (const route of vs.spec.http.flatMap((h) => h.route)) {
      const d = route.destination;
      if (d && d.subset !== '' && vs.spec.hosts.includes(d.host)) dests.push(d);
    }
    if (dests.length > 0) withSubsets.push([fullName(refOf(vs)), dests]);
  }
  for (const vs of virtualServices) {
    if (vs.spec.gateways.length === 0) continue;
    const resource = refOf(vs);
    vs.spec.http.forEach((http, i) => {
      http.route.forEach((route, j) => {
        const d = route.destination;
        if (!d || d.subset !== '') return;
        for (const [other, dests] of withSubsets) {
          if (!dests.some((x) => x.host === d.host)) continue;
          // istioctl builds this path from the route's *name* (not `http`), so it rarely finds a line.
          report({
            type: MSG.IngressRouteRulesNotAffected,
            resource,
            args: [other, fullName(resource)],
            ...at(s, resource, `spec.${http.name}[${i}].route[${j}].destination.host`),
          });
        }
      });
    });
  }
}
