import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fromBinary, toBinary } from '@bufbuild/protobuf';
import { VirtualHost_TlsRequirementType, type Route } from '../../gen/envoy/config/route/v3/route_components_pb.js';
import { RouteConfigurationSchema, type RouteConfiguration } from '../../gen/envoy/config/route/v3/route_pb.js';
import { buildGatewayRoutes } from './gateway-routes.js';
import { contextFor, gateway, serviceEntry, virtualService } from '../../../test/support/networking/gateway-fixtures.js';

const BOOKINFO = 'bookinfo.example.com';

function routes(objects: Record<string, unknown>[], names: ReadonlySet<string> | 'all' = 'all'): Map<string, RouteConfiguration> {
  const out = buildGatewayRoutes(contextFor(objects), names).map((r) =>
    fromBinary(RouteConfigurationSchema, toBinary(RouteConfigurationSchema, r)),
  );
  return new Map(out.map((r) => [r.name, r]));
}

const clusterOf = (r: Route | undefined): unknown => (r?.action.case === 'route' ? r.action.value.clusterSpecifier.value : r?.action.case);

const BOOKINFO_GW = gateway('bookinfo-gateway', [
  { port: { number: 80, name: 'http', protocol: 'HTTP' }, hosts: ['bookinfo/*'] },
  { port: { number: 443, name: 'https', protocol: 'HTTPS' }, hosts: [BOOKINFO], tls: { mode: 'SIMPLE', credentialName: 'bookinfo-cred' } },
]);
const PRODUCTPAGE = serviceEntry('productpage', 'bookinfo', 'productpage.bookinfo.svc.cluster.local', [
  { number: 9080, name: 'http', protocol: 'HTTP' },
]);
const BOOKINFO_VS = virtualService('bookinfo', 'bookinfo', {
  hosts: [BOOKINFO],
  gateways: ['istio-system/bookinfo-gateway'],
  http: [
    { name: 'api', match: [{ uri: { prefix: '/api' } }], route: [{ destination: { host: 'productpage' } }] },
    { name: 'rest', route: [{ destination: { host: 'productpage', port: { number: 9080 } } }] },
  ],
});

