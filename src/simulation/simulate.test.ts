import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FractionalPercent_DenominatorType } from '../gen/envoy/type/v3/percent_pb.js';
import { HTTPFaultSchema } from '../gen/envoy/extensions/filters/http/fault/v3/fault_pb.js';
import { JwtAuthenticationSchema } from '../gen/envoy/extensions/filters/http/jwt_authn/v3/config_pb.js';
import { RBACPerRouteSchema } from '../gen/envoy/extensions/filters/http/rbac/v3/rbac_pb.js';
import { SniClusterSchema } from '../gen/envoy/extensions/filters/network/sni_cluster/v3/sni_cluster_pb.js';
import { DownstreamTlsContextSchema } from '../gen/envoy/extensions/transport_sockets/tls/v3/tls_pb.js';
import { packAny } from '../networking/common.js';
import { inboundChainVariants, inboundTlsContext } from '../networking/policy/index.js';
import { formatResult, simulate, type SimRequest } from './index.js';
import {
  assignment,
  chain,
  cluster,
  config,
  hcm,
  httpRbac,
  listener,
  permission,
  policy,
  prefixRoute,
  principal,
  routeConfig,
  tcpProxy,
  upstreamTls,
  type HttpFilterInit,
} from './test-fixtures.js';

const MTLS_ALPNS = ['istio', 'istio-peer-exchange', 'istio-http/1.0', 'istio-http/1.1', 'istio-h2'];
const inboundVhosts = [{ name: 'inbound|http|8080', domains: ['*'], routes: [prefixRoute('default', '/', 'inbound|8080||')] }];

/** virtualInbound with istiod's PERMISSIVE (or STRICT) chains for an HTTP port 8080. */
function inbound(mode: 'PERMISSIVE' | 'STRICT', httpFilters: HttpFilterInit[] = []) {
  const chains = [
    chain(
      'inbound|8080||',
      [hcm({ vhosts: inboundVhosts, httpFilters })],
      { destinationPort: 8080, transportProtocol: 'tls', ...(mode === 'PERMISSIVE' ? { applicationProtocols: MTLS_ALPNS } : {}) },
      'mtls',
    ),
  ];
  if (mode === 'PERMISSIVE')
    chains.push(
      chain('inbound|8080||-plaintext', [hcm({ vhosts: inboundVhosts, httpFilters })], {
        destinationPort: 8080,
        transportProtocol: 'raw_buffer',
      }),
    );
  return config({
    listeners: [listener('virtualInbound', '0.0.0.0', 15006, { inspectors: ['tls', 'http'], chains })],
    clusters: [cluster('inbound|8080||', { type: 'ORIGINAL_DST' })],
  });
}

const IN: SimRequest = { address: '10.0.0.5', port: 8080, protocol: 'http', callMode: 'inbound' };

describe('inbound TLS', () => {
  it('PERMISSIVE: mesh mTLS terminates on the TLS chain, plaintext takes the plaintext chain', () => {
    const c = inbound('PERMISSIVE');
    const m = simulate(c, { ...IN, tls: 'mtls' });
    assert.equal(m.filterChain, 'inbound|8080||', formatResult(m));
    assert.equal(m.tlsTerminated, true);
    assert.equal(m.endpoint, '10.0.0.5:8080');
    const p = simulate(c, { ...IN, tls: 'none' });
    assert.equal(p.filterChain, 'inbound|8080||-plaintext');
    assert.equal(p.tlsTerminated, false);
  });

  it("STRICT: plaintext finds no chain; the app's own TLS has no client certificate", () => {
    const c = inbound('STRICT');
    assert.equal(simulate(c, { ...IN, tls: 'none' }).error, 'no matching filter chain');
    assert.match(simulate(c, { ...IN, tls: 'tls' }).error ?? '', /requires a client certificate/);
    assert.equal(simulate(c, { ...IN, tls: 'mtls' }).cluster, 'inbound|8080||');
  });

  it("a mesh peer rejects a gateway's own certificate; plaintext fails the handshake", () => {
    const c = config({
      listeners: [listener('gw', '0.0.0.0', 443, { chains: [chain('https', [hcm({ vhosts: inboundVhosts })], undefined, 'simple')] })],
      clusters: [cluster('inbound|8080||', { type: 'ORIGINAL_DST' })],
    });
    const gw: SimRequest = { address: '1.2.3.4', port: 443, listenerPort: 443, protocol: 'http' };
    assert.match(simulate(c, { ...gw, tls: 'mtls' }).error ?? '', /not a mesh identity/);
    assert.match(simulate(c, { ...gw, tls: 'none' }).error ?? '', /handshake/);
    assert.equal(simulate(c, { ...gw, tls: 'tls' }).tlsTerminated, true);
  });

  it('TLS or TCP bytes into an HTTP connection manager are a protocol error', () => {
    const c = config({ listeners: [listener('0.0.0.0_80', '0.0.0.0', 80, { chains: [chain('http', [hcm({ vhosts: inboundVhosts })])] })] });
    assert.match(
      simulate(c, { address: '1.1.1.1', port: 80, listenerPort: 80, protocol: 'http', tls: 'tls' }).error ?? '',
      /protocol error: TLS/,
    );
    assert.match(simulate(c, { address: '1.1.1.1', port: 80, listenerPort: 80, protocol: 'tcp' }).error ?? '', /protocol error: non-HTTP/);
    assert.match(simulate(c, { address: '1.1.1.1', port: 80, listenerPort: 80, protocol: 'http', alpn: ['h2'] }).error ?? '', /ALPN/);
  });
});

