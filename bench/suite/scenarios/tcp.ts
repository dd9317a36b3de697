/** Istio's `tcp` benchmark input, grown: TCP ServiceEntries with a VIP (one outbound listener each), routed to subset v1. */
import { istioDoc } from '../mesh.js';
import { l4Scenario, size } from './common.js';

export const tcp = l4Scenario({
  name: 'tcp',
  about: 'TCP services with VIPs (a listener per service), VirtualService tcp route to v1; no proxyless clients',
  defaults: size(100, 3, 500, 0),
  quick: size(20, 2, 20, 0, 0, 4),
  port: { number: 7070, name: 'tcp', protocol: 'TCP' },
  vip: true,
  route: (svc, to) => istioDoc('VirtualService', svc.name, svc.ns, { hosts: [svc.host], tcp: [{ route: to }] }),
});
