import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fromBinary, toBinary } from '@bufbuild/protobuf';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import { TrafficDirection } from '../../gen/envoy/config/core/v3/base_pb.js';
import type { FilterChain } from '../../gen/envoy/config/listener/v3/listener_components_pb.js';
import { ListenerSchema, type Listener } from '../../gen/envoy/config/listener/v3/listener_pb.js';
import { HttpConnectionManagerSchema } from '../../gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager_pb.js';
import { TcpProxySchema } from '../../gen/envoy/extensions/filters/network/tcp_proxy/v3/tcp_proxy_pb.js';
import { TlsParameters_TlsProtocol } from '../../gen/envoy/extensions/transport_sockets/tls/v3/common_pb.js';
import { DownstreamTlsContextSchema, type DownstreamTlsContext } from '../../gen/envoy/extensions/transport_sockets/tls/v3/tls_pb.js';
import { buildGatewayListeners } from './gateway-listeners.js';
import { contextFor, gateway, router, serviceEntry, virtualService } from '../../../test/support/networking/gateway-fixtures.js';

const BOOKINFO = 'bookinfo.example.com';

/** Encode and decode through Envoy's Listener schema, as a real client would receive it. */
function listeners(objects: Record<string, unknown>[], proxy = router()): Map<string, Listener> {
  const out = buildGatewayListeners(contextFor(objects, proxy)).map((l) => fromBinary(ListenerSchema, toBinary(ListenerSchema, l)));
  return new Map(out.map((l) => [l.name, l]));
}

function hcmOf(chain: FilterChain) {
  const f = chain.filters.find((x) => x.name === 'envoy.filters.network.http_connection_manager');
  assert.ok(f && f.configType.case === 'typedConfig', 'chain has an HCM');
  return anyUnpack(f.configType.value, HttpConnectionManagerSchema)!;
}

function rdsOf(chain: FilterChain): string {
  const hcm = hcmOf(chain);
  assert.equal(hcm.routeSpecifier.case, 'rds');
  return hcm.routeSpecifier.value.routeConfigName;
}

function tlsOf(chain: FilterChain): DownstreamTlsContext {
  assert.equal(chain.transportSocket?.name, 'envoy.transport_sockets.tls');
  const ts = chain.transportSocket.configType;
  assert.equal(ts.case, 'typedConfig');
  return anyUnpack(ts.value, DownstreamTlsContextSchema)!;
}

function tcpProxyOf(chain: FilterChain) {
  const f = chain.filters.find((x) => x.name === 'envoy.filters.network.tcp_proxy');
  assert.ok(f && f.configType.case === 'typedConfig', 'chain has a tcp_proxy');
  return anyUnpack(f.configType.value, TcpProxySchema)!;
}

const httpServer = (hosts: string[], port = 80, name = 'http', extra: Record<string, unknown> = {}) => ({
  port: { number: port, name, protocol: 'HTTP' },
  hosts,
  ...extra,
});
const httpsServer = (hosts: string[], tls: Record<string, unknown>, port = 443, name = 'https') => ({
  port: { number: port, name, protocol: 'HTTPS' },
  hosts,
  tls,
});

