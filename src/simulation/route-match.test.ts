import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { create } from '@bufbuild/protobuf';
import { RouteConfigurationSchema } from '../gen/envoy/config/route/v3/route_pb.js';
import {
  RedirectAction_RedirectResponseCode,
  RouteAction_ClusterNotFoundResponseCode,
  VirtualHost_TlsRequirementType,
} from '../gen/envoy/config/route/v3/route_components_pb.js';
import { formatResult, simulate, type SimRequest, type SimResult } from './index.js';
import { matchVirtualHost } from './route-match.js';
import { chain, cluster, config, hcm, listener, prefixRoute, routeConfig, type VirtualHostInit } from './test-fixtures.js';

const CLUSTERS = ['a', 'b', 'c', 'd', 'reviews-v1', 'reviews-v2', 'from-header'].map((n) =>
  cluster(n, { type: 'STATIC', endpoints: [{ ip: '10.1.0.1', port: 80 }] }),
);

/** An outbound HTTP listener on 0.0.0.0:80 using RDS `80` with these virtual hosts. */
function http(vhosts: VirtualHostInit[], rcExtra: { ignorePortInHostMatching?: boolean } = {}) {
  const c = config({
    listeners: [
      listener('virtualOutbound', '0.0.0.0', 15001, { useOriginalDst: true, chains: [] }),
      listener('0.0.0.0_80', '0.0.0.0', 80, { chains: [chain('http', [hcm({ rds: '80' })])] }),
    ],
    routes: [create(RouteConfigurationSchema, { name: '80', virtualHosts: vhosts, ...rcExtra })],
    clusters: CLUSTERS,
  });
  return (req: Partial<SimRequest>): SimResult =>
    simulate(c, { address: '10.0.0.1', port: 80, protocol: 'http', callMode: 'outbound', ...req });
}

const vh = (name: string, domains: string[], clusterName = name): VirtualHostInit => ({
  name,
  domains,
  routes: [prefixRoute('default', '/', clusterName)],
});

describe('virtual host selection', () => {
  const send = http([
    vh('a', ['*']),
    vh('b', ['*.example.com']),
    vh('c', ['*.api.example.com', 'api.example.com']),
    vh('d', ['api.*', 'reviews:80']),
  ]);

  it('prefers an exact domain over any wildcard', () => {
    assert.equal(send({ authority: 'api.example.com' }).virtualHost, 'c');
    assert.equal(send({ authority: 'reviews:80' }).virtualHost, 'd');
  });

  it('takes the longest suffix wildcard, before prefix wildcards', () => {
    assert.equal(send({ authority: 'v1.api.example.com' }).virtualHost, 'c');
    assert.equal(send({ authority: 'www.example.com' }).virtualHost, 'b');
    assert.equal(send({ authority: 'api.example.org' }).virtualHost, 'd');
    const rc = routeConfig('x', [vh('prefix', ['www.example.*']), vh('suffix', ['*.com'])]);
    assert.equal(matchVirtualHost(rc, 'www.example.com')?.name, 'suffix', 'a short suffix wildcard beats a longer prefix wildcard');
  });

  it('falls back to `*`, and compares hosts case-insensitively', () => {
    assert.equal(send({ authority: 'other' }).virtualHost, 'a');
    assert.equal(send({ authority: 'API.Example.COM' }).virtualHost, 'c');
  });

  it('a wildcard never matches the empty remainder', () => {
    const rc = routeConfig('x', [vh('b', ['*.example.com'])]);
    assert.equal(matchVirtualHost(rc, '.example.com'), undefined);
    assert.equal(matchVirtualHost(rc, 'x.example.com')?.name, 'b');
  });

  it('strips the port only with ignore_port_in_host_matching', () => {
    const vhosts = [vh('b', ['reviews'])];
    assert.equal(http(vhosts)({ authority: 'reviews:80' }).error, 'no virtual host');
    assert.equal(http(vhosts)({ authority: 'reviews:80' }).status, 404);
    assert.equal(http(vhosts, { ignorePortInHostMatching: true })({ authority: 'reviews:80' }).virtualHost, 'b');
  });

  it('defaults the authority to the destination address', () => {
    const r = http([vh('b', ['10.0.0.1'])])({});
    assert.equal(r.virtualHost, 'b', formatResult(r));
  });
});

