import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { create } from '@bufbuild/protobuf';
import { RouteConfigurationSchema } from '../../gen/envoy/config/route/v3/route_pb.js';
import { FilterChainMatchSchema } from '../../gen/envoy/config/listener/v3/listener_components_pb.js';
import { describeManagement, parseSubsetKey } from './istio-metadata.js';
import { describeFilterChainMatch } from './listener-format.js';
import { describeRouteDomains, formatRoutes, sortRoutes } from './route-format.js';

describe('istioctl describe helpers', () => {
  it('DESTINATION RULE / VIRTUAL SERVICE: <name>.<namespace> from filter_metadata.istio.config', () => {
    const md = (config: string): Parameters<typeof describeManagement>[0] => ({
      $typeName: 'envoy.config.core.v3.Metadata',
      filterMetadata: { istio: { config } },
      typedFilterMetadata: {},
    });
    assert.equal(describeManagement(md('/apis/networking.istio.io/v1/namespaces/bookinfo/virtual-service/reviews')), 'reviews.bookinfo');
    assert.equal(describeManagement(md('/apis/other/v1/x')), '<unknown>');
    assert.equal(describeManagement(md('/apis/networking.istio.io/v1/short')), '');
    assert.equal(describeManagement(undefined), '');
  });

  it('DOMAINS: portless, shortened, two then "+ N more..."', () => {
    assert.equal(
      describeRouteDomains([
        'reviews.bookinfo.svc.cluster.local',
        'reviews.bookinfo.svc.cluster.local:9080',
        'reviews',
        'reviews:9080',
        'reviews.bookinfo.svc',
        'reviews.bookinfo',
        '10.0.0.5',
      ]),
      'reviews, reviews.bookinfo + 1 more...',
    );
    assert.equal(describeRouteDomains(['*']), '*');
    assert.equal(describeRouteDomains(['a:80', '[fd00:10:96::7fc7]', '[fd00:10:96::7fc7]:8090']), '[fd00:10:96::7fc7]');
    assert.equal(describeRouteDomains([]), '');
  });

  it('MATCH of a filter chain: SNI, transport, named ALPN sets, address/port', () => {
    assert.equal(describeFilterChainMatch(undefined), 'ALL');
    assert.equal(
      describeFilterChainMatch(
        create(FilterChainMatchSchema, {
          transportProtocol: 'tls',
          applicationProtocols: ['istio-peer-exchange', 'istio'],
          destinationPort: 9080,
        }),
      ),
      'Trans: tls; App: TCP TLS; Addr: *:9080',
    );
    assert.equal(
      describeFilterChainMatch(
        create(FilterChainMatchSchema, { serverNames: ['a', 'b'], prefixRanges: [{ addressPrefix: '10.0.0.0', prefixLen: 8 }] }),
      ),
      'SNI: a,b; Addr: 10.0.0.0/8',
    );
  });

  it('routes: numeric names in numeric order, a vhost without routes reads /* → 404, VIRTUAL SERVICE from route metadata', () => {
    const rc = (name: string, extra: object = {}) => create(RouteConfigurationSchema, { name, ...extra });
    assert.deepEqual(
      sortRoutes([rc('9080'), rc('http.8080'), rc('80'), rc('443')]).map((r) => r.name),
      ['80', '443', '9080', 'http.8080'],
    );
    const text = formatRoutes([
      rc('80', {
        virtualHosts: [
          { name: 'empty', domains: ['x'] },
          {
            name: 'vs',
            domains: ['*'],
            routes: [
              {
                match: { pathSpecifier: { case: 'prefix', value: '/api' } },
                metadata: { filterMetadata: { istio: { config: '/apis/networking.istio.io/v1/namespaces/ns1/virtual-service/vs1' } } },
              },
            ],
          },
        ],
      }),
    ]);
    assert.deepEqual(
      text
        .trimEnd()
        .split('\n')
        .slice(1)
        .map((l) => l.split(/ {2,}/)),
      [
        ['80', 'empty', 'x', '/*', '404'],
        ['80', 'vs', '*', '/api*', 'vs1.ns1'],
      ],
    );
  });

  it("parseSubsetKey is Istio's lenient one", () => {
    assert.deepEqual(parseSubsetKey('inbound|9080||'), { direction: 'inbound', port: 9080, subset: '', host: '' });
    assert.deepEqual(parseSubsetKey('outbound|x|v1|h'), { direction: 'outbound', port: 0, subset: 'v1', host: 'h' });
  });
});
