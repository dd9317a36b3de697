import { create } from '@bufbuild/protobuf';
import { Cluster_DiscoveryType } from '../../gen/envoy/config/cluster/v3/cluster_pb.js';
import {
  TlsParameters_TlsProtocol,
  type CertificateValidationContextSchema,
} from '../../gen/envoy/extensions/transport_sockets/tls/v3/common_pb.js';
import { SdsSecretConfigSchema, type SdsSecretConfig } from '../../gen/envoy/extensions/transport_sockets/tls/v3/secret_pb.js';
import { UpstreamTlsContextSchema } from '../../gen/envoy/extensions/transport_sockets/tls/v3/tls_pb.js';
import {
  ClientTLSSettings_TLSmode as Mode,
  ClientTLSSettingsSchema,
  type ClientTLSSettings,
} from '../../gen/networking/v1alpha3/destination_rule_pb.js';
import { adsConfigSource, packAny, type Init } from '../common.js';
import { credentialResourceName } from '../gateway/index.js';
import { SDS_DEFAULT, SDS_ROOT_CA, sdsSecret } from '../secret/sds-config.js';
import { discoveryType, isHttp2, rawBufferSocket, TLS_TRANSPORT_SOCKET, type ClusterDraft, type HttpOptionsInit } from './cluster-draft.js';

type UpstreamTlsInit = Init<typeof UpstreamTlsContextSchema>;
type ValidationInit = Init<typeof CertificateValidationContextSchema>;

/** ALPN of in-mesh mTLS with metadata exchange (istiod's ALPNInMeshWithMxc / ALPNInMeshH2WithMxc). */
const ALPN_IN_MESH = ['istio-peer-exchange', 'istio'];
const ALPN_IN_MESH_H2 = ['istio-peer-exchange', 'istio', 'h2'];
const CA_SUFFIX = '-cacert';
const BUILTIN = 'builtin://';

export interface UpstreamTlsInput {
  readonly tls: ClientTLSSettings | undefined;
  readonly serviceAccounts: readonly string[];
  /** `outbound_.<port>_.<subset>_.<host>`: the SNI istiod gives in-mesh mTLS. */
  readonly sni: string;
  readonly autoMtls: boolean;
  readonly meshExternal: boolean;
  /** istiod's BestEffortInferServiceMTLSMode allows mTLS (neither unknown nor DISABLE). */
  readonly serviceAcceptsMtls: boolean;
  /** Sidecar CDS (not a gateway): credentialName needs a DestinationRule workloadSelector there. */
  readonly sidecar: boolean;
  readonly drHasWorkloadSelector: boolean;
}

/** The TLS settings to apply and whether auto mTLS produced them (then endpoints choose by tlsMode). */
interface ResolvedTls {
  readonly tls: ClientTLSSettings | undefined;
  readonly autoDetected: boolean;
}

function istioMutual(sans: readonly string[], sni: string, insecureSkipVerify: boolean | undefined): ClientTLSSettings {
  return create(ClientTLSSettingsSchema, {
    mode: Mode.ISTIO_MUTUAL,
    subjectAltNames: [...sans],
    sni,
    ...(insecureSkipVerify !== undefined ? { insecureSkipVerify } : {}),
  });
}

/**
 * istiod's buildUpstreamTLSSettings: a user ISTIO_MUTUAL gets the mesh SNI and the workloads'
 * identities unless it names its own; without TLS settings, auto mTLS applies to mesh-internal
 * services that may take mTLS. (Proxy-metadata client certificates are not supported.)
 */
function resolveTls(input: UpstreamTlsInput): ResolvedTls {
  const { tls } = input;
  if (tls) {
    if (tls.mode !== Mode.ISTIO_MUTUAL) return { tls, autoDetected: false };
    const sans = tls.subjectAltNames.length > 0 ? tls.subjectAltNames : input.serviceAccounts;
    return { tls: istioMutual(sans, tls.sni !== '' ? tls.sni : input.sni, tls.insecureSkipVerify), autoDetected: false };
  }
  if (input.meshExternal || !input.autoMtls || !input.serviceAcceptsMtls) return { tls: undefined, autoDetected: false };
  return { tls: istioMutual(input.serviceAccounts, input.sni, undefined), autoDetected: true };
}

const exactSans = (sans: readonly string[]): NonNullable<ValidationInit['matchSubjectAltNames']> =>
  sans.map((s) => ({ matchPattern: { case: 'exact' as const, value: s } }));

/** istiod's defaultUpstreamCommonTLSContext: TLS 1.2 to 1.3. */
const commonTlsParams = (): NonNullable<UpstreamTlsInit['commonTlsContext']>['tlsParams'] => ({
  tlsMinimumProtocolVersion: TlsParameters_TlsProtocol.TLSv1_2,
  tlsMaximumProtocolVersion: TlsParameters_TlsProtocol.TLSv1_3,
});

/** A file served by the node agent (`file-cert:` / `file-root:`); istiod sets no initial-fetch timeout for those. */
function fileSds(name: string): SdsSecretConfig {
  const s = sdsSecret(name);
  if (s.sdsConfig) s.sdsConfig.initialFetchTimeout = undefined;
  return s;
}

/** istiod's ConstructSdsSecretConfigForCredential: credentialName secrets come from istiod over ADS. */
function credentialSds(name: string): SdsSecretConfig {
  if (name === BUILTIN) return sdsSecret(SDS_DEFAULT);
  if (name === `${BUILTIN}${CA_SUFFIX}`) return sdsSecret(SDS_ROOT_CA);
  return create(SdsSecretConfigSchema, { name: credentialResourceName(name), sdsConfig: adsConfigSource() });
}

