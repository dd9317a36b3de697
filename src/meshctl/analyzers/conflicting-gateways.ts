/**
 * istioctl's gateway.ConflictingGatewayAnalyzer (IST0145): gateways with the same workload
 * selector (or selectors one of which extends the other, when a pod matches both) serving the same
 * port number with matching hosts (compared as written, wildcards either way). The message lists the other gateways and this server's hosts as written.
 */
import { hostsOverlap, labelsSubsetOf } from '../../config/index.js';
import { MSG } from '../analyze/messages.js';
import { configsOf, fullName, refOf, type Analyzer } from '../analyze/model.js';
import { selectorString } from './gateway-selector.js';

export const conflictingGatewaysAnalyzer: Analyzer = {
  name: 'gateway.ConflictingGatewayAnalyzer',
  description: "Checks a gateway's selector, port number and hosts",
  messages: [MSG.ConflictingGateways],
  analyze(s, report) {
    const gws = configsOf(s, 'Gateway');
    // As istioctl: different selectors still name the same workload when one's text contains the
    // other's and some pod matches both.
    const sameWorkload = (a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean => {
      const sa = selectorString(a);
      const sb = selectorString(b);
      if (sa === sb) return true;
      if (!sa.includes(sb) && !sb.includes(sa)) return false;
      return s.pods.some((p) => labelsSubsetOf(a, p.labels) && labelsSubsetOf(b, p.labels));
    };
    for (const gw of gws) {
      const sel = selectorString(gw.spec.selector);
      for (const srv of gw.spec.servers) {
        const port = srv.port?.number ?? 0;
        const others = gws.filter(
          (o) =>
            o !== gw &&
            sameWorkload(gw.spec.selector, o.spec.selector) &&
            o.spec.servers.some(
              (os) =>
                (os.port?.number ?? 0) === port &&
                srv.hosts.some((h) => os.hosts.some((x) => hostsOverlap(h.toLowerCase(), x.toLowerCase()))),
            ),
        );
        if (others.length === 0) continue;
        const names = others
          .map((o) => fullName(refOf(o)))
          .sort()
          .join(',');
        report({ type: MSG.ConflictingGateways, resource: refOf(gw), args: [names, sel, String(port), srv.hosts.join(',')] });
      }
    }
  },
};
