import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import type { Cluster } from '../../gen/envoy/config/cluster/v3/cluster_pb.js';
import { RawBufferSchema } from '../../gen/envoy/extensions/transport_sockets/raw_buffer/v3/raw_buffer_pb.js';
import type { Proxy } from '../../model/proxy.js';
import { buildOutboundClusters } from './outbound-clusters.js';
import {
  byName,
  destinationRule,
  get,
  httpOptionsOf,
  proxyOf,
  pushFor,
  sdsNames,
  serviceEntry,
  tlsOf,
  workloadEntry,
} from '../../../test/support/networking/cluster-fixtures.js';

const INTERNAL = 'ratings.default.svc.cluster.local';
const EXTERNAL = 'api.example.com';
const MESH = [
  serviceEntry(
    'ratings',
    INTERNAL,
    [
      { number: 8080, name: 'http', protocol: 'HTTP' },
      { number: 9090, name: 'grpc', protocol: 'GRPC' },
    ],
    { workloadSelector: { app: 'ratings' } },
  ),
  workloadEntry('ratings-a', { address: '10.2.0.1', serviceAccount: 'ratings', labels: { app: 'ratings' } }),
  workloadEntry('ratings-b', { address: '10.2.0.2', serviceAccount: 'ratings-canary', labels: { app: 'ratings' } }),
  workloadEntry('ratings-legacy', { address: '10.2.0.3', labels: { app: 'ratings' } }),
];
const API = serviceEntry(
  'api',
  EXTERNAL,
  [
    { number: 443, name: 'https', protocol: 'HTTPS' },
    { number: 80, name: 'http', protocol: 'HTTP' },
  ],
  { location: 'MESH_EXTERNAL', endpoints: [{ address: '192.0.2.10' }] },
);

function build(
  objects: Record<string, unknown>[],
  opts: Parameters<typeof pushFor>[1] = {},
  proxy: Proxy = proxyOf('sidecar'),
): Map<string, Cluster> {
  const push = pushFor(objects, opts);
  return byName(buildOutboundClusters({ push, proxy, services: push.sidecarScope(proxy).services }));
}