describe('outbound HTTP', () => {
  const c = config({
    listeners: [
      listener('virtualOutbound', '0.0.0.0', 15001, {
        useOriginalDst: true,
        chains: [chain('virtualOutbound-catchall-tcp', [tcpProxy('PassthroughCluster')])],
      }),
      listener('0.0.0.0_9080', '0.0.0.0', 9080, { chains: [chain('', [hcm({ rds: '9080' })])] }),
      listener('0.0.0.0_8000', '0.0.0.0', 8000, { chains: [chain('', [hcm({ rds: 'missing' })])] }),
    ],
    routes: [
      routeConfig('9080', [
        {
          name: 'reviews.default.svc.cluster.local:9080',
          domains: ['reviews.default.svc.cluster.local', 'reviews', 'reviews:9080'],
          routes: [prefixRoute('default', '/', 'outbound|9080||reviews.default.svc.cluster.local')],
        },
      ]),
    ],
    clusters: [
      cluster('outbound|9080||reviews.default.svc.cluster.local', {
        serviceName: 'outbound|9080||reviews.default.svc.cluster.local',
        matches: [{ name: 'tlsMode-istio', match: { tlsMode: 'istio' }, transportSocket: upstreamTls('istio') }],
      }),
      cluster('PassthroughCluster', { type: 'ORIGINAL_DST' }),
    ],
    endpoints: [assignment('outbound|9080||reviews.default.svc.cluster.local', [{ ip: '10.8.0.3', port: 9080, tlsMode: 'istio' }])],
  });

  it('routes by Host over RDS to the EDS endpoint with Istio mTLS', () => {
    const r = simulate(c, { address: '10.96.0.20', port: 9080, protocol: 'http', authority: 'reviews:9080', callMode: 'outbound' });
    assert.deepEqual(
      {
        listener: r.listener,
        chain: r.filterChain,
        rds: r.routeConfig,
        vh: r.virtualHost,
        route: r.route,
        cluster: r.cluster,
        ep: r.endpoint,
        tls: r.upstreamTls,
      },
      {
        listener: '0.0.0.0_9080',
        chain: 'filter_chains[0]',
        rds: '9080',
        vh: 'reviews.default.svc.cluster.local:9080',
        route: 'default',
        cluster: 'outbound|9080||reviews.default.svc.cluster.local',
        ep: '10.8.0.3:9080',
        tls: 'istio',
      },
    );
    assert.equal(
      formatResult(r),
      'listener=0.0.0.0_9080 chain=filter_chains[0] rds=9080 vhost=reviews.default.svc.cluster.local:9080 route=default cluster=outbound|9080||reviews.default.svc.cluster.local endpoint=10.8.0.3:9080 upstreamTls=istio',
    );
  });

  it('404s an unknown host (Envoy NR) and a route config it never received', () => {
    const nr = simulate(c, { address: '10.96.0.20', port: 9080, protocol: 'http', authority: 'ratings:9080', callMode: 'outbound' });
    assert.equal(nr.status, 404);
    assert.equal(nr.error, 'no virtual host');
    const missing = simulate(c, { address: '10.96.0.21', port: 8000, protocol: 'http', callMode: 'outbound' });
    assert.equal(missing.status, 404);
    assert.match(missing.error ?? '', /unknown route config "missing"/);
  });
});

