/**
 * istioctl's virtualservice.DestinationHostAnalyzer: each route destination must name a known
 * service visible where the VirtualService is exported (its namespace by default; a Service's
 * `networking.istio.io/exportTo` annotation limits where it is seen) (IST0101 `host`); without a port it must have only one (IST0112); with a port, that
 * port must exist (IST0101 `host:port`). Mirrors are checked too (`mirror host`). Lines point at
 * the destination's host, as istioctl's. IST0140 (subset routing a gateway bypasses): ingress-subsets.ts.
 */
import { MSG } from '../analyze/messages.js';
import { findService } from '../analyze/hosts.js';
import { at, configsOf, refOf, type Analyzer } from '../analyze/model.js';
import { mirrorDestinations, routeDestinations } from './destinations.js';
import { reportIngressSubsets } from './ingress-subsets.js';

export const destinationHostAnalyzer: Analyzer = {
  name: 'virtualservice.DestinationHostAnalyzer',
  description: 'Checks the destination hosts associated with each virtual service',
  messages: [MSG.ReferencedResourceNotFound, MSG.VirtualServiceDestinationPortSelectorRequired, MSG.IngressRouteRulesNotAffected],
  analyze(s, report) {
    for (const vs of configsOf(s, 'VirtualService')) {
      const resource = refOf(vs);
      const ns = vs.meta.namespace;
      const scopes = vs.spec.exportTo.length === 0 ? [ns] : vs.spec.exportTo.map((e) => (e === '.' ? ns : e));
      for (const { destination: d, path, mirror } of [...routeDestinations(vs.spec), ...mirrorDestinations(vs.spec)]) {
        const line = at(s, resource, `${path}.host`);
        const svc = findService(s, d.host, ns, scopes);
        if (!svc) {
          report({ type: MSG.ReferencedResourceNotFound, resource, args: [mirror ? 'mirror host' : 'host', d.host], ...line });
          continue;
        }
        const port = d.port?.number ?? 0;
        if (port === 0) {
          if (svc.ports.length > 1)
            report({ type: MSG.VirtualServiceDestinationPortSelectorRequired, resource, args: [d.host, [...svc.ports]], ...line });
        } else if (!svc.ports.includes(port)) {
          report({ type: MSG.ReferencedResourceNotFound, resource, args: ['host:port', `${d.host}:${port}`], ...line });
        }
      }
    }
    reportIngressSubsets(s, report);
  },
};
