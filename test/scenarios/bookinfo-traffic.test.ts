/**
 * Request cases through the bookinfo scenario's generated config, walked by
 * the traffic simulator (listener → filter chain → RBAC → route → cluster → endpoint) as Envoy
 * would. Each case names the proxy, the request, and what must result.
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { formatResult, simulate, type SimRequest, type SimResult } from '../../src/simulation/index.js';
import type { GeneratedConfig } from '../support/scenario.js';
import { generateBookinfo, type BookinfoProxy } from './bookinfo-fixture.js';

const NS = 'bookinfo';
const out = (port: number, subset: string, host: string): string => `outbound|${port}|${subset}|${host}.${NS}.svc.cluster.local`;
const REVIEWS = (subset = ''): string => out(9080, subset, 'reviews');
const RATINGS = out(9080, '', 'ratings');
const DETAILS = out(9080, '', 'details');
const PRODUCTPAGE = out(9080, '', 'productpage');
const principal = (sa: string): string => `spiffe://cluster.local/ns/${NS}/sa/bookinfo-${sa}`;

/** A plain HTTP call an app makes to a service VIP (captured to 15001). */
const http = (address: string, authority: string, extra: Partial<SimRequest> = {}): SimRequest => ({
  address,
  port: 9080,
  protocol: 'http',
  authority,
  ...extra,
});
/** A call arriving at a workload from a peer sidecar (captured to 15006). */
const inbound = (address: string, extra: Partial<SimRequest> = {}): SimRequest => ({
  address,
  port: 9080,
  protocol: 'http',
  tls: 'mtls',
  callMode: 'inbound',
  authority: 'x',
  callerIp: '10.1.0.21',
  ...extra,
});

/** Fields of the result a case checks (`undefined`: must be absent), and a substring of its error. */
type Want = { readonly [K in keyof SimResult]?: SimResult[K] | undefined } & { readonly errorIncludes?: string };

interface Case {
  readonly name: string;
  readonly proxy: BookinfoProxy;
  readonly req: SimRequest;
  readonly want: Want;
}