describe('gateway routes', () => {
  it('HTTP: a virtual host <host>:<port> per bound host, routes from the VirtualService, istiod route-config flags', () => {
    const rc = routes([BOOKINFO_GW, PRODUCTPAGE, BOOKINFO_VS]).get('http.80')!;
    assert.equal(rc.validateClusters, false);
    assert.equal(rc.ignorePortInHostMatching, true);
    assert.equal(rc.maxDirectResponseBodySizeBytes, 1024 * 1024);
    assert.equal(rc.virtualHosts.length, 1);
    const vh = rc.virtualHosts[0]!;
    assert.equal(vh.name, `${BOOKINFO}:80`);
    assert.deepEqual(vh.domains, [BOOKINFO]);
    assert.equal(vh.includeRequestAttemptCount, true);
    assert.deepEqual(
      vh.routes.map((r) => [r.name, clusterOf(r)]),
      [
        ['api', 'outbound|9080||productpage.bookinfo.svc.cluster.local'],
        ['rest', 'outbound|9080||productpage.bookinfo.svc.cluster.local'],
      ],
    );
  });

  it('HTTPS: the server’s own RDS carries its hosts; the wildcard-namespace filter applies per VirtualService', () => {
    const all = routes([
      BOOKINFO_GW,
      PRODUCTPAGE,
      BOOKINFO_VS,
      virtualService('other', 'other-ns', {
        hosts: ['other.example.com'],
        gateways: ['istio-system/bookinfo-gateway'],
        http: [{ route: [{ destination: { host: 'x' } }] }],
      }),
    ]);
    assert.deepEqual([...all.keys()].sort(), ['http.80', 'https.443.https.bookinfo-gateway.istio-system']);
    assert.deepEqual(
      all.get('https.443.https.bookinfo-gateway.istio-system')!.virtualHosts.map((v) => v.name),
      [`${BOOKINFO}:443`],
    );
    assert.deepEqual(
      all.get('http.80')!.virtualHosts.map((v) => v.name),
      [`${BOOKINFO}:80`],
      '`bookinfo/*` admits no VirtualService of other-ns',
    );
  });

  it('binds VirtualServices by `ns/name` and by short name in the Gateway’s namespace; a short name elsewhere means another gateway', () => {
    const gw = gateway('public', [{ port: { number: 80, name: 'http', protocol: 'HTTP' }, hosts: ['*'] }]);
    const vs = (name: string, ns: string, gateways: string[]) =>
      virtualService(name, ns, {
        hosts: [`${name}.example.com`],
        gateways,
        http: [{ route: [{ destination: { host: `${name}.${ns}.svc.cluster.local` } }] }],
      });
    const rc = routes([
      gw,
      vs('by-ns-name', 'apps', ['istio-system/public']),
      vs('by-short', 'istio-system', ['public']),
      vs('elsewhere', 'apps', ['public']),
      vs('legacy', 'apps', ['public.istio-system.svc.cluster.local']),
    ]).get('http.80')!;
    assert.deepEqual(
      rc.virtualHosts.map((v) => v.name),
      ['by-ns-name.example.com:80', 'by-short.example.com:80', 'legacy.example.com:80'],
    );
  });

  it('match gateways: a rule scoped to the gateway (short name) applies there, a mesh-only rule does not', () => {
    const gw = gateway('public', [{ port: { number: 80, name: 'http', protocol: 'HTTP' }, hosts: ['*'] }]);
    const rc = routes([
      gw,
      virtualService('reviews', 'istio-system', {
        hosts: ['reviews.example.com'],
        gateways: ['mesh', 'public'],
        http: [
          {
            name: 'mesh-only',
            match: [{ gateways: ['mesh'], uri: { prefix: '/internal' } }],
            route: [{ destination: { host: 'internal' } }],
          },
          { name: 'edge', match: [{ gateways: ['public'], uri: { prefix: '/edge' } }], route: [{ destination: { host: 'edge' } }] },
          { name: 'all', route: [{ destination: { host: 'reviews' } }] },
        ],
      }),
    ]).get('http.80')!;
    assert.deepEqual(
      rc.virtualHosts[0]!.routes.map((r) => r.name),
      ['edge', 'all'],
    );
  });

  it('httpsRedirect: bound hosts and hosts without a VirtualService require TLS', () => {
    const gw = gateway('gw', [
      { port: { number: 80, name: 'http', protocol: 'HTTP' }, hosts: [BOOKINFO, 'unbound.example.com'], tls: { httpsRedirect: true } },
    ]);
    const vhosts = routes([
      gw,
      PRODUCTPAGE,
      virtualService('bookinfo', 'istio-system', {
        hosts: [BOOKINFO],
        gateways: ['gw'],
        http: [{ route: [{ destination: { host: 'productpage.bookinfo.svc.cluster.local' } }] }],
      }),
    ]).get('http.80')!.virtualHosts;
    assert.deepEqual(
      vhosts.map((v) => [v.name, v.requireTls, v.routes.length]),
      [
        [`${BOOKINFO}:80`, VirtualHost_TlsRequirementType.ALL, 1],
        ['unbound.example.com:80', VirtualHost_TlsRequirementType.ALL, 0],
      ],
    );
  });

  it('nothing bound: istiod’s blackhole:<port> virtual host, every domain, no routes (404)', () => {
    const vh = routes([BOOKINFO_GW]).get('http.80')!.virtualHosts;
    assert.deepEqual(
      vh.map((v) => [v.name, v.domains, v.routes.length]),
      [['blackhole:80', ['*'], 0]],
    );
  });

  it('exportTo: a VirtualService exported only to its own namespace does not reach a gateway elsewhere', () => {
    const vs = virtualService('private', 'bookinfo', {
      hosts: [BOOKINFO],
      gateways: ['istio-system/bookinfo-gateway'],
      exportTo: ['.'],
      http: [{ route: [{ destination: { host: 'productpage' } }] }],
    });
    assert.equal(routes([BOOKINFO_GW, vs]).get('http.80')!.virtualHosts[0]!.name, 'blackhole:80');
  });

  it('hosts with the same routes collapse into one virtual host; VirtualServices sharing a host append their routes', () => {
    const gw = gateway('gw', [{ port: { number: 80, name: 'http', protocol: 'HTTP' }, hosts: ['*'] }]);
    const vhosts = routes([
      gw,
      virtualService('a', 'istio-system', {
        hosts: ['a.example.com', 'aa.example.com'],
        gateways: ['gw'],
        http: [{ name: 'a', match: [{ uri: { prefix: '/a' } }], route: [{ destination: { host: 'a' } }] }],
      }),
      virtualService('b', 'istio-system', {
        hosts: ['a.example.com'],
        gateways: ['gw'],
        http: [{ name: 'b-all', route: [{ destination: { host: 'b' } }] }],
      }),
      virtualService('c', 'istio-system', {
        hosts: ['c.example.com', 'cc.example.com'],
        gateways: ['gw'],
        http: [{ name: 'c-all', route: [{ destination: { host: 'c' } }] }],
      }),
    ]).get('http.80')!.virtualHosts;
    assert.deepEqual(
      vhosts.map((v) => [v.name, v.domains, v.routes.map((r) => r.name)]),
      [
        ['a.example.com:80', ['a.example.com'], ['a', 'b-all']],
        ['aa.example.com:80', ['aa.example.com'], ['a']],
        ['cc.example.com:80', ['cc.example.com', 'c.example.com'], ['c-all']],
      ],
    );
  });

  it('a requested name no server uses gets an empty configuration', () => {
    const rc = routes([BOOKINFO_GW], new Set(['http.8080'])).get('http.8080')!;
    assert.deepEqual(rc.virtualHosts, []);
  });
});
