/**
 * istioctl's virtualservice.DestinationRuleAnalyzer: a routed (or mirrored) subset must be defined by
 * a DestinationRule for the host (IST0101), reported at the destination's host line.
 */
import { resolveShortName } from '../../config/index.js';
import { MSG } from '../analyze/messages.js';
import { at, configsOf, refOf, type Analyzer } from '../analyze/model.js';
import { mirrorDestinations, routeDestinations } from './destinations.js';

export const destinationRuleReferenceAnalyzer: Analyzer = {
  name: 'virtualservice.DestinationRuleAnalyzer',
  description: 'Checks the destination rules associated with each virtual service',
  messages: [MSG.ReferencedResourceNotFound],
  analyze(s, report) {
    // host FQDN -> subset names, over every DestinationRule (a subset may come from any namespace's rule).
    const subsets = new Map<string, Set<string>>();
    for (const dr of configsOf(s, 'DestinationRule')) {
      const host = resolveShortName(dr.spec.host, dr.meta.namespace, s.domain);
      const set = subsets.get(host) ?? new Set<string>();
      for (const ss of dr.spec.subsets) set.add(ss.name);
      subsets.set(host, set);
    }
    for (const vs of configsOf(s, 'VirtualService')) {
      const resource = refOf(vs);
      for (const { destination: d, path, mirror } of [...routeDestinations(vs.spec), ...mirrorDestinations(vs.spec)]) {
        if (d.subset === '') continue;
        const host = resolveShortName(d.host, vs.meta.namespace, s.domain);
        if (!subsets.get(host)?.has(d.subset)) {
          report({
            type: MSG.ReferencedResourceNotFound,
            resource,
            args: [`${mirror ? 'mirror' : 'host'}+subset in destinationrule`, `${d.host}+${d.subset}`],
            ...at(s, resource, `${path}.host`),
          });
        }
      }
    }
  },
};