const routeTo = (name: string, match: object, clusterName = name) => ({
  name,
  match,
  action: { case: 'route' as const, value: { clusterSpecifier: { case: 'cluster' as const, value: clusterName } } },
});

describe('route matching', () => {
  it('the first matching route wins, even when a later one is more specific', () => {
    const send = http([{ name: 'v', domains: ['*'], routes: [prefixRoute('a', '/', 'a'), prefixRoute('b', '/api', 'b')] }]);
    assert.equal(send({ path: '/api/x' }).route, 'a');
  });

  it('matches prefix, exact path, RE2 regex and separated prefix on the path without its query', () => {
    const send = http([
      {
        name: 'v',
        domains: ['*'],
        routes: [
          routeTo('a', { pathSpecifier: { case: 'path', value: '/exact' } }),
          routeTo('b', { pathSpecifier: { case: 'safeRegex', value: { regex: '/items/[0-9]+' } } }),
          routeTo('c', { pathSpecifier: { case: 'pathSeparatedPrefix', value: '/docs' } }),
          routeTo('d', { pathSpecifier: { case: 'prefix', value: '/' } }),
        ],
      },
    ]);
    assert.equal(send({ path: '/exact?x=1' }).route, 'a');
    assert.equal(send({ path: '/exact/more' }).route, 'd');
    assert.equal(send({ path: '/items/42' }).route, 'b');
    assert.equal(send({ path: '/items/42/x' }).route, 'd', 'a regex must match the whole path');
    assert.equal(send({ path: '/docs' }).route, 'c');
    assert.equal(send({ path: '/docs/a' }).route, 'c');
    assert.equal(send({ path: '/docsx' }).route, 'd');
  });

  it('honours case_sensitive: false', () => {
    const send = http([
      { name: 'v', domains: ['*'], routes: [routeTo('a', { pathSpecifier: { case: 'prefix', value: '/API' }, caseSensitive: false })] },
    ]);
    assert.equal(send({ path: '/api/v1' }).route, 'a');
    assert.equal(send({ path: '/other' }).error, 'no route');
    assert.equal(send({ path: '/other' }).status, 404);
  });

  it('matches headers: exact, prefix, suffix, contains, regex, present, absent, inverted', () => {
    const hdr = (name: string, spec: object, extra: object = {}) => ({ name, headerMatchSpecifier: spec, ...extra });
    const send = http([
      {
        name: 'v',
        domains: ['*'],
        routes: [
          routeTo(
            'a',
            {
              pathSpecifier: { case: 'prefix', value: '/' },
              headers: [hdr('end-user', { case: 'stringMatch', value: { matchPattern: { case: 'exact', value: 'jason' } } })],
            },
            'a',
          ),
          routeTo(
            'b',
            {
              pathSpecifier: { case: 'prefix', value: '/' },
              headers: [
                hdr('x-v', { case: 'safeRegexMatch', value: { regex: 'v[0-9]' } }),
                hdr(':method', { case: 'prefixMatch', value: 'PO' }),
              ],
            },
            'b',
          ),
          routeTo(
            'c',
            { pathSpecifier: { case: 'prefix', value: '/' }, headers: [hdr('x-canary', { case: 'presentMatch', value: true })] },
            'c',
          ),
          routeTo(
            'd',
            {
              pathSpecifier: { case: 'prefix', value: '/' },
              headers: [
                hdr(
                  'x-team',
                  { case: 'stringMatch', value: { matchPattern: { case: 'suffix', value: 'ops' }, ignoreCase: true } },
                  { invertMatch: true },
                ),
              ],
            },
            'd',
          ),
          routeTo(
            'reviews-v1',
            { pathSpecifier: { case: 'prefix', value: '/' }, headers: [hdr('x-debug', { case: 'presentMatch', value: false })] },
            'reviews-v1',
          ),
          routeTo('reviews-v2', { pathSpecifier: { case: 'prefix', value: '/' } }, 'reviews-v2'),
        ],
      },
    ]);
    assert.equal(send({ headers: { 'End-User': 'jason' } }).route, 'a');
    assert.equal(send({ headers: { 'x-v': 'v2' }, method: 'POST' }).route, 'b');
    assert.equal(send({ headers: { 'x-v': 'v22' }, method: 'POST' }).route, 'reviews-v1', 'a header regex must match the whole value');
    assert.equal(send({ headers: { 'x-canary': '' } }).route, 'c');
    assert.equal(send({ headers: { 'x-team': 'dev' } }).route, 'd', 'inverted suffix: dev does not end with ops');
    // A missing header fails a value matcher even inverted; `present_match: false` wants it absent.
    assert.equal(send({ headers: { 'x-team': 'SecOps', 'x-debug': '1' } }).route, 'reviews-v2');
    assert.equal(send({ headers: { 'x-team': 'SecOps' } }).route, 'reviews-v1');
  });

  it('matches query parameters', () => {
    const send = http([
      {
        name: 'v',
        domains: ['*'],
        routes: [
          routeTo('a', {
            pathSpecifier: { case: 'prefix', value: '/' },
            queryParameters: [
              {
                name: 'debug',
                queryParameterMatchSpecifier: { case: 'stringMatch', value: { matchPattern: { case: 'exact', value: 'on' } } },
              },
            ],
          }),
          routeTo('b', {
            pathSpecifier: { case: 'prefix', value: '/' },
            queryParameters: [{ name: 'trace', queryParameterMatchSpecifier: { case: 'presentMatch', value: true } }],
          }),
          routeTo('c', { pathSpecifier: { case: 'prefix', value: '/' } }),
        ],
      },
    ]);
    assert.equal(send({ path: '/x?debug=on' }).route, 'a');
    assert.equal(send({ path: '/x?debug=off&trace' }).route, 'b');
    assert.equal(send({ path: '/x' }).route, 'c');
  });
});