const jwtFilter = (requirement: object, audiences: string[] = []): HttpFilterInit => ({
  name: 'envoy.filters.http.jwt_authn',
  configType: {
    case: 'typedConfig',
    value: packAny(JwtAuthenticationSchema, {
      providers: { p: { issuer: 'https://issuer.example', audiences, payloadInMetadata: 'payload' } },
      rules: [{ match: { pathSpecifier: { case: 'prefix', value: '/' } }, requirementType: { case: 'requires', value: requirement } }],
    }),
  },
});
const ALLOW_MISSING = {
  requiresType: {
    case: 'requiresAny',
    value: {
      requirements: [{ requiresType: { case: 'providerName', value: 'p' } }, { requiresType: { case: 'allowMissing', value: {} } }],
    },
  },
};

describe('jwt_authn', () => {
  const MTLS: SimRequest = { ...IN, tls: 'mtls' };

  it('a required provider rejects a request without a token (401)', () => {
    const r = simulate(inbound('STRICT', [jwtFilter({ requiresType: { case: 'providerName', value: 'p' } })]), MTLS);
    assert.equal(r.status, 401);
    assert.equal(r.cluster, undefined);
    assert.equal(
      simulate(inbound('STRICT', [jwtFilter({ requiresType: { case: 'providerName', value: 'p' } })]), {
        ...MTLS,
        jwtClaims: { iss: 'https://issuer.example' },
      }).status,
      undefined,
    );
  });

  it('allow_missing passes no token and a token of another issuer, not a token it rejects', () => {
    const c = inbound('STRICT', [jwtFilter(ALLOW_MISSING, ['bookstore'])]);
    assert.equal(simulate(c, MTLS).cluster, 'inbound|8080||');
    assert.equal(simulate(c, { ...MTLS, jwtClaims: { iss: 'https://other.example' } }).cluster, 'inbound|8080||');
    assert.equal(simulate(c, { ...MTLS, jwtClaims: { iss: 'https://issuer.example', aud: ['bookstore', 'x'] } }).cluster, 'inbound|8080||');
    assert.equal(simulate(c, { ...MTLS, jwtClaims: { iss: 'https://issuer.example', aud: 'other' } }).status, 403, 'audience not allowed');
  });
});

describe('per-route filter config and faults', () => {
  const faulty = (numerator: number) => ({
    ...prefixRoute('faulty', '/', 'inbound|8080||'),
    typedPerFilterConfig: {
      'envoy.filters.http.fault': packAny(HTTPFaultSchema, {
        abort: {
          errorType: { case: 'httpStatus', value: 503 },
          percentage: { numerator, denominator: FractionalPercent_DenominatorType.HUNDRED },
        },
      }),
      'envoy.filters.http.rbac': packAny(RBACPerRouteSchema, {}),
    },
  });
  const withRoute = (route: ReturnType<typeof faulty>) =>
    config({
      listeners: [
        listener('0.0.0.0_80', '0.0.0.0', 80, {
          chains: [
            chain('http', [
              hcm({
                vhosts: [{ name: 'v', domains: ['*'], routes: [route] }],
                httpFilters: [
                  httpRbac('ALLOW', { nobody: policy([permission.any()], [principal.authenticated('spiffe://x/none')]) }),
                  { name: 'envoy.filters.http.fault', configType: { case: 'typedConfig', value: packAny(HTTPFaultSchema, {}) } },
                ],
              }),
            ]),
          ],
        }),
      ],
      clusters: [cluster('inbound|8080||', { type: 'ORIGINAL_DST' })],
    });

  it('a 100% abort answers with its status; a partial one is reported and the request forwarded', () => {
    const full = simulate(withRoute(faulty(100)), { address: '1.1.1.1', port: 80, listenerPort: 80, protocol: 'http' });
    assert.equal(full.status, 503, formatResult(full));
    assert.deepEqual(full.faultAbort, { status: 503, percent: 100 });
    assert.equal(full.error, 'fault abort');
    const half = simulate(withRoute(faulty(50)), { address: '1.1.1.1', port: 80, listenerPort: 80, protocol: 'http' });
    assert.deepEqual(half.faultAbort, { status: 503, percent: 50 });
    assert.equal(half.status, undefined);
    assert.equal(half.cluster, 'inbound|8080||');
  });

  it('an RBACPerRoute without rules switches RBAC off for the route', () => {
    const r = simulate(withRoute(faulty(0)), { address: '1.1.1.1', port: 80, listenerPort: 80, protocol: 'http' });
    assert.equal(r.rbac, 'none');
    assert.equal(r.cluster, 'inbound|8080||');
    const plain = simulate(withRoute(prefixRoute('plain', '/', 'inbound|8080||') as ReturnType<typeof faulty>), {
      address: '1.1.1.1',
      port: 80,
      listenerPort: 80,
      protocol: 'http',
    });
    assert.equal(plain.status, 403);
  });
});

