import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { create, fromBinary, toBinary, toJson } from '@bufbuild/protobuf';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import { FilterChainMatchSchema } from '../../gen/envoy/config/listener/v3/listener_components_pb.js';
import { TransportSocketSchema } from '../../gen/envoy/config/core/v3/base_pb.js';
import { DownstreamTlsContextSchema } from '../../gen/envoy/extensions/transport_sockets/tls/v3/tls_pb.js';
import { assertValid } from '../../xds/pgv/index.js';
import { envoyValidationRegistry } from '../../model/json-registry.js';
import { packAny } from '../common.js';
import { inboundChainVariants, inboundTlsContext, INBOUND_CIPHER_SUITES, type InboundTlsOptions } from './inbound-tls.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- walking proto3 JSON */
/** The context as a listener carries it: packed in a transport socket, decoded back, PGV-checked. */
function viaTransportSocket(opts: InboundTlsOptions): any {
  const socket = create(TransportSocketSchema, {
    name: 'envoy.transport_sockets.tls',
    configType: { case: 'typedConfig', value: packAny(DownstreamTlsContextSchema, inboundTlsContext(opts)) },
  });
  const back = fromBinary(TransportSocketSchema, toBinary(TransportSocketSchema, socket));
  assertValid(TransportSocketSchema, back, envoyValidationRegistry());
  assert.equal(back.configType.case, 'typedConfig');
  const ctx = anyUnpack(back.configType.value, DownstreamTlsContextSchema);
  assert.ok(ctx);
  return toJson(DownstreamTlsContextSchema, ctx);
}

const sds = (name: string) => ({
  name,
  sdsConfig: {
    apiConfigSource: {
      apiType: 'GRPC',
      transportApiVersion: 'V3',
      grpcServices: [{ envoyGrpc: { clusterName: 'sds-grpc' } }],
      setNodeOnFirstMessageOnly: true,
    },
    initialFetchTimeout: '0s',
    resourceApiVersion: 'V3',
  },
});

describe('inbound mTLS context', () => {
  it('serves SDS default, requires a client certificate from ROOTCA in the trust domain', () => {
    const json = viaTransportSocket({ trustDomain: 'cluster.local' });
    assert.deepEqual(json, {
      commonTlsContext: {
        tlsParams: { tlsMinimumProtocolVersion: 'TLSv1_2', tlsMaximumProtocolVersion: 'TLSv1_3', cipherSuites: [...INBOUND_CIPHER_SUITES] },
        tlsCertificateSdsSecretConfigs: [sds('default')],
        combinedValidationContext: {
          defaultValidationContext: { matchSubjectAltNames: [{ prefix: 'spiffe://cluster.local/' }] },
          validationContextSdsSecretConfig: sds('ROOTCA'),
        },
        alpnProtocols: ['h2', 'http/1.1'],
      },
      requireClientCertificate: true,
    });
  });

  it('offers istio-peer-exchange on TCP chains and honours mesh TLS settings and aliases', () => {
    const json = viaTransportSocket({
      trustDomain: 'td1',
      trustDomainAliases: ['td0', 'td1'],
      protocol: 'tcp',
      minProtocolVersion: 'TLSV1_3',
      cipherSuites: ['ECDHE-RSA-AES128-GCM-SHA256'],
    });
    assert.deepEqual(json.commonTlsContext.alpnProtocols, ['istio-peer-exchange', 'h2', 'http/1.1']);
    assert.deepEqual(json.commonTlsContext.tlsParams, {
      tlsMinimumProtocolVersion: 'TLSv1_3',
      tlsMaximumProtocolVersion: 'TLSv1_3',
      cipherSuites: ['ECDHE-RSA-AES128-GCM-SHA256'],
    });
    assert.deepEqual(json.commonTlsContext.combinedValidationContext.defaultValidationContext.matchSubjectAltNames, [
      { prefix: 'spiffe://td1/' },
      { prefix: 'spiffe://td0/' },
    ]);
    const skip = viaTransportSocket({ trustDomain: 'td1', skipValidateTrustDomain: true });
    assert.deepEqual(
      skip.commonTlsContext.combinedValidationContext.defaultValidationContext,
      {},
      'no SAN check, only the CA (istiod keeps the empty context)',
    );
  });
});

describe('inbound filter chain variants', () => {
  /** `<transport> [alpns] tls|plain http|tcp`, after a round trip through FilterChainMatch. */
  const describeVariants = (
    mode: Parameters<typeof inboundChainVariants>[0],
    protocol: Parameters<typeof inboundChainVariants>[1],
  ): string[] =>
    inboundChainVariants(mode, protocol).map((v) => {
      const m = fromBinary(
        FilterChainMatchSchema,
        toBinary(FilterChainMatchSchema, create(FilterChainMatchSchema, { ...v.match, destinationPort: 8080 })),
      );
      assert.equal(m.destinationPort, 8080);
      return `${m.transportProtocol} [${m.applicationProtocols.join(',')}] ${v.tls ? 'mtls' : 'plain'} ${v.http ? 'http' : 'tcp'}`;
    });
  const ISTIO_ALL = 'istio,istio-peer-exchange,istio-http/1.0,istio-http/1.1,istio-h2';

  it('STRICT: only TLS chains, terminated', () => {
    assert.deepEqual(describeVariants('STRICT', 'http'), ['tls [] mtls http']);
    assert.deepEqual(describeVariants('STRICT', 'tcp'), ['tls [] mtls tcp']);
    assert.deepEqual(describeVariants('STRICT', 'auto'), ['tls [istio-http/1.0,istio-http/1.1,istio-h2] mtls http', 'tls [] mtls tcp']);
  });

  it('PERMISSIVE: mTLS on Istio ALPNs, plaintext beside it, and foreign TLS passed through on TCP', () => {
    assert.deepEqual(describeVariants('PERMISSIVE', 'http'), [`tls [${ISTIO_ALL}] mtls http`, 'raw_buffer [] plain http']);
    assert.deepEqual(describeVariants('PERMISSIVE', 'tcp'), [`tls [${ISTIO_ALL}] mtls tcp`, 'tls [] plain tcp', 'raw_buffer [] plain tcp']);
    assert.deepEqual(describeVariants('PERMISSIVE', 'auto'), [
      'tls [istio-http/1.0,istio-http/1.1,istio-h2] mtls http',
      'raw_buffer [http/1.1,h2c] plain http',
      'tls [istio-peer-exchange,istio] mtls tcp',
      'raw_buffer [] plain tcp',
      'tls [] plain tcp',
    ]);
  });

  it('DISABLE: plaintext only', () => {
    assert.deepEqual(describeVariants('DISABLE', 'http'), ['raw_buffer [] plain http']);
    assert.deepEqual(describeVariants('DISABLE', 'tcp'), ['raw_buffer [] plain tcp']);
    assert.deepEqual(describeVariants('DISABLE', 'auto'), ['raw_buffer [http/1.1,h2c] plain http', 'raw_buffer [] plain tcp']);
  });

  it('hands out fresh match objects the caller may extend', () => {
    const a = inboundChainVariants('PERMISSIVE', 'http');
    (a[0]?.match.applicationProtocols as string[]).push('mutated');
    assert.ok(!inboundChainVariants('PERMISSIVE', 'http')[0]?.match.applicationProtocols?.includes('mutated'));
  });
});
