import { create } from '@bufbuild/protobuf';
import type { FilterChainMatchSchema } from '../../gen/envoy/config/listener/v3/listener_components_pb.js';
import { TlsParameters_TlsProtocol } from '../../gen/envoy/extensions/transport_sockets/tls/v3/common_pb.js';
import { DownstreamTlsContextSchema, type DownstreamTlsContext } from '../../gen/envoy/extensions/transport_sockets/tls/v3/tls_pb.js';
import type { Init } from '../common.js';
import { SDS_DEFAULT, SDS_ROOT_CA, sdsSecret } from '../secret/sds-config.js';

/** PeerAuthentication's effective mTLS mode for a port (UNSET already resolved by inheritance). */
export type MtlsMode = 'STRICT' | 'PERMISSIVE' | 'DISABLE';
/** The inbound port's protocol: HTTP, opaque TCP, or sniffed (`auto`: both kinds of chain). */
export type InboundProtocol = 'http' | 'tcp' | 'auto';

/** Server-side cipher suites of istiod's inbound mTLS (authn/utils SupportedCiphers). */
export const INBOUND_CIPHER_SUITES: readonly string[] = [
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'AES256-GCM-SHA384',
  'AES128-GCM-SHA256',
];

// ALPNs Istio's client sidecars send over mTLS: the `istio-*` ones are added by the outbound
// cluster so the server can tell mesh traffic from a client's own TLS.
const MTLS_HTTP_ALPNS = ['istio-http/1.0', 'istio-http/1.1', 'istio-h2'];
const MTLS_TCP_ALPNS = ['istio-peer-exchange', 'istio'];
const ALL_ISTIO_MTLS_ALPNS = ['istio', 'istio-peer-exchange', 'istio-http/1.0', 'istio-http/1.1', 'istio-h2'];
// Sniffed by the HTTP inspector on plaintext (http/1.0 only with PILOT_HTTP10, off by default).
const PLAINTEXT_HTTP_ALPNS = ['http/1.1', 'h2c'];

export interface InboundTlsOptions {
  /** The mesh trust domain: client certificates must carry a `spiffe://<trustDomain>/…` SAN. */
  readonly trustDomain: string;
  /** Further accepted trust domains (MeshConfig trustDomainAliases, CA certificates' trust domains). */
  readonly trustDomainAliases?: readonly string[];
  /**
   * Which chain the context is for: `http` offers h2 and http/1.1; `tcp` also offers
   * `istio-peer-exchange` (metadata exchange). Default `http`.
   */
  readonly protocol?: 'http' | 'tcp';
  /** MeshConfig meshMTLS.minProtocolVersion; TLS 1.2 unless TLSV1_3. */
  readonly minProtocolVersion?: 'TLSV1_2' | 'TLSV1_3';
  /** MeshConfig meshMTLS.cipherSuites, replacing the default list. */
  readonly cipherSuites?: readonly string[];
  /** PILOT_SKIP_VALIDATE_TRUST_DOMAIN: accept a client certificate of any trust domain the CA signs. */
  readonly skipValidateTrustDomain?: boolean;
}

/**
 * The DownstreamTlsContext of an inbound mTLS filter chain (STRICT, or the mTLS chain of
 * PERMISSIVE), as istiod builds it: the workload certificate from SDS `default`, client
 * certificates required and checked against SDS `ROOTCA` plus the trust domain(s), TLS 1.2–1.3.
 * The ALPN list offered to clients must not contain `istio` (it would upset HTTP/2 negotiation);
 * the `istio*` ALPNs are only matched in the filter chain match.
 */
