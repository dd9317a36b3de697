import type { TransportSocketSchema } from '../../gen/envoy/config/core/v3/base_pb.js';
import { ClientTLSSettings_TLSmode } from '../../gen/networking/v1alpha3/destination_rule_pb.js';
import {
  DownstreamTlsContextSchema,
  UpstreamTlsContextSchema,
  type CommonTlsContextSchema,
} from '../../gen/envoy/extensions/transport_sockets/tls/v3/tls_pb.js';
import { packAny, type Init } from '../common.js';
import type { EffectivePolicy } from '../traffic-policy.js';

/** gRPC only accepts a transport socket of exactly this name (istiod's grpcgen transportSocketName). */
export const TLS_TRANSPORT_SOCKET = 'envoy.transport_sockets.tls';
/**
 * The bootstrap `certificate_providers` instance Istio's agent writes for proxyless gRPC
 * (file_watcher over cert-chain.pem, key.pem, root-cert.pem).
 */
export const CERT_PROVIDER_INSTANCE = 'default';
/** Certificate names within the instance, as istiod sends them: the workload cert and the mesh root. */
export const WORKLOAD_CERT_NAME = 'default';
export const ROOT_CERT_NAME = 'ROOTCA';

type CommonTlsInit = Init<typeof CommonTlsContextSchema>;
type TransportSocketInit = Init<typeof TransportSocketSchema>;

/**
 * istiod's grpcgen buildCommonTLSContext: certificates from the bootstrap's certificate provider
 * instance, in both the current fields (tls_certificate_provider_instance,
 * default_validation_context.ca_certificate_provider_instance; gRPC ≥ 1.66 and grpc-js) and the
 * deprecated ones older gRPC reads (fields 11 and combined_validation_context field 4). No
 * tls_params: gRPC rejects a context that sets them. `sans` become exact SAN matches; none means
 * any certificate the root signed is accepted.
 */
export function grpcCommonTlsContext(sans: readonly string[]): CommonTlsInit {
  return {
    tlsCertificateProviderInstance: { instanceName: CERT_PROVIDER_INSTANCE, certificateName: WORKLOAD_CERT_NAME },
    tlsCertificateCertificateProviderInstance: { instanceName: CERT_PROVIDER_INSTANCE, certificateName: WORKLOAD_CERT_NAME },
    validationContextType: {
      case: 'combinedValidationContext',
      value: {
        defaultValidationContext: {
          matchSubjectAltNames: sans.map((s) => ({ matchPattern: { case: 'exact' as const, value: s } })),
          caCertificateProviderInstance: { instanceName: CERT_PROVIDER_INSTANCE, certificateName: ROOT_CERT_NAME },
        },
        validationContextCertificateProviderInstance: { instanceName: CERT_PROVIDER_INSTANCE, certificateName: ROOT_CERT_NAME },
        // Required by Envoy's validation rules (istiod leaves it out). gRPC ignores it (A29: other
        // ways of fetching certificates are ignored); a bare name refers to the same root.
        validationContextSdsSecretConfig: { name: ROOT_CERT_NAME },
      },
    },
  };
}

/** The client side of ISTIO_MUTUAL: present the workload cert, verify the server against the root and `sans`. */
export function grpcUpstreamTlsSocket(sans: readonly string[]): TransportSocketInit {
  return {
    name: TLS_TRANSPORT_SOCKET,
    configType: { case: 'typedConfig', value: packAny(UpstreamTlsContextSchema, { commonTlsContext: grpcCommonTlsContext(sans) }) },
  };
}

/**
 * The server side of mTLS (PeerAuthentication STRICT). As in istiod, no SAN match: gRPC servers
 * do not enforce match_subject_alt_names; who may call is decided by the RBAC filter instead.
 */
export function grpcDownstreamTlsSocket(): TransportSocketInit {
  return {
    name: TLS_TRANSPORT_SOCKET,
    configType: {
      case: 'typedConfig',
      value: packAny(DownstreamTlsContextSchema, { commonTlsContext: grpcCommonTlsContext([]), requireClientCertificate: true }),
    },
  };
}

/**
 * The transport socket of a proxyless client cluster. Only an explicit ISTIO_MUTUAL
 * DestinationRule turns TLS on, as in istiod's grpcgen: a gRPC client cannot fall back to
 * plaintext per endpoint (no auto-mTLS) and gRPC servers cannot serve PERMISSIVE. SIMPLE and
 * MUTUAL are not supported for proxyless clients (istiod: TODO) and stay plaintext.
 * The server identities: the rule's subjectAltNames when given, else the service's accounts.
 */
export function grpcClusterTlsSocket(
  policy: EffectivePolicy | undefined,
  serviceAccounts: readonly string[],
): TransportSocketInit | undefined {
  const tls = policy?.tls;
  if (tls?.mode !== ClientTLSSettings_TLSmode.ISTIO_MUTUAL) return undefined;
  return grpcUpstreamTlsSocket(tls.subjectAltNames.length > 0 ? tls.subjectAltNames : serviceAccounts);
}