describe('route actions', () => {
  it('reports weighted clusters as configured and forwards to the heaviest', () => {
    const send = http([
      {
        name: 'reviews',
        domains: ['*'],
        routes: [
          {
            name: 'split',
            match: { pathSpecifier: { case: 'prefix', value: '/' } },
            action: {
              case: 'route',
              value: {
                clusterSpecifier: {
                  case: 'weightedClusters',
                  value: {
                    clusters: [
                      { name: 'reviews-v1', weight: 25 },
                      { name: 'reviews-v2', weight: 75 },
                    ],
                  },
                },
              },
            },
          },
        ],
      },
    ]);
    const r = send({});
    assert.deepEqual(r.weights, [
      { cluster: 'reviews-v1', weight: 25 },
      { cluster: 'reviews-v2', weight: 75 },
    ]);
    assert.equal(r.cluster, 'reviews-v2');
    assert.equal(r.endpoint, '10.1.0.1:80');
  });

  it('takes the cluster from cluster_header, 503 when it names no cluster', () => {
    const send = http([
      {
        name: 'v',
        domains: ['*'],
        routes: [
          {
            name: 'h',
            match: { pathSpecifier: { case: 'prefix', value: '/' } },
            action: { case: 'route', value: { clusterSpecifier: { case: 'clusterHeader', value: 'x-cluster' } } },
          },
        ],
      },
    ]);
    assert.equal(send({ headers: { 'x-cluster': 'from-header' } }).cluster, 'from-header');
    const miss = send({ headers: { 'x-cluster': 'nope' } });
    assert.equal(miss.status, 503);
    assert.match(miss.error ?? '', /unknown cluster/);
    const notFound = http([
      {
        name: 'v',
        domains: ['*'],
        routes: [
          {
            name: 'h',
            match: { pathSpecifier: { case: 'prefix', value: '/' } },
            action: {
              case: 'route',
              value: {
                clusterSpecifier: { case: 'cluster', value: 'gone' },
                clusterNotFoundResponseCode: RouteAction_ClusterNotFoundResponseCode.NOT_FOUND,
              },
            },
          },
        ],
      },
    ]);
    assert.equal(notFound({}).status, 404, 'cluster_not_found_response_code decides');
  });

  it('builds redirects: https, host, port, path, prefix rewrite, response code, strip_query', () => {
    const redirect = (name: string, prefix: string, value: object) => ({
      name,
      match: { pathSpecifier: { case: 'prefix' as const, value: prefix } },
      action: { case: 'redirect' as const, value },
    });
    const send = http([
      {
        name: 'v',
        domains: ['*'],
        routes: [
          redirect('https', '/secure', { schemeRewriteSpecifier: { case: 'httpsRedirect', value: true } }),
          redirect('move', '/old', {
            hostRedirect: 'new.example.com',
            pathRewriteSpecifier: { case: 'prefixRewrite', value: '/new' },
            responseCode: RedirectAction_RedirectResponseCode.FOUND,
          }),
          redirect('path', '/p', {
            pathRewriteSpecifier: { case: 'pathRedirect', value: '/landing' },
            portRedirect: 8443,
            stripQuery: true,
            responseCode: RedirectAction_RedirectResponseCode.PERMANENT_REDIRECT,
          }),
        ],
      },
    ]);
    assert.deepEqual(send({ authority: 'shop:80', path: '/secure/cart?id=1' }).redirect, {
      status: 301,
      location: 'https://shop/secure/cart?id=1',
    });
    const moved = send({ authority: 'shop', path: '/old/a?b=1' });
    assert.deepEqual(moved.redirect, { status: 302, location: 'http://new.example.com/new/a?b=1' });
    assert.equal(moved.status, 302);
    assert.deepEqual(send({ authority: 'shop', path: '/p?q=1' }).redirect, { status: 308, location: 'http://shop:8443/landing' });
  });

  it('answers direct responses itself', () => {
    const send = http([
      {
        name: 'v',
        domains: ['*'],
        routes: [
          {
            name: 'dr',
            match: { pathSpecifier: { case: 'prefix', value: '/' } },
            action: { case: 'directResponse', value: { status: 418 } },
          },
        ],
      },
    ]);
    const r = send({});
    assert.deepEqual(r.directResponse, { status: 418 });
    assert.equal(r.status, 418);
    assert.equal(r.cluster, undefined);
  });

  it('reports prefix, regex and host rewrites', () => {
    const rewriteRoute = (name: string, prefix: string, value: object) => ({
      name,
      match: { pathSpecifier: { case: 'prefix' as const, value: prefix } },
      action: { case: 'route' as const, value: { clusterSpecifier: { case: 'cluster' as const, value: 'a' }, ...value } },
    });
    const send = http([
      {
        name: 'v',
        domains: ['*'],
        routes: [
          rewriteRoute('prefix', '/v1/', {
            prefixRewrite: '/',
            hostRewriteSpecifier: { case: 'hostRewriteLiteral', value: 'backend.internal' },
          }),
          rewriteRoute('regex', '/users/', {
            regexRewrite: { pattern: { regex: '^/users/([^/]+)/profile$' }, substitution: '/profiles/\\1' },
          }),
        ],
      },
    ]);
    assert.deepEqual(send({ path: '/v1/items?x=1' }).rewrite, { path: '/items?x=1', host: 'backend.internal' });
    assert.deepEqual(send({ path: '/users/ann/profile' }).rewrite, { path: '/profiles/ann' });
  });

  it('vhosts requiring TLS redirect plaintext to https', () => {
    const send = http([
      { name: 'v', domains: ['*'], requireTls: VirtualHost_TlsRequirementType.ALL, routes: [prefixRoute('a', '/', 'a')] },
    ]);
    const r = send({ authority: 'shop', path: '/x' });
    assert.deepEqual(r.redirect, { status: 301, location: 'https://shop/x' });
  });
});