const cases: Case[] = [
  // Routing on the productpage sidecar (Sidecar scope: ./*, istio-system/*, external/api.external.com; REGISTRY_ONLY).
  {
    name: 'reviews: end-user jason goes to v2',
    proxy: 'productpage',
    req: http('10.0.0.11', 'reviews:9080', { headers: { 'end-user': 'jason' } }),
    want: { route: 'jason', cluster: REVIEWS('v2'), endpoint: '10.1.0.22:9080' },
  },
  {
    name: 'reviews: another user gets the 75/25 split',
    proxy: 'productpage',
    req: http('10.0.0.11', 'reviews:9080', { headers: { 'end-user': 'alice' } }),
    want: {
      route: 'split',
      weights: [
        { cluster: REVIEWS('v1'), weight: 75 },
        { cluster: REVIEWS('v3'), weight: 25 },
      ],
    },
  },
  {
    name: 'reviews: no user gets the split, heaviest v1 first',
    proxy: 'productpage',
    req: http('10.0.0.11', 'reviews'),
    want: { route: 'split', cluster: REVIEWS('v1'), endpoint: '10.1.0.21:9080' },
  },
  {
    name: 'reviews: FQDN authority',
    proxy: 'productpage',
    req: http('10.0.0.11', 'reviews.bookinfo.svc.cluster.local'),
    want: { virtualHost: 'reviews.bookinfo.svc.cluster.local:9080', route: 'split' },
  },
  {
    name: 'reviews: FQDN with port',
    proxy: 'productpage',
    req: http('10.0.0.11', 'reviews.bookinfo.svc.cluster.local:9080'),
    want: { virtualHost: 'reviews.bookinfo.svc.cluster.local:9080' },
  },
  {
    name: 'reviews: namespace-qualified short name',
    proxy: 'productpage',
    req: http('10.0.0.11', 'reviews.bookinfo'),
    want: { virtualHost: 'reviews.bookinfo.svc.cluster.local:9080' },
  },
  {
    name: 'reviews: upstream is mTLS (auto-mTLS, tlsMode istio endpoints)',
    proxy: 'productpage',
    req: http('10.0.0.11', 'reviews', { headers: { 'end-user': 'jason' } }),
    want: { upstreamTls: 'istio', upstreamSni: 'outbound_.9080_.v2_.reviews.bookinfo.svc.cluster.local' },
  },
  {
    name: 'ratings: x-fault abort injects 503',
    proxy: 'productpage',
    req: http('10.0.0.12', 'ratings', { headers: { 'x-fault': 'abort' } }),
    want: { route: 'fault-test', faultAbort: { status: 503, percent: 100 }, status: 503 },
  },
  {
    name: 'ratings: default route with retries and timeout',
    proxy: 'productpage',
    req: http('10.0.0.12', 'ratings'),
    want: { route: 'default', cluster: RATINGS, endpoint: '10.1.0.30:9080', upstreamTls: 'istio' },
  },
  {
    name: 'details: /v0/ is redirected with 301',
    proxy: 'productpage',
    req: http('10.0.0.13', 'details', { path: '/v0/books' }),
    want: { route: 'old-api', redirect: { status: 301, location: 'http://details/details/' } },
  },
  {
    name: 'details: /details is rewritten to /api/details',
    proxy: 'productpage',
    req: http('10.0.0.13', 'details', { path: '/details/1' }),
    want: { route: 'api', cluster: DETAILS, rewrite: { path: '/api/details/1' } },
  },
  {
    name: 'details: /status answered directly',
    proxy: 'productpage',
    req: http('10.0.0.13', 'details', { path: '/status' }),
    want: { route: 'maintenance', directResponse: { status: 200 }, status: 200 },
  },
  {
    name: 'details: /statusx is not the exact /status route',
    proxy: 'productpage',
    req: http('10.0.0.13', 'details', { path: '/statusx' }),
    want: { cluster: DETAILS },
  },
  {
    name: 'details: any other path goes to details',
    proxy: 'productpage',
    req: http('10.0.0.13', 'details', { path: '/' }),
    want: { cluster: DETAILS, endpoint: '10.1.0.40:9080' },
  },
  {
    name: 'productpage: no VirtualService, default route',
    proxy: 'productpage',
    req: http('10.0.0.10', 'productpage'),
    want: { route: 'default', cluster: PRODUCTPAGE },
  },
  {
    name: 'mysqldb: TCP to the VIP: own listener, TCP route to subset v1, whose DestinationRule turns mTLS off',
    proxy: 'productpage',
    req: { address: '10.0.0.14', port: 3306, protocol: 'tcp' },
    want: { listener: '10.0.0.14_3306', cluster: out(3306, 'v1', 'mysqldb'), endpoint: '10.1.0.50:3306', upstreamTls: 'none' },
  },
  {
    name: 'mysqldb: an unscoped proxy gets the same TCP route',
    proxy: 'legacy',
    req: { address: '10.0.0.14', port: 3306, protocol: 'tcp' },
    want: { cluster: out(3306, 'v1', 'mysqldb') },
  },
  {
    name: 'payments: app TLS is routed by SNI, not terminated',
    proxy: 'productpage',
    req: { address: '10.0.0.15', port: 443, protocol: 'http', tls: 'tls', sni: 'payments.bookinfo.svc.cluster.local' },
    want: { listener: '10.0.0.15_443', filterChain: 'filter_chains[0]', cluster: out(443, '', 'payments'), tlsTerminated: false },
  },
  {
    name: 'payments: its PeerAuthentication DISABLE turns auto-mTLS off (plaintext to the sidecar)',
    proxy: 'productpage',
    req: { address: '10.0.0.15', port: 443, protocol: 'tcp', tls: 'tls', sni: 'payments.bookinfo.svc.cluster.local' },
    want: { cluster: out(443, '', 'payments'), upstreamTls: 'none' },
  },
  {
    name: 'payments: an SNI no tls route names gets the outbound policy (blackhole)',
    proxy: 'productpage',
    req: { address: '10.0.0.15', port: 443, protocol: 'http', tls: 'tls', sni: 'other.example.com' },
    want: { cluster: 'BlackHoleCluster' },
  },
  {
    name: 'REGISTRY_ONLY: non-HTTP bytes to an HTTP port are blackholed',
    proxy: 'productpage',
    req: { address: '10.0.0.11', port: 9080, protocol: 'tcp' },
    want: { listener: '0.0.0.0_9080', cluster: 'BlackHoleCluster' },
  },
  {
    name: 'ALLOW_ANY: non-HTTP bytes to an HTTP port pass through',
    proxy: 'legacy',
    req: { address: '10.0.0.11', port: 9080, protocol: 'tcp' },
    want: { listener: '0.0.0.0_9080', cluster: 'PassthroughCluster', endpoint: '10.0.0.11:9080' },
  },
  {
    name: 'a Host with another port still finds the service (ports ignored in host matching)',
    proxy: 'productpage',
    req: http('10.0.0.11', 'reviews:8080'),
    want: { virtualHost: 'reviews.bookinfo.svc.cluster.local:9080' },
  },
  {
    name: 'external API: TLS originated with its SNI',
    proxy: 'productpage',
    req: { address: '93.184.216.34', port: 80, protocol: 'http', authority: 'api.external.com' },
    want: {
      cluster: 'outbound|80||api.external.com',
      upstreamTls: 'tls',
      upstreamSni: 'api.external.com',
      endpoint: 'api.external.com:443',
    },
  },
  {
    name: 'REGISTRY_ONLY: unknown host on a known port is blocked',
    proxy: 'productpage',
    req: http('10.0.0.11', 'unknown.example.com'),
    want: { virtualHost: 'block_all', status: 502 },
  },
  {
    name: 'REGISTRY_ONLY: a service outside the scope is blackholed',
    proxy: 'productpage',
    req: { address: '10.0.1.10', port: 8000, protocol: 'http', authority: 'legacy.other.svc.cluster.local:8000' },
    want: { listener: 'virtualOutbound', cluster: 'BlackHoleCluster', status: 503 },
  },
  {
    name: 'REGISTRY_ONLY: unknown TCP destination is blackholed',
    proxy: 'productpage',
    req: { address: '1.2.3.4', port: 5432, protocol: 'tcp' },
    want: { listener: 'virtualOutbound', cluster: 'BlackHoleCluster' },
  },

  // The legacy proxy in `other`: no Sidecar, ALLOW_ANY, the whole mesh visible.
  {
    name: 'ALLOW_ANY: unknown TCP destination passes through',
    proxy: 'legacy',
    req: { address: '1.2.3.4', port: 5432, protocol: 'tcp' },
    want: { listener: 'virtualOutbound', cluster: 'PassthroughCluster', endpoint: '1.2.3.4:5432' },
  },
  {
    name: 'ALLOW_ANY: unknown host on a known HTTP port passes through',
    proxy: 'legacy',
    req: http('10.9.9.9', 'unknown.example.com'),
    want: { virtualHost: 'allow_any', cluster: 'PassthroughCluster' },
  },
  {
    name: 'unscoped proxy sees bookinfo reviews and its split',
    proxy: 'legacy',
    req: http('10.0.0.11', 'reviews.bookinfo'),
    want: { route: 'split', cluster: REVIEWS('v1') },
  },
  {
    name: 'unscoped proxy reaches the legacy service, with mTLS from its ISTIO_MUTUAL DestinationRule',
    proxy: 'legacy',
    req: { address: '10.0.1.10', port: 8000, protocol: 'http', authority: 'legacy:8000' },
    want: {
      cluster: 'outbound|8000||legacy.other.svc.cluster.local',
      endpoint: '10.1.1.10:8000',
      upstreamTls: 'istio',
      upstreamSni: 'outbound_.8000_._.legacy.other.svc.cluster.local',
    },
  },

  // Inbound on ratings: STRICT namespace, PERMISSIVE on 9080; ALLOW only reviews' GETs.
  {
    name: 'ratings inbound: reviews GET over mTLS is allowed',
    proxy: 'ratings',
    req: inbound('10.1.0.30', { method: 'GET', callerPrincipal: principal('reviews') }),
    want: { listener: 'virtualInbound', rbac: 'allow', cluster: 'inbound|9080||', endpoint: '10.1.0.30:9080', tlsTerminated: true },
  },
  {
    name: 'ratings inbound: reviews POST is denied (403)',
    proxy: 'ratings',
    req: inbound('10.1.0.30', { method: 'POST', callerPrincipal: principal('reviews') }),
    want: { rbac: 'deny', status: 403 },
  },
  {
    name: 'ratings inbound: productpage is not allowed (403)',
    proxy: 'ratings',
    req: inbound('10.1.0.30', { method: 'GET', callerPrincipal: principal('productpage') }),
    want: { rbac: 'deny', status: 403 },
  },
  {
    name: 'ratings inbound: plaintext accepted on the PERMISSIVE port, then denied (no principal)',
    proxy: 'ratings',
    req: inbound('10.1.0.30', { tls: 'none', method: 'GET' }),
    want: { tlsTerminated: false, rbac: 'deny', status: 403 },
  },

  // Inbound on details: STRICT; DENY /admin*.
  {
    name: 'details inbound: /admin is denied',
    proxy: 'details',
    req: inbound('10.1.0.40', { path: '/admin/users', callerPrincipal: principal('productpage') }),
    want: { rbac: 'deny', status: 403 },
  },
  {
    name: 'details inbound: /details is allowed, to the loopback defaultEndpoint of its Sidecar ingress',
    proxy: 'details',
    req: inbound('10.1.0.40', { path: '/details/1', callerPrincipal: principal('productpage') }),
    want: { cluster: 'inbound|9080||', endpoint: '127.0.0.1:8080', tlsTerminated: true },
  },
  {
    name: 'details outbound: its own Sidecar does not import the external API (port 80 is known, the host is not)',
    proxy: 'details',
    req: { address: '93.184.216.34', port: 80, protocol: 'http', authority: 'api.external.com' },
    want: { virtualHost: 'block_all', status: 502 },
  },
  {
    name: 'details inbound: STRICT refuses plaintext',
    proxy: 'details',
    req: inbound('10.1.0.40', { tls: 'none', path: '/details/1' }),
    want: { cluster: undefined, errorIncludes: 'no matching filter chain' },
  },

  // Inbound on reviews: STRICT, no authorization policy.
  {
    name: 'reviews inbound: mTLS goes to the app',
    proxy: 'reviews-v1',
    req: inbound('10.1.0.21', { callerPrincipal: principal('productpage') }),
    want: { cluster: 'inbound|9080||', tlsTerminated: true },
  },
  {
    name: 'reviews inbound: STRICT refuses plaintext HTTP',
    proxy: 'reviews-v1',
    req: inbound('10.1.0.21', { tls: 'none' }),
    want: { cluster: undefined, errorIncludes: 'no matching filter chain' },
  },
  {
    name: 'reviews inbound: mTLS TCP to an undeclared port passes through',
    proxy: 'reviews-v1',
    req: inbound('10.1.0.21', { port: 7070, protocol: 'tcp', callerPrincipal: principal('productpage') }),
    want: { cluster: 'InboundPassthroughCluster', endpoint: '10.1.0.21:7070' },
  },
  {
    name: 'reviews inbound: STRICT refuses plaintext to an undeclared port',
    proxy: 'reviews-v1',
    req: inbound('10.1.0.21', { port: 7070, protocol: 'tcp', tls: 'none' }),
    want: { cluster: undefined, errorIncludes: 'no matching filter chain' },
  },
  {
    name: 'reviews inbound: traffic to 15006 itself is blackholed',
    proxy: 'reviews-v1',
    req: inbound('10.1.0.21', { port: 15006, protocol: 'tcp', tls: 'none' }),
    want: { cluster: 'BlackHoleCluster' },
  },

  // The ingress gateway: 80 → 8080 redirect, 443 → 8443 TLS terminated with the credential.
  {
    name: 'gateway: HTTP is redirected to HTTPS',
    proxy: 'ingress-gateway',
    req: { address: '10.2.0.1', port: 8080, listenerPort: 8080, protocol: 'http', authority: 'bookinfo.example.com', path: '/productpage' },
    want: { listener: '0.0.0.0_8080', redirect: { status: 301, location: 'https://bookinfo.example.com/productpage' } },
  },
  {
    name: 'gateway: HTTPS /productpage goes to productpage',
    proxy: 'ingress-gateway',
    req: {
      address: '10.2.0.1',
      port: 8443,
      listenerPort: 8443,
      protocol: 'http',
      tls: 'tls',
      authority: 'bookinfo.example.com',
      path: '/productpage',
    },
    want: { listener: '0.0.0.0_8443', tlsTerminated: true, cluster: PRODUCTPAGE, endpoint: '10.1.0.10:9080', upstreamTls: 'istio' },
  },
  {
    name: 'gateway: HTTPS /static/* goes to productpage',
    proxy: 'ingress-gateway',
    req: {
      address: '10.2.0.1',
      port: 8443,
      listenerPort: 8443,
      protocol: 'http',
      tls: 'tls',
      authority: 'bookinfo.example.com',
      path: '/static/app.css',
    },
    want: { cluster: PRODUCTPAGE },
  },
  {
    name: 'gateway: HTTPS path no route matches is 404',
    proxy: 'ingress-gateway',
    req: {
      address: '10.2.0.1',
      port: 8443,
      listenerPort: 8443,
      protocol: 'http',
      tls: 'tls',
      authority: 'bookinfo.example.com',
      path: '/admin',
    },
    want: { status: 404 },
  },
  {
    name: 'gateway: plaintext into the HTTPS port fails',
    proxy: 'ingress-gateway',
    req: { address: '10.2.0.1', port: 8443, listenerPort: 8443, protocol: 'http', tls: 'none', authority: 'bookinfo.example.com' },
    want: { cluster: undefined, errorIncludes: 'no matching filter chain' },
  },
  {
    name: 'gateway: another host on HTTP gets 404',
    proxy: 'ingress-gateway',
    req: { address: '10.2.0.1', port: 8080, listenerPort: 8080, protocol: 'http', authority: 'evil.example.com' },
    want: { status: 404 },
  },
];

let configs: Map<string, GeneratedConfig>;
before(async () => {
  configs = await generateBookinfo();
});

/** Compares only the fields a case names; `undefined` in `want` means the field must be absent. */
function check(got: SimResult, want: Want, label: string): void {
  const { errorIncludes, ...fields } = want;
  if (errorIncludes !== undefined)
    assert.ok(got.error?.includes(errorIncludes), `${label}: error should include "${errorIncludes}"\n  got: ${formatResult(got)}`);
  for (const [k, v] of Object.entries(fields)) {
    assert.deepEqual((got as Record<string, unknown>)[k], v, `${label}: ${k}\n  got: ${formatResult(got)}`);
  }
}

describe('bookinfo scenario: traffic simulation', () => {
  test('the corpus has at least 40 cases', () => assert.ok(cases.length >= 40, `${cases.length} cases`));
  for (const c of cases) {
    test(`${c.proxy}: ${c.name}`, () => {
      const got = simulate(configs.get(c.proxy)!, c.req);
      check(got, c.want, c.name);
    });
  }
});
