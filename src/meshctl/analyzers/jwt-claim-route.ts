/**
 * istioctl's virtualservice.JWTClaimRouteAnalyzer (IST0149): a gateway VirtualService routing on
 * `@request.auth.claims.*` headers needs a RequestAuthentication selecting each gateway pod (in
 * the pod's namespace or the root namespace), or the claims are never there to match.
 */
import { MSG } from '../analyze/messages.js';
import { configsOf, refOf, type Analyzer } from '../analyze/model.js';
import { labelsSubsetOf } from '../../config/index.js';

const CLAIM_PREFIX = '@request.auth.claims';

export const jwtClaimRouteAnalyzer: Analyzer = {
  name: 'virtualservice.JWTClaimRouteAnalyzer',
  description: 'Checks the VirtualService using JWT claim based routing has corresponding RequestAuthentication',
  messages: [MSG.JwtClaimBasedRoutingWithoutRequestAuthN],
  analyze(s, report) {
    const gateways = new Map(configsOf(s, 'Gateway').map((g) => [`${g.meta.namespace}/${g.meta.name}`, g]));
    const ras = configsOf(s, 'RequestAuthentication');
    for (const vs of configsOf(s, 'VirtualService')) {
      const claim = vs.spec.http
        .flatMap((r) => r.match.flatMap((m) => [...Object.keys(m.headers), ...Object.keys(m.withoutHeaders)]))
        .find((k) => k.startsWith(CLAIM_PREFIX));
      if (claim === undefined) continue;
      for (const gwName of vs.spec.gateways) {
        if (gwName === 'mesh') continue;
        const gw = gateways.get(gwName.includes('/') ? gwName : `${vs.meta.namespace}/${gwName}`);
        if (!gw) continue;
        for (const pod of s.pods) {
          if (!labelsSubsetOf(gw.spec.selector, pod.labels)) continue;
          const covered = ras.some(
            (ra) =>
              (ra.meta.namespace === pod.ref.namespace || ra.meta.namespace === s.rootNamespace) &&
              labelsSubsetOf(ra.spec.selector?.matchLabels ?? {}, pod.labels),
          );
          if (!covered) {
            report({
              type: MSG.JwtClaimBasedRoutingWithoutRequestAuthN,
              resource: refOf(vs),
              args: [claim, `${gw.meta.namespace}/${gw.meta.name}`, pod.ref.name],
            });
          }
        }
      }
    }
  },
};
