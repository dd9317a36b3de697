import { create } from '@bufbuild/protobuf';
import { SecretSchema, type Secret } from '../../gen/envoy/extensions/transport_sockets/tls/v3/secret_pb.js';
import { CREDENTIAL_PREFIX } from '../secret/sds-config.js';
import type { GatewayContext } from './gateway-context.js';
import { CA_SUFFIX } from './gateway-tls.js';
import type { CredentialLookup, TlsCredential } from '../../model/index.js';

const bytes = (pem: string): { specifier: { case: 'inlineBytes'; value: Uint8Array } } => ({
  specifier: { case: 'inlineBytes', value: new TextEncoder().encode(pem) },
});

/** Gateway API certificateRefs: `kubernetes-gateway://<ns>/<name>` (istiod's KubernetesGatewaySecretType). */
const GATEWAY_CREDENTIAL_PREFIX = 'kubernetes-gateway://';

/** `kubernetes://<name>`, `kubernetes://<ns>/<name>` or `kubernetes-gateway://<ns>/<name>` → the Secret's namespace and name (istiod's ParseResourceName). */
function parseResourceName(resource: string, proxyNamespace: string): { namespace: string; name: string; gatewayApi: boolean } | undefined {
  const gatewayApi = resource.startsWith(GATEWAY_CREDENTIAL_PREFIX);
  const prefix = gatewayApi ? GATEWAY_CREDENTIAL_PREFIX : CREDENTIAL_PREFIX;
  if (!resource.startsWith(prefix)) return undefined;
  const [first = '', second] = resource.slice(prefix.length).split('/');
  const ref =
    second === undefined ? { namespace: proxyNamespace, name: first, gatewayApi } : { namespace: first, name: second, gatewayApi };
  return ref.name !== '' && ref.namespace !== '' ? ref : undefined;
}

/**
 * The SDS Secrets istiod serves a gateway for `credentialName`s: `kubernetes://<name>` as a
 * tls_certificate (chain, key, OCSP staple), `kubernetes://<name>-cacert` as a validation context
 * (trusted CA, CRL) — from the `<name>-cacert` Secret, else from the CA keys of `<name>` itself.
 * Only Secrets in the proxy's own namespace are served (istiod refuses cross-namespace
 * `kubernetes://` references). A missing or unusable credential yields no resource, so Envoy keeps
 * the listener warming until it appears, as with istiod; logging is the caller's.
 */
export function buildGatewaySecrets(
  credentials: CredentialLookup,
  ctx: Pick<GatewayContext, 'proxy'>,
  names: ReadonlySet<string>,
  /** Whether a ReferenceGrant lets Gateways in `from` use the Secret `to/name` (Gateway API credentials only). */
  granted: (from: string, to: string, name: string) => boolean = () => false,
): Secret[] {
  const out: Secret[] = [];
  for (const resource of [...names].sort()) {
    const ref = parseResourceName(resource, ctx.proxy.namespace);
    if (!ref) continue;
    if (
      ref.namespace !== ctx.proxy.namespace &&
      !(ref.gatewayApi && granted(ctx.proxy.namespace, ref.namespace, ref.name.replace(new RegExp(`${CA_SUFFIX}$`), '')))
    )
      continue;
    if (ref.name.endsWith(CA_SUFFIX)) {
      const ca = caOf(credentials, ref.namespace, ref.name);
      if (ca?.caCert) out.push(caSecret(resource, ca));
      continue;
    }
    const cred = credentials.get(ref.namespace, ref.name);
    if (cred && cred.certChain !== '' && cred.privateKey !== '') out.push(certificateSecret(resource, cred));
  }
  return out;
}

/** istiod's GetCaCert: the `-cacert` Secret when it exists, else the Secret without the suffix. */
function caOf(credentials: CredentialLookup, namespace: string, name: string): TlsCredential | undefined {
  return credentials.get(namespace, name) ?? credentials.get(namespace, name.slice(0, -CA_SUFFIX.length));
}

function certificateSecret(name: string, c: TlsCredential): Secret {
  return create(SecretSchema, {
    name,
    type: {
      case: 'tlsCertificate',
      value: {
        certificateChain: bytes(c.certChain),
        privateKey: bytes(c.privateKey),
        ...(c.ocspStaple ? { ocspStaple: bytes(c.ocspStaple) } : {}),
      },
    },
  });
}

function caSecret(name: string, c: TlsCredential): Secret {
  return create(SecretSchema, {
    name,
    type: { case: 'validationContext', value: { trustedCa: bytes(c.caCert ?? ''), ...(c.crl ? { crl: bytes(c.crl) } : {}) } },
  });
}