describe('gateway SNI', () => {
  it('terminates TLS by SNI and routes the request; sni_cluster sends passthrough by SNI', () => {
    const sniCluster = {
      name: 'envoy.filters.network.sni_cluster',
      configType: { case: 'typedConfig' as const, value: packAny(SniClusterSchema, {}) },
    };
    const c = config({
      listeners: [
        listener('0.0.0.0_8443', '0.0.0.0', 8443, {
          inspectors: ['tls'],
          chains: [
            chain(
              'shop',
              [hcm({ vhosts: [{ name: 'shop.example.com:443', domains: ['shop.example.com'], routes: [prefixRoute('r', '/', 'shop')] }] })],
              { serverNames: ['shop.example.com'] },
              'simple',
            ),
            chain('passthrough', [sniCluster, tcpProxy('unused')], { serverNames: ['*.mesh.internal'] }),
          ],
        }),
      ],
      clusters: [
        cluster('shop', { type: 'STATIC', endpoints: [{ ip: '10.6.0.1', port: 8080 }] }),
        cluster('outbound_.9080_._.db.mesh.internal', { type: 'STATIC', endpoints: [{ ip: '10.6.0.2', port: 9080 }] }),
      ],
    });
    const https = simulate(c, {
      address: '1.2.3.4',
      port: 443,
      listenerPort: 8443,
      protocol: 'http',
      tls: 'tls',
      authority: 'shop.example.com',
    });
    assert.equal(https.filterChain, 'shop', formatResult(https));
    assert.equal(https.endpoint, '10.6.0.1:8080');
    const pass = simulate(c, {
      address: '1.2.3.4',
      port: 443,
      listenerPort: 8443,
      protocol: 'tcp',
      tls: 'tls',
      sni: 'outbound_.9080_._.db.mesh.internal',
    });
    assert.equal(pass.cluster, 'outbound_.9080_._.db.mesh.internal');
    assert.equal(pass.tlsTerminated, false);
    assert.equal(
      simulate(c, { address: '1.2.3.4', port: 443, listenerPort: 8443, protocol: 'http', tls: 'tls', authority: 'other.example.com' })
        .error,
      'no matching filter chain',
    );
  });
});

describe("against meshpilot's inbound chain variants", () => {
  // The chains buildInboundListener lays out for a sniffed (`auto`) port under PERMISSIVE.
  const chains = inboundChainVariants('PERMISSIVE', 'auto').map((v, i) => {
    const name = `${v.http ? 'http' : 'tcp'}-${v.tls ? 'mtls' : 'plain'}-${i}`;
    return {
      name,
      filterChainMatch: { ...v.match, destinationPort: 8080 },
      ...(v.tls
        ? {
            transportSocket: {
              name: 'envoy.transport_sockets.tls',
              configType: {
                case: 'typedConfig' as const,
                value: packAny(
                  DownstreamTlsContextSchema,
                  inboundTlsContext({ trustDomain: 'cluster.local', protocol: v.http ? 'http' : 'tcp' }),
                ),
              },
            },
          }
        : {}),
      filters: v.http ? [hcm({ vhosts: inboundVhosts })] : [tcpProxy('inbound|8080||')],
    };
  });
  const c = config({
    listeners: [listener('virtualInbound', '0.0.0.0', 15006, { inspectors: ['tls', 'http'], chains })],
    clusters: [cluster('inbound|8080||', { type: 'ORIGINAL_DST' })],
  });
  const chainFor = (req: Partial<SimRequest>): string | undefined => {
    const r = simulate(c, { ...IN, ...req });
    assert.equal(r.cluster, 'inbound|8080||', formatResult(r));
    return r.filterChain;
  };

  it('sends each kind of traffic to the chain istiod meant for it', () => {
    assert.equal(chainFor({ tls: 'mtls', protocol: 'http' }), 'http-mtls-0');
    assert.equal(chainFor({ tls: 'mtls', protocol: 'http2' }), 'http-mtls-0');
    assert.equal(chainFor({ tls: 'none', protocol: 'http' }), 'http-plain-1');
    assert.equal(chainFor({ tls: 'mtls', protocol: 'tcp' }), 'tcp-mtls-2');
    assert.equal(chainFor({ tls: 'none', protocol: 'tcp' }), 'tcp-plain-3');
    assert.equal(chainFor({ tls: 'tls', protocol: 'http' }), 'tcp-plain-4', "the app's own TLS passes through untouched");
  });
});