/** istiod's setAutoSniAndAutoSanValidation (non-DFP): SNI and SAN check from the request's host. */
function setAutoSni(d: ClusterDraft, tls: ClientTLSSettings): void {
  const autoSni = tls.sni === '';
  const autoSan = autoSni && tls.subjectAltNames.length === 0 && tls.insecureSkipVerify !== true;
  if (!autoSni && !autoSan) return;
  const o: HttpOptionsInit = (d.http ??= {});
  const u = (o.upstreamHttpProtocolOptions ??= {});
  if (autoSni) u.autoSni = true;
  if (autoSan) u.autoSanValidation = true;
}

/** istiod's constructUpstreamTLS for SIMPLE / MUTUAL (undefined: MUTUAL without client key pair). */
function simpleOrMutual(d: ClusterDraft, given: ClientTLSSettings, serviceAccounts: readonly string[]): UpstreamTlsInit | undefined {
  const mutual = given.mode === Mode.MUTUAL;
  setAutoSni(d, given);
  // ServiceEntry hosts (every service here is one): the workloads' identities stand in for SANs.
  const sans = given.subjectAltNames.length > 0 ? given.subjectAltNames : serviceAccounts;
  const common: NonNullable<UpstreamTlsInit['commonTlsContext']> = { tlsParams: commonTlsParams() };
  const skipVerify = given.insecureSkipVerify === true;
  if (given.credentialName !== '') {
    if (mutual) common.tlsCertificateSdsSecretConfigs = [credentialSds(given.credentialName)];
    if (!skipVerify) {
      common.validationContextType = {
        case: 'combinedValidationContext',
        value: {
          defaultValidationContext: { matchSubjectAltNames: exactSans(sans) },
          validationContextSdsSecretConfig: credentialSds(`${given.credentialName}${CA_SUFFIX}`),
        },
      };
    }
  } else {
    if (mutual) {
      if (given.clientCertificate === '' || given.privateKey === '') return undefined;
      common.tlsCertificateSdsSecretConfigs = [fileSds(`file-cert:${given.clientCertificate}~${given.privateKey}`)];
    }
    if (skipVerify) {
      common.validationContextType = { case: 'validationContext', value: {} };
    } else {
      const ca = given.caCertificates !== '' ? given.caCertificates : 'system';
      const defaults: ValidationInit = {
        matchSubjectAltNames: exactSans(sans),
        ...(given.caCrl !== '' ? { crl: { specifier: { case: 'filename', value: given.caCrl } } } : {}),
      };
      common.validationContextType = {
        case: 'combinedValidationContext',
        value: { defaultValidationContext: defaults, validationContextSdsSecretConfig: fileSds(`file-root:${ca}`) },
      };
    }
  }
  if (isHttp2(d)) common.alpnProtocols = ['h2'];
  return { commonTlsContext: common, sni: given.sni };
}

function istioMutualContext(d: ClusterDraft, tls: ClientTLSSettings, clusterName: string): UpstreamTlsInit {
  return {
    commonTlsContext: {
      tlsParams: commonTlsParams(),
      tlsCertificateSdsSecretConfigs: [sdsSecret(SDS_DEFAULT)],
      validationContextType: {
        case: 'combinedValidationContext',
        value: {
          defaultValidationContext: { matchSubjectAltNames: exactSans(tls.subjectAltNames) },
          validationContextSdsSecretConfig: sdsSecret(SDS_ROOT_CA),
        },
      },
      alpnProtocols: isHttp2(d) ? ALPN_IN_MESH_H2 : ALPN_IN_MESH,
    },
    sni: tls.sni !== '' ? tls.sni : clusterName,
  };
}

function tlsContext(d: ClusterDraft, tls: ClientTLSSettings, input: UpstreamTlsInput): UpstreamTlsInit | undefined {
  // istiod: a secret-backed credentialName on a sidecar needs a DestinationRule with a workloadSelector,
  // so the secret only goes to the workloads that asked for it (configmap:// is public).
  const privileged = tls.credentialName !== '' && !tls.credentialName.startsWith('configmap://');
  if (privileged && input.sidecar && !input.drHasWorkloadSelector && (tls.mode === Mode.SIMPLE || tls.mode === Mode.MUTUAL))
    return undefined;
  switch (tls.mode) {
    case Mode.ISTIO_MUTUAL:
      return istioMutualContext(d, tls, d.c.name ?? '');
    case Mode.SIMPLE:
    case Mode.MUTUAL:
      return simpleOrMutual(d, tls, input.serviceAccounts);
    default:
      return undefined;
  }
}

const MTLS_MATCH = 'tlsMode-istio';
const PLAINTEXT_MATCH = 'tlsMode-disabled';

/**
 * istiod's applyUpstreamTLSSettings: the TLS socket on the cluster; when auto mTLS chose it (and
 * the cluster is not ORIGINAL_DST), transport_socket_matches instead — mTLS to endpoints whose EDS
 * metadata says tlsMode istio, plaintext to the rest.
 */
export function applyUpstreamTls(d: ClusterDraft, input: UpstreamTlsInput): void {
  const { tls, autoDetected } = resolveTls(input);
  if (!tls) return;
  const ctx = tlsContext(d, tls, input);
  if (!ctx) return;
  const socket = {
    name: TLS_TRANSPORT_SOCKET,
    configType: { case: 'typedConfig' as const, value: packAny(UpstreamTlsContextSchema, ctx) },
  };
  if (!autoDetected || discoveryType(d) === Cluster_DiscoveryType.ORIGINAL_DST) {
    d.c.transportSocket = socket;
    return;
  }
  d.c.transportSocketMatches = [
    { name: MTLS_MATCH, match: { tlsMode: 'istio' }, transportSocket: socket },
    { name: PLAINTEXT_MATCH, match: {}, transportSocket: rawBufferSocket() },
  ];
}