export function inboundTlsContext(opts: InboundTlsOptions): DownstreamTlsContext {
  const trustDomains = opts.skipValidateTrustDomain
    ? []
    : [...new Set([opts.trustDomain, ...(opts.trustDomainAliases ?? [])])].filter((t) => t !== '');
  return create(DownstreamTlsContextSchema, {
    commonTlsContext: {
      alpnProtocols: opts.protocol === 'tcp' ? ['istio-peer-exchange', 'h2', 'http/1.1'] : ['h2', 'http/1.1'],
      tlsParams: {
        cipherSuites: [...(opts.cipherSuites ?? INBOUND_CIPHER_SUITES)],
        tlsMinimumProtocolVersion:
          opts.minProtocolVersion === 'TLSV1_3' ? TlsParameters_TlsProtocol.TLSv1_3 : TlsParameters_TlsProtocol.TLSv1_2,
        tlsMaximumProtocolVersion: TlsParameters_TlsProtocol.TLSv1_3,
      },
      tlsCertificateSdsSecretConfigs: [sdsSecret(SDS_DEFAULT)],
      validationContextType: {
        case: 'combinedValidationContext',
        value: {
          defaultValidationContext: {
            matchSubjectAltNames: trustDomains.map((td) => ({ matchPattern: { case: 'prefix' as const, value: `spiffe://${td}/` } })),
          },
          validationContextSdsSecretConfig: sdsSecret(SDS_ROOT_CA),
        },
      },
    },
    requireClientCertificate: true,
  });
}

/** One inbound filter chain to build for a port; the caller adds destination_port. */
export interface ChainVariant {
  readonly match: Init<typeof FilterChainMatchSchema>;
  /** Terminate mTLS with inboundTlsContext (protocol `http` when `http`, else `tcp`). */
  readonly tls: boolean;
  /** An HTTP connection manager chain (else TCP proxy). */
  readonly http: boolean;
}

const variant = (
  transportProtocol: 'tls' | 'raw_buffer',
  applicationProtocols: readonly string[],
  tls: boolean,
  http: boolean,
): ChainVariant => ({
  match: { transportProtocol, ...(applicationProtocols.length > 0 ? { applicationProtocols: [...applicationProtocols] } : {}) },
  tls,
  http,
});

/**
 * istiod's inbound filter chain matches per mTLS mode and port protocol (core/filterchain_options.go).
 * - STRICT: only TLS (the TLS inspector sets transport `tls`); for `auto`, HTTP when the client
 *   sidecar sent an `istio-http*`/`istio-h2` ALPN, otherwise TCP.
 * - PERMISSIVE: the mTLS chains above plus plaintext (`raw_buffer`) ones; for `tcp` and `auto`, a
 *   TLS connection without Istio ALPNs (the app's own TLS) is passed through as TCP, not terminated.
 * - DISABLE: plaintext only.
 */
export function inboundChainVariants(mode: MtlsMode, protocol: InboundProtocol): ChainVariant[] {
  switch (protocol) {
    case 'http':
      if (mode === 'STRICT') return [variant('tls', [], true, true)];
      if (mode === 'PERMISSIVE') return [variant('tls', ALL_ISTIO_MTLS_ALPNS, true, true), variant('raw_buffer', [], false, true)];
      return [variant('raw_buffer', [], false, true)];
    case 'tcp':
      if (mode === 'STRICT') return [variant('tls', [], true, false)];
      if (mode === 'PERMISSIVE') {
        return [
          variant('tls', ALL_ISTIO_MTLS_ALPNS, true, false),
          variant('tls', [], false, false),
          variant('raw_buffer', [], false, false),
        ];
      }
      return [variant('raw_buffer', [], false, false)];
    case 'auto':
      if (mode === 'STRICT') return [variant('tls', MTLS_HTTP_ALPNS, true, true), variant('tls', [], true, false)];
      if (mode === 'PERMISSIVE') {
        return [
          variant('tls', MTLS_HTTP_ALPNS, true, true),
          variant('raw_buffer', PLAINTEXT_HTTP_ALPNS, false, true),
          variant('tls', MTLS_TCP_ALPNS, true, false),
          variant('raw_buffer', [], false, false),
          variant('tls', [], false, false),
        ];
      }
      return [variant('raw_buffer', PLAINTEXT_HTTP_ALPNS, false, true), variant('raw_buffer', [], false, false)];
  }
}
