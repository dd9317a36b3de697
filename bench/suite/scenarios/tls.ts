/**
 * Istio's `tls` benchmark input, grown: TLS ServiceEntries without VIPs (one 0.0.0.0_443 listener,
 * a filter chain per SNI host), ISTIO_MUTUAL DestinationRules, VirtualService tls routes by SNI.
 */
import { istioDoc } from '../mesh.js';
import { l4Scenario, size } from './common.js';

const PORT = 443;

export const tls = l4Scenario({
  name: 'tls',
  about: 'TLS services routed by SNI (VirtualService tls routes, ISTIO_MUTUAL DestinationRules); no proxyless clients',
  defaults: size(100, 3, 500, 0),
  quick: size(20, 2, 20, 0, 0, 4),
  port: { number: PORT, name: 'tls', protocol: 'TLS' },
  vip: false,
  trafficPolicy: { tls: { mode: 'ISTIO_MUTUAL' } },
  route: (svc, to) =>
    istioDoc('VirtualService', svc.name, svc.ns, {
      hosts: [svc.host],
      tls: [{ match: [{ port: PORT, sniHosts: [svc.host] }], route: to }],
    }),
});