describe('gateway listeners', () => {
  it('HTTP: one 0.0.0.0_<port> listener, OUTBOUND, one HCM chain over RDS http.<port>', () => {
    const ls = listeners([gateway('bookinfo-gateway', [httpServer([BOOKINFO])])]);
    assert.deepEqual([...ls.keys()], ['0.0.0.0_80']);
    const l = ls.get('0.0.0.0_80')!;
    assert.equal(l.trafficDirection, TrafficDirection.OUTBOUND);
    const addr = l.address?.address;
    assert.ok(addr?.case === 'socketAddress');
    assert.deepEqual([addr.value.address, addr.value.portSpecifier.value], ['0.0.0.0', 80]);
    assert.equal(l.listenerFilters.length, 0, 'no TLS inspector on plaintext');
    assert.equal(l.filterChains.length, 1);
    const chain = l.filterChains[0]!;
    assert.equal(chain.filterChainMatch, undefined);
    assert.equal(chain.transportSocket, undefined);
    assert.equal(rdsOf(chain), 'http.80');
    const hcm = hcmOf(chain);
    assert.equal(hcm.statPrefix, 'outbound_0.0.0.0_80;');
    assert.equal(hcm.useRemoteAddress?.valueOf(), true, 'gateways trust the remote address');
  });

  it('HTTPS SIMPLE with credentialName: SNI chain, SDS kubernetes://<name> over ADS, TLS params, its own RDS', () => {
    const ls = listeners([
      gateway('bookinfo-gateway', [
        httpsServer([`bookinfo/${BOOKINFO}`, 'api.example.com'], {
          mode: 'SIMPLE',
          credentialName: 'bookinfo-cred',
          minProtocolVersion: 'TLSV1_2',
          maxProtocolVersion: 'TLSV1_3',
          cipherSuites: ['ECDHE-ECDSA-AES256-GCM-SHA384'],
        }),
      ]),
    ]);
    const l = ls.get('0.0.0.0_443')!;
    assert.deepEqual(
      l.listenerFilters.map((f) => f.name),
      ['envoy.filters.listener.tls_inspector'],
    );
    const chain = l.filterChains[0]!;
    assert.deepEqual(chain.filterChainMatch?.serverNames, ['api.example.com', BOOKINFO], 'namespace stripped, sorted');
    assert.equal(rdsOf(chain), 'https.443.https.bookinfo-gateway.istio-system');
    assert.equal(chain.transportSocketConnectTimeout?.seconds, 15n);
    const tls = tlsOf(chain);
    assert.equal(tls.requireClientCertificate, false);
    const common = tls.commonTlsContext!;
    assert.deepEqual(common.alpnProtocols, ['h2', 'http/1.1']);
    assert.deepEqual(
      common.tlsCertificateSdsSecretConfigs.map((s) => s.name),
      ['kubernetes://bookinfo-cred'],
    );
    assert.equal(
      common.tlsCertificateSdsSecretConfigs[0]!.sdsConfig?.configSourceSpecifier.case,
      'ads',
      'istiod serves credentials over ADS',
    );
    assert.equal(common.validationContextType.case, undefined, 'SIMPLE does not verify clients');
    assert.equal(common.tlsParams?.tlsMinimumProtocolVersion, TlsParameters_TlsProtocol.TLSv1_2);
    assert.equal(common.tlsParams?.tlsMaximumProtocolVersion, TlsParameters_TlsProtocol.TLSv1_3);
    assert.deepEqual(common.tlsParams?.cipherSuites, ['ECDHE-ECDSA-AES256-GCM-SHA384']);
  });

  it('MUTUAL: client certificate required, CA from kubernetes://<name>-cacert, SANs matched exactly', () => {
    const ls = listeners([
      gateway('gw', [httpsServer([BOOKINFO], { mode: 'MUTUAL', credentialName: 'bookinfo-cred', subjectAltNames: ['spiffe://client'] })]),
    ]);
    const tls = tlsOf(ls.get('0.0.0.0_443')!.filterChains[0]!);
    assert.equal(tls.requireClientCertificate, true);
    const v = tls.commonTlsContext!.validationContextType;
    assert.equal(v.case, 'combinedValidationContext');
    assert.equal(v.value.validationContextSdsSecretConfig?.name, 'kubernetes://bookinfo-cred-cacert');
    assert.equal(v.value.validationContextSdsSecretConfig?.sdsConfig?.configSourceSpecifier.case, 'ads');
    const san = v.value.defaultValidationContext?.matchSubjectAltNames[0]?.matchPattern;
    assert.deepEqual([san?.case, san?.value], ['exact', 'spiffe://client']);
  });

  it('ISTIO_MUTUAL uses the workload certificate and mesh root from the node agent; file paths become file-cert/file-root', () => {
    const ls = listeners([
      gateway('gw', [
        httpsServer(['mesh.example.com'], { mode: 'ISTIO_MUTUAL' }, 15443, 'tls-mesh'),
        httpsServer([BOOKINFO], {
          mode: 'MUTUAL',
          serverCertificate: '/etc/certs/cert.pem',
          privateKey: '/etc/certs/key.pem',
          caCertificates: '/etc/certs/ca.pem',
        }),
      ]),
    ]);
    const mesh = tlsOf(ls.get('0.0.0.0_15443')!.filterChains[0]!);
    assert.equal(mesh.requireClientCertificate, true);
    const meshSds = mesh.commonTlsContext!.tlsCertificateSdsSecretConfigs[0]!;
    assert.equal(meshSds.name, 'default');
    const src = meshSds.sdsConfig?.configSourceSpecifier;
    assert.ok(src?.case === 'apiConfigSource');
    assert.equal(
      src.value.grpcServices[0]?.targetSpecifier.case === 'envoyGrpc' && src.value.grpcServices[0].targetSpecifier.value.clusterName,
      'sds-grpc',
    );
    const mv = mesh.commonTlsContext!.validationContextType;
    assert.ok(mv.case === 'combinedValidationContext');
    assert.equal(mv.value.validationContextSdsSecretConfig?.name, 'ROOTCA');

    const files = tlsOf(ls.get('0.0.0.0_443')!.filterChains[0]!).commonTlsContext!;
    assert.deepEqual(
      files.tlsCertificateSdsSecretConfigs.map((s) => s.name),
      ['file-cert:/etc/certs/cert.pem~/etc/certs/key.pem'],
    );
    assert.ok(files.validationContextType.case === 'combinedValidationContext');
    assert.equal(files.validationContextType.value.validationContextSdsSecretConfig?.name, 'file-root:/etc/certs/ca.pem');
  });

  it('a wildcard HTTPS server matches without server_names but still inspects TLS (ALPN)', () => {
    const l = listeners([gateway('gw', [httpsServer(['*'], { mode: 'SIMPLE', credentialName: 'wild' })])]).get('0.0.0.0_443')!;
    assert.equal(l.filterChains[0]!.filterChainMatch, undefined);
    assert.deepEqual(
      l.listenerFilters.map((f) => f.name),
      ['envoy.filters.listener.tls_inspector'],
    );
  });

  it('two Gateways on port 80 share one listener, chain and RDS; two HTTPS Gateways on 443 keep a chain and RDS each', () => {
    const ls = listeners([
      gateway('gw-a', [httpServer(['a.example.com']), httpsServer(['a.example.com'], { mode: 'SIMPLE', credentialName: 'a' })]),
      gateway('gw-b', [httpServer(['b.example.com']), httpsServer(['b.example.com'], { mode: 'SIMPLE', credentialName: 'b' })], {
        namespace: 'team-b',
      }),
    ]);
    assert.deepEqual([...ls.keys()].sort(), ['0.0.0.0_443', '0.0.0.0_80']);
    const http = ls.get('0.0.0.0_80')!;
    assert.equal(http.filterChains.length, 1);
    assert.equal(rdsOf(http.filterChains[0]!), 'http.80');
    const https = ls.get('0.0.0.0_443')!;
    assert.deepEqual(
      https.filterChains.map((c) => [c.filterChainMatch?.serverNames, rdsOf(c)]),
      [
        [['a.example.com'], 'https.443.https.gw-a.istio-system'],
        [['b.example.com'], 'https.443.https.gw-b.team-b'],
      ],
    );
  });

  it('a second TLS server repeating a host on the port is skipped (Envoy rejects duplicate chain matches)', () => {
    const ls = listeners([
      gateway('gw-a', [httpsServer([BOOKINFO], { mode: 'SIMPLE', credentialName: 'a' })]),
      gateway('gw-b', [httpsServer([BOOKINFO], { mode: 'SIMPLE', credentialName: 'b' })]),
    ]);
    assert.deepEqual(ls.get('0.0.0.0_443')!.filterChains.map(rdsOf), ['https.443.https.gw-a.istio-system']);
  });

  it('PASSTHROUGH: one chain per VirtualService tls route, matched by SNI, proxying to its cluster', () => {
    const ls = listeners([
      gateway('passthrough', [
        { port: { number: 443, name: 'tls', protocol: 'TLS' }, hosts: ['*.example.com'], tls: { mode: 'PASSTHROUGH' } },
      ]),
      serviceEntry('a', 'apps', 'a.apps.svc.cluster.local', [{ number: 8443, name: 'tls', protocol: 'TLS' }]),
      virtualService('sni', 'apps', {
        hosts: ['a.example.com', 'b.example.com', 'c.example.com'],
        gateways: ['istio-system/passthrough'],
        tls: [
          { match: [{ port: 443, sniHosts: ['a.example.com'] }], route: [{ destination: { host: 'a.apps.svc.cluster.local' } }] },
          {
            match: [{ sniHosts: ['b.example.com'] }],
            route: [
              { destination: { host: 'b.apps.svc.cluster.local', port: { number: 9443 } }, weight: 70 },
              { destination: { host: 'c.apps.svc.cluster.local', port: { number: 9443 } }, weight: 30 },
            ],
          },
          { match: [{ port: 8443, sniHosts: ['c.example.com'] }], route: [{ destination: { host: 'a.apps.svc.cluster.local' } }] },
        ],
      }),
    ]);
    const l = ls.get('0.0.0.0_443')!;
    assert.deepEqual(
      l.listenerFilters.map((f) => f.name),
      ['envoy.filters.listener.tls_inspector'],
    );
    assert.deepEqual(
      l.filterChains.map((c) => c.filterChainMatch?.serverNames),
      [['a.example.com'], ['b.example.com']],
      'the port-8443 match does not apply on 443',
    );
    for (const c of l.filterChains) assert.equal(c.transportSocket, undefined, 'passthrough does not terminate TLS');
    const a = tcpProxyOf(l.filterChains[0]!);
    assert.deepEqual(
      [a.statPrefix, a.clusterSpecifier.case, a.clusterSpecifier.value],
      ['outbound|8443||a.apps.svc.cluster.local', 'cluster', 'outbound|8443||a.apps.svc.cluster.local'],
    );
    const b = tcpProxyOf(l.filterChains[1]!);
    assert.equal(b.statPrefix, 'sni.apps');
    assert.ok(b.clusterSpecifier.case === 'weightedClusters');
    assert.deepEqual(
      b.clusterSpecifier.value.clusters.map((w) => [w.name, w.weight]),
      [
        ['outbound|9443||b.apps.svc.cluster.local', 70],
        ['outbound|9443||c.apps.svc.cluster.local', 30],
      ],
    );
  });

  it('AUTO_PASSTHROUGH: a chain per mesh service port and subset, SNI = the DNS-SRV cluster name, Istio mTLS ALPNs', () => {
    const ls = listeners([
      gateway('cross-network', [
        { port: { number: 15443, name: 'tls', protocol: 'TLS' }, hosts: ['*.local'], tls: { mode: 'AUTO_PASSTHROUGH' } },
      ]),
      serviceEntry('reviews', 'bookinfo', 'reviews.bookinfo.svc.cluster.local', [{ number: 9080, name: 'http', protocol: 'HTTP' }]),
      serviceEntry('external', 'bookinfo', 'api.external.com', [{ number: 443, name: 'tls', protocol: 'TLS' }]),
      {
        apiVersion: 'networking.istio.io/v1',
        kind: 'DestinationRule',
        metadata: { name: 'reviews', namespace: 'bookinfo' },
        spec: { host: 'reviews', subsets: [{ name: 'v1', labels: { version: 'v1' } }] },
      },
    ]);
    const chains = ls.get('0.0.0.0_15443')!.filterChains;
    assert.deepEqual(
      chains.map((c) => c.filterChainMatch?.serverNames),
      [['outbound_.9080_._.reviews.bookinfo.svc.cluster.local'], ['outbound_.9080_.v1_.reviews.bookinfo.svc.cluster.local']],
      'only hosts under *.local',
    );
    assert.deepEqual(chains[0]!.filterChainMatch?.applicationProtocols, [
      'istio',
      'istio-peer-exchange',
      'istio-http/1.0',
      'istio-http/1.1',
      'istio-h2',
    ]);
    assert.equal(tcpProxyOf(chains[1]!).clusterSpecifier.value, 'outbound_.9080_.v1_.reviews.bookinfo.svc.cluster.local');
  });

  it('TCP: tcp_proxy from the bound VirtualService tcp route; TLS-terminated TCP adds a TLS context; unrouted TCP gets no listener', () => {
    const ls = listeners([
      gateway('tcp', [
        { port: { number: 27017, name: 'mongo', protocol: 'MONGO' }, hosts: ['*'] },
        {
          port: { number: 9000, name: 'tls-term', protocol: 'TLS' },
          hosts: ['db.example.com'],
          tls: { mode: 'SIMPLE', credentialName: 'db' },
        },
        { port: { number: 31400, name: 'tcp-unrouted', protocol: 'TCP' }, hosts: ['*'] },
      ]),
      virtualService('mongo', 'istio-system', {
        hosts: ['*'],
        gateways: ['tcp'],
        tcp: [
          {
            match: [{ port: 31400, gateways: ['other'] }],
            route: [{ destination: { host: 'nowhere.default.svc.cluster.local', port: { number: 1 } } }],
          },
          { match: [{ port: 27017 }], route: [{ destination: { host: 'mongo.db.svc.cluster.local', port: { number: 5555 } } }] },
          { match: [{ port: 9000 }], route: [{ destination: { host: 'db.db.svc.cluster.local', port: { number: 5432 } } }] },
        ],
      }),
    ]);
    assert.deepEqual([...ls.keys()].sort(), ['0.0.0.0_27017', '0.0.0.0_9000']);
    const mongo = ls.get('0.0.0.0_27017')!.filterChains[0]!;
    assert.equal(mongo.transportSocket, undefined);
    assert.equal(tcpProxyOf(mongo).clusterSpecifier.value, 'outbound|5555||mongo.db.svc.cluster.local');
    const term = ls.get('0.0.0.0_9000')!.filterChains[0]!;
    assert.deepEqual(term.filterChainMatch?.serverNames, ['db.example.com']);
    assert.deepEqual(
      tlsOf(term).commonTlsContext?.tlsCertificateSdsSecretConfigs.map((s) => s.name),
      ['kubernetes://db'],
    );
    assert.equal(tcpProxyOf(term).clusterSpecifier.value, 'outbound|5432||db.db.svc.cluster.local');
  });

  it('a Gateway whose selector does not match the proxy contributes nothing', () => {
    const ls = listeners([
      gateway('egress', [httpServer(['*'], 8080)], { selector: { istio: 'egressgateway' } }),
      gateway('ingress', [httpServer(['*'])]),
    ]);
    assert.deepEqual([...ls.keys()], ['0.0.0.0_80']);
    assert.equal(listeners([gateway('egress', [httpServer(['*'])], { selector: { istio: 'egressgateway' } })]).size, 0);
  });

  it('a gateway Service port maps to the port the gateway pod listens on (80 → 8080)', () => {
    const se = {
      apiVersion: 'networking.istio.io/v1',
      kind: 'ServiceEntry',
      metadata: { name: 'istio-ingressgateway', namespace: 'istio-system' },
      spec: {
        hosts: ['istio-ingressgateway.istio-system.svc.cluster.local'],
        location: 'MESH_INTERNAL',
        resolution: 'STATIC',
        ports: [{ number: 80, name: 'http2', protocol: 'HTTP', targetPort: 8080 }],
        endpoints: [{ address: '10.0.0.9' }],
      },
    };
    const ls = listeners([se, gateway('gw', [httpServer([BOOKINFO])])]);
    assert.deepEqual([...ls.keys()], ['0.0.0.0_8080']);
    assert.equal(rdsOf(ls.get('0.0.0.0_8080')!.filterChains[0]!), 'http.8080');
  });
});
