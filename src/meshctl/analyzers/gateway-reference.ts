/**
 * istioctl's virtualservice.GatewayAnalyzer: every gateway a VirtualService binds must exist
 * (IST0101 `gateway`), and one of its servers must carry one of the VirtualService's hosts
 * (IST0132; a missing gateway has none, so istioctl reports both). Lines point at the gateway entry.
 */
import { type Config, hostsOverlap } from '../../config/index.js';
import { MSG } from '../analyze/messages.js';
import { at, configsOf, fullName, refOf, type Analyzer } from '../analyze/model.js';

/** Server hosts visible to a VirtualService in `namespace`: `ns/h` only for its own namespace, `./h` for the gateway's, `*\/h` everywhere. */
function serverHosts(gw: Config<'Gateway'> | undefined, namespace: string): string[] {
  const out: string[] = [];
  for (const srv of gw?.spec.servers ?? []) {
    for (const h of srv.hosts) {
      const slash = h.indexOf('/');
      if (slash < 0) {
        out.push(h);
        continue;
      }
      const ns = h.slice(0, slash) === '.' ? gw?.meta.namespace : h.slice(0, slash);
      if (ns === '*' || ns === namespace) out.push(h.slice(slash + 1));
    }
  }
  return out;
}

export const gatewayReferenceAnalyzer: Analyzer = {
  name: 'virtualservice.GatewayAnalyzer',
  description: 'Checks the gateways associated with each virtual service',
  messages: [MSG.ReferencedResourceNotFound, MSG.VirtualServiceHostNotFoundInGateway],
  analyze(s, report) {
    const gateways = new Map(configsOf(s, 'Gateway').map((g) => [`${g.meta.namespace}/${g.meta.name}`, g]));
    for (const vs of configsOf(s, 'VirtualService')) {
      const resource = refOf(vs);
      vs.spec.gateways.forEach((gw, i) => {
        if (gw === 'mesh') return;
        // `name` is in the VirtualService's namespace, `ns/name` anywhere.
        const key = gw.includes('/') ? gw : `${vs.meta.namespace}/${gw}`;
        const line = at(s, resource, `spec.gateways[${i}]`);
        const found = gateways.get(key);
        if (!found) report({ type: MSG.ReferencedResourceNotFound, resource, args: ['gateway', gw], ...line });
        const hosts = serverHosts(found, vs.meta.namespace);
        if (!hosts.some((gh) => vs.spec.hosts.some((vh) => hostsOverlap(gh.toLowerCase(), vh.toLowerCase())))) {
          report({ type: MSG.VirtualServiceHostNotFoundInGateway, resource, args: [[...vs.spec.hosts], fullName(resource), key], ...line });
        }
      });
    }
  },
};
