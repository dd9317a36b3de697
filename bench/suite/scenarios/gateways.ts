/**
 * Istio's `gateways` benchmark input: per service a Gateway (http 80, https 443 ISTIO_MUTUAL and
 * SIMPLE servers for three hosts) and a VirtualService bound to it, selected by gateway routers
 * (`router~…`); sidecars and proxyless clients see the 1000 services as well.
 */
import { dest } from '../../../test/support/mesh-fixtures.js';
import { istioDoc, type Service } from '../mesh.js';
import type { Scenario } from '../scenario.js';
import { httpRouteEdit, markerRoute, size } from './common.js';

const PORT = 80;
const GW_NS = 'gateway';
const ROUTER_LABELS = { 'istio.io/benchmark': 'true', istio: 'ingressgateway' };
/** SIMPLE (file certificate) HTTPS servers per Gateway, besides http and ISTIO_MUTUAL (Istio's input has 6). */
const SIMPLE_SERVERS = 6;

const hostsOf = (svc: Service): string[] => ['a', 'b', 'c'].map((x) => `${svc.name}-${x}.bench.example`);

function gateway(svc: Service) {
  const hosts = hostsOf(svc);
  const simple = Array.from({ length: SIMPLE_SERVERS }, (_, i) => ({
    port: { number: 443, name: `https-simple-${i + 1}`, protocol: 'HTTPS' },
    hosts,
    tls: { mode: 'SIMPLE', serverCertificate: '/etc/certs/servercert.pem', privateKey: '/etc/certs/privatekey.pem' },
  }));
  return istioDoc('Gateway', `gateway-${svc.index}`, GW_NS, {
    selector: { 'istio.io/benchmark': 'true' },
    servers: [
      { port: { number: 80, name: 'http', protocol: 'HTTP' }, hosts },
      { port: { number: 443, name: 'https', protocol: 'HTTPS' }, hosts, tls: { mode: 'ISTIO_MUTUAL' } },
      ...simple,
    ],
  });
}

function boundService(svc: Service, before: readonly unknown[] = []) {
  return istioDoc('VirtualService', `vs-${svc.index}`, GW_NS, {
    hosts: hostsOf(svc),
    gateways: [`${GW_NS}/gateway-${svc.index}`],
    http: [...before, { match: [{ uri: { prefix: `/route-${svc.index}` } }], route: [dest(svc.host, undefined, undefined, PORT)] }],
  });
}

export const gateways: Scenario = {
  name: 'gateways',
  about: `gateway routers with a Gateway (${SIMPLE_SERVERS + 2} servers) and a bound VirtualService per service`,
  defaults: size(1000, 1, 200, 200, 2),
  quick: size(50, 1, 10, 10, 1, 4),
  ports: [{ number: PORT, name: 'http', protocol: 'HTTP' }],
  proxylessPort: PORT,
  routerLabels: ROUTER_LABELS,
  serviceDocs: (mesh, svc) => [mesh.serviceEntry(svc, { vip: false })],
  routeDocs: (_mesh, svc) => [gateway(svc), boundService(svc)],
  routeEdit: (_mesh, svc, marker) => {
    const [host = svc.host] = hostsOf(svc);
    return httpRouteEdit([gateway(svc), boundService(svc, [markerRoute(svc.host, PORT, marker, undefined)])], host, marker, ['router']);
  },
};