const tlsRule = (host: string, tls: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  destinationRule(`tls-${host.split('.')[0]}`, { host, trafficPolicy: { tls }, ...extra });

const SANS = ['spiffe://cluster.local/ns/default/sa/ratings', 'spiffe://cluster.local/ns/default/sa/ratings-canary'];

describe('upstream TLS', () => {
  it('auto mTLS: ISTIO_MUTUAL for tlsMode=istio endpoints, plaintext for the rest', () => {
    const c = get(build(MESH), `outbound|8080||${INTERNAL}`);
    assert.equal(c.transportSocket, undefined);
    assert.deepEqual(
      c.transportSocketMatches.map((m) => [m.name, m.match]),
      [
        ['tlsMode-istio', { tlsMode: 'istio' }],
        ['tlsMode-disabled', {}],
      ],
    );
    const ctx = tlsOf(c.transportSocketMatches[0]?.transportSocket);
    assert.equal(ctx.sni, `outbound_.8080_._.${INTERNAL}`);
    assert.deepEqual(ctx.commonTlsContext?.alpnProtocols, ['istio-peer-exchange', 'istio']);
    assert.deepEqual(sdsNames(ctx), { certs: ['default'], validation: 'ROOTCA' });
    const v = ctx.commonTlsContext?.validationContextType;
    assert.deepEqual(
      v?.case === 'combinedValidationContext' && v.value.defaultValidationContext?.matchSubjectAltNames.map((m) => m.matchPattern.value),
      SANS,
    );
    const sdsCluster = ctx.commonTlsContext?.tlsCertificateSdsSecretConfigs[0]?.sdsConfig?.configSourceSpecifier;
    const grpcTarget = sdsCluster?.case === 'apiConfigSource' ? sdsCluster.value.grpcServices[0]?.targetSpecifier : undefined;
    assert.equal(grpcTarget?.case === 'envoyGrpc' && grpcTarget.value.clusterName, 'sds-grpc');
    const plain = c.transportSocketMatches[1]?.transportSocket;
    assert.equal(plain?.name, 'envoy.transport_sockets.raw_buffer');
    assert.ok(plain?.configType.case === 'typedConfig' && anyUnpack(plain.configType.value, RawBufferSchema));
    const grpc = tlsOf(get(build(MESH), `outbound|9090||${INTERNAL}`).transportSocketMatches[0]?.transportSocket);
    assert.deepEqual(grpc.commonTlsContext?.alpnProtocols, ['istio-peer-exchange', 'istio', 'h2'], 'HTTP/2 clusters add h2');
  });

  it('no auto mTLS when the mesh disables it, for mesh-external services, or when the rule sets DISABLE', () => {
    const off = get(build(MESH, { enableAutoMtls: false }), `outbound|8080||${INTERNAL}`);
    assert.deepEqual([off.transportSocket, off.transportSocketMatches.length], [undefined, 0]);
    const external = get(build([API]), `outbound|443||${EXTERNAL}`);
    assert.deepEqual([external.transportSocket, external.transportSocketMatches.length], [undefined, 0]);
    assert.equal(external.metadata?.filterMetadata.istio?.external, true);
    const disabled = get(build([...MESH, tlsRule(INTERNAL, { mode: 'DISABLE' })]), `outbound|8080||${INTERNAL}`);
    assert.deepEqual([disabled.transportSocket, disabled.transportSocketMatches.length], [undefined, 0]);
  });

  it('ISTIO_MUTUAL from the rule: one socket for every endpoint, its SANs and SNI when given', () => {
    const out = build([
      ...MESH,
      tlsRule(
        INTERNAL,
        { mode: 'ISTIO_MUTUAL' },
        {
          subsets: [
            {
              name: 'pinned',
              labels: { app: 'ratings' },
              trafficPolicy: { tls: { mode: 'ISTIO_MUTUAL', sni: 'custom.sni', subjectAltNames: ['spiffe://other/ns/x/sa/y'] } },
            },
          ],
        },
      ),
    ]);
    const c = get(out, `outbound|8080||${INTERNAL}`);
    assert.equal(c.transportSocketMatches.length, 0);
    const ctx = tlsOf(c.transportSocket);
    assert.equal(ctx.sni, `outbound_.8080_._.${INTERNAL}`);
    const v = ctx.commonTlsContext?.validationContextType;
    assert.deepEqual(
      v?.case === 'combinedValidationContext' && v.value.defaultValidationContext?.matchSubjectAltNames.map((m) => m.matchPattern.value),
      SANS,
    );
    const pinned = tlsOf(get(out, `outbound|8080|pinned|${INTERNAL}`).transportSocket);
    assert.equal(pinned.sni, 'custom.sni');
    const pv = pinned.commonTlsContext?.validationContextType;
    assert.deepEqual(
      pv?.case === 'combinedValidationContext' && pv.value.defaultValidationContext?.matchSubjectAltNames.map((m) => m.matchPattern.value),
      ['spiffe://other/ns/x/sa/y'],
    );
  });

  it('SIMPLE: the CA from a file over SDS (system roots by default), the SNI given or auto_sni, alpn_override off', () => {
    const out = build([
      API,
      tlsRule(
        EXTERNAL,
        { mode: 'SIMPLE' },
        {
          trafficPolicy: {
            tls: { mode: 'SIMPLE' },
            portLevelSettings: [
              {
                port: { number: 443 },
                tls: { mode: 'SIMPLE', sni: 'api.example.com', caCertificates: '/etc/certs/ca.pem', subjectAltNames: ['api.example.com'] },
              },
            ],
          },
        },
      ),
    ]);
    const https = get(out, `outbound|443||${EXTERNAL}`);
    const ctx = tlsOf(https.transportSocket);
    assert.equal(ctx.sni, 'api.example.com');
    assert.deepEqual(sdsNames(ctx), { certs: [], validation: 'file-root:/etc/certs/ca.pem' });
    const fileSds = ctx.commonTlsContext?.validationContextType;
    assert.equal(
      fileSds?.case === 'combinedValidationContext' && fileSds.value.validationContextSdsSecretConfig?.sdsConfig?.initialFetchTimeout,
      undefined,
      'file secrets do not wait forever (istiod sets no initial fetch timeout for them)',
    );
    assert.equal(httpOptionsOf(https), undefined, 'SNI given: no auto_sni');
    assert.equal(https.metadata?.filterMetadata.istio?.alpn_override, 'false');
    assert.deepEqual(
      ctx.commonTlsContext?.tlsParams && [
        ctx.commonTlsContext.tlsParams.tlsMinimumProtocolVersion,
        ctx.commonTlsContext.tlsParams.tlsMaximumProtocolVersion,
      ],
      [3, 4],
    );

    const http = get(out, `outbound|80||${EXTERNAL}`);
    assert.deepEqual(sdsNames(tlsOf(http.transportSocket)), { certs: [], validation: 'file-root:system' });
    const upstream = httpOptionsOf(http)?.upstreamHttpProtocolOptions;
    assert.deepEqual([upstream?.autoSni, upstream?.autoSanValidation], [true, true]);
  });

  it('MUTUAL: the client key pair from files over SDS; insecureSkipVerify drops the CA check', () => {
    const out = build([
      API,
      tlsRule(
        EXTERNAL,
        { mode: 'MUTUAL', clientCertificate: '/c/cert.pem', privateKey: '/c/key.pem' },
        {
          trafficPolicy: {
            tls: { mode: 'MUTUAL', clientCertificate: '/c/cert.pem', privateKey: '/c/key.pem', insecureSkipVerify: true },
            portLevelSettings: [
              {
                port: { number: 80 },
                tls: { mode: 'MUTUAL', clientCertificate: '/c/cert.pem', privateKey: '/c/key.pem', caCertificates: '/c/ca.pem' },
              },
            ],
          },
        },
      ),
    ]);
    const ctx = tlsOf(get(out, `outbound|443||${EXTERNAL}`).transportSocket);
    assert.deepEqual(sdsNames(ctx).certs, ['file-cert:/c/cert.pem~/c/key.pem']);
    assert.equal(ctx.commonTlsContext?.validationContextType.case, 'validationContext', 'insecureSkipVerify: an empty validation context');
    const http = tlsOf(get(out, `outbound|80||${EXTERNAL}`).transportSocket);
    assert.deepEqual(sdsNames(http), { certs: ['file-cert:/c/cert.pem~/c/key.pem'], validation: 'file-root:/c/ca.pem' });
  });

  it('credentialName: from istiod over ADS on gateways; a sidecar needs a DestinationRule with a workloadSelector', () => {
    const rule = tlsRule(EXTERNAL, { mode: 'MUTUAL', credentialName: 'client-cred' });
    const gw = get(build([API, rule], {}, proxyOf('router', { namespace: 'istio-system' })), `outbound|443||${EXTERNAL}`);
    const ctx = tlsOf(gw.transportSocket);
    assert.deepEqual(sdsNames(ctx), { certs: ['kubernetes://client-cred'], validation: 'kubernetes://client-cred-cacert' });
    assert.equal(ctx.commonTlsContext?.tlsCertificateSdsSecretConfigs[0]?.sdsConfig?.configSourceSpecifier.case, 'ads');
    assert.equal(get(build([API, rule]), `outbound|443||${EXTERNAL}`).transportSocket, undefined);
    const caOnly = tlsRule(EXTERNAL, { mode: 'SIMPLE', credentialName: 'ca-only' });
    const simple = tlsOf(
      get(build([API, caOnly], {}, proxyOf('router', { namespace: 'istio-system' })), `outbound|443||${EXTERNAL}`).transportSocket,
    );
    assert.deepEqual(sdsNames(simple), { certs: [], validation: 'kubernetes://ca-only-cacert' });
  });
});
