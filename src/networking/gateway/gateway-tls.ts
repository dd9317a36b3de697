import { create } from '@bufbuild/protobuf';
import type { SdsSecretConfig } from '../../gen/envoy/extensions/transport_sockets/tls/v3/secret_pb.js';
import { SdsSecretConfigSchema } from '../../gen/envoy/extensions/transport_sockets/tls/v3/secret_pb.js';
import {
  CertificateValidationContext_TrustChainVerification,
  type CertificateValidationContextSchema,
  type TlsParameters_TlsProtocol,
} from '../../gen/envoy/extensions/transport_sockets/tls/v3/common_pb.js';
import type { DownstreamTlsContextSchema } from '../../gen/envoy/extensions/transport_sockets/tls/v3/tls_pb.js';
import {
  ServerTLSSettings_TLSmode as Mode,
  ServerTLSSettings_TLSProtocol,
  type ServerTLSSettings,
} from '../../gen/networking/v1alpha3/gateway_pb.js';
import { adsConfigSource, type Init } from '../common.js';
import { CREDENTIAL_PREFIX, SDS_DEFAULT, SDS_ROOT_CA, sdsSecret } from '../secret/sds-config.js';

export type DownstreamTlsInit = Init<typeof DownstreamTlsContextSchema>;
type ValidationInit = Init<typeof CertificateValidationContextSchema>;

/** Suffix of the SDS name of a credential's CA bundle (istiod's SdsCaSuffix). */
export const CA_SUFFIX = '-cacert';
/** `builtin://`: the gateway's own workload certificate instead of a Kubernetes Secret. */
const BUILTIN_PREFIX = 'builtin://';
/** ALPN a terminating gateway offers (istiod's ALPNHttp). */
const ALPN_HTTP = ['h2', 'http/1.1'];
/** ISTIO_MUTUAL on a TCP server: metadata exchange first (istiod's ALPNDownstreamWithMxc). */
const ALPN_DOWNSTREAM_MX = ['istio-peer-exchange', 'h2', 'http/1.1'];

/** istiod's credentials.ToResourceName: `kubernetes://<name>` unless the name already has a known scheme. */
export function credentialResourceName(name: string): string {
  if (name.startsWith(BUILTIN_PREFIX)) return SDS_DEFAULT;
  if (/^(kubernetes|kubernetes-gateway|configmap|invalid):\/\//.test(name)) return name;
  return `${CREDENTIAL_PREFIX}${name}`;
}

/**
 * SDS for a `credentialName`: istiod serves these itself, over ADS (no initial-fetch timeout of 0,
 * so a missing Secret does not block the listener forever); `builtin://` means the node agent's
 * workload certificate.
 */
function credentialSds(name: string): SdsSecretConfig {
  if (name === BUILTIN_PREFIX) return sdsSecret(SDS_DEFAULT);
  if (name === `${BUILTIN_PREFIX}${CA_SUFFIX}`) return sdsSecret(SDS_ROOT_CA);
  return create(SdsSecretConfigSchema, { name: credentialResourceName(name), sdsConfig: adsConfigSource() });
}

const exact = (sans: readonly string[]): NonNullable<ValidationInit['matchSubjectAltNames']> =>
  sans.map((s) => ({ matchPattern: { case: 'exact' as const, value: s } }));

/** Enum values line up one to one (istiod's convertTLSProtocol). */
const tlsProtocol = (p: ServerTLSSettings_TLSProtocol): TlsParameters_TlsProtocol => p as number as TlsParameters_TlsProtocol;

/**
 * The DownstreamTlsContext of a terminating gateway server, as istiod's BuildListenerTLSContext:
 * ISTIO_MUTUAL uses the workload certificate (`default`) and mesh root (`ROOTCA`) from the node
 * agent; `credentialName(s)` use istiod's SDS (`kubernetes://<name>`, CA `<name>-cacert`); file
 * paths become the agent's `file-cert:<cert>~<key>` / `file-root:<ca>` resources. SIMPLE and
 * MUTUAL add the server's TLS versions and cipher suites.
 */
export function buildGatewayTlsContext(tls: ServerTLSSettings, tcpServer: boolean): DownstreamTlsInit {
  const requireClient = tls.mode === Mode.MUTUAL || tls.mode === Mode.ISTIO_MUTUAL;
  const validateClient = requireClient || tls.mode === Mode.OPTIONAL_MUTUAL;
  const alpnProtocols = tcpServer && tls.mode === Mode.ISTIO_MUTUAL ? ALPN_DOWNSTREAM_MX : ALPN_HTTP;
  const common: NonNullable<DownstreamTlsInit['commonTlsContext']> = { alpnProtocols };
  const untrusted =
    tls.insecureSkipVerify === true ? { trustChainVerification: CertificateValidationContext_TrustChainVerification.ACCEPT_UNTRUSTED } : {};
  const crl = tls.caCrl !== '' ? { crl: { specifier: { case: 'filename' as const, value: tls.caCrl } } } : {};

  if (tls.mode === Mode.ISTIO_MUTUAL) {
    common.tlsCertificateSdsSecretConfigs = [sdsSecret(SDS_DEFAULT)];
    common.validationContextType = {
      case: 'combinedValidationContext',
      value: {
        defaultValidationContext: { matchSubjectAltNames: exact(tls.subjectAltNames), ...crl, ...untrusted },
        validationContextSdsSecretConfig: sdsSecret(SDS_ROOT_CA),
      },
    };
  } else if (tls.credentialNames.length > 0 || tls.credentialName !== '') {
    const names = tls.credentialNames.length > 0 ? tls.credentialNames : [tls.credentialName];
    common.tlsCertificateSdsSecretConfigs = names.map(credentialSds);
    const caName = tls.caCertCredentialName !== '' ? tls.caCertCredentialName : `${names[0]!}${CA_SUFFIX}`;
    if (validateClient) {
      common.validationContextType = {
        case: 'combinedValidationContext',
        value: {
          defaultValidationContext: {
            matchSubjectAltNames: exact(tls.subjectAltNames),
            verifyCertificateSpki: [...tls.verifyCertificateSpki],
            verifyCertificateHash: [...tls.verifyCertificateHash],
            ...untrusted,
          },
          validationContextSdsSecretConfig: credentialSds(caName),
        },
      };
    } else if (tls.subjectAltNames.length > 0) {
      common.validationContextType = { case: 'validationContext', value: { matchSubjectAltNames: exact(tls.subjectAltNames) } };
    }
  } else {
    const pairs =
      tls.tlsCertificates.length > 0
        ? tls.tlsCertificates.map((c) => [c.serverCertificate, c.privateKey] as const)
        : [[tls.serverCertificate, tls.privateKey] as const];
    common.tlsCertificateSdsSecretConfigs = pairs.map(([cert, key]) =>
      sdsSecret(cert !== '' && key !== '' ? `file-cert:${cert}~${key}` : SDS_DEFAULT),
    );
    if (validateClient) {
      common.validationContextType = {
        case: 'combinedValidationContext',
        value: {
          defaultValidationContext: { matchSubjectAltNames: exact(tls.subjectAltNames), ...crl, ...untrusted },
          validationContextSdsSecretConfig: sdsSecret(tls.caCertificates !== '' ? `file-root:${tls.caCertificates}` : SDS_ROOT_CA),
        },
      };
    }
  }

  if (tls.mode === Mode.SIMPLE || tls.mode === Mode.MUTUAL || tls.mode === Mode.OPTIONAL_MUTUAL) {
    const params: NonNullable<typeof common.tlsParams> = {};
    if (tls.minProtocolVersion !== ServerTLSSettings_TLSProtocol.TLS_AUTO)
      params.tlsMinimumProtocolVersion = tlsProtocol(tls.minProtocolVersion);
    if (tls.maxProtocolVersion !== ServerTLSSettings_TLSProtocol.TLS_AUTO)
      params.tlsMaximumProtocolVersion = tlsProtocol(tls.maxProtocolVersion);
    if (tls.cipherSuites.length > 0) params.cipherSuites = [...new Set(tls.cipherSuites)];
    if (Object.keys(params).length > 0) common.tlsParams = params;
  }
  return { commonTlsContext: common, requireClientCertificate: requireClient };
}
