import { create } from '@bufbuild/protobuf';
import { SecretSchema, type Secret } from '../../gen/envoy/extensions/transport_sockets/tls/v3/secret_pb.js';
import { CREDENTIAL_PREFIX } from '../secret/sds-config.js';
import type { GatewayContext } from './gateway-context.js';
import { CA_SUFFIX } from './gateway-tls.js';
import type { CredentialLookup, TlsCredential } from './kubernetes-secret.js';

const bytes = (pem: string): { specifier: { case: 'inlineBytes'; value: Uint8Array } } => ({
  specifier: { case: 'inlineBytes', value: new TextEncoder().encode(pem) },
});

/** `kubernetes://<name>` or `kubernetes://<ns>/<name>` → the Secret's namespace and name (istiod's ParseResourceName). */
function parseResourceName(resource: string, proxyNamespace: string): { namespace: string; name: string } | undefined {
  if (!resource.startsWith(CREDENTIAL_PREFIX)) return undefined;
  const [first = '', second] = resource.slice(CREDENTIAL_PREFIX.length).split('/');
  const ref = second === undefined ? { namespace: proxyNamespace, name: first } : { namespace: first, name: second };
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
export function buildGatewaySecrets(credentials: CredentialLookup, ctx: Pick<GatewayContext, 'proxy'>, names: ReadonlySet<string>): Secret[] {
  const out: Secret[] = [];
  for (const resource of [...names].sort()) {
    const ref = parseResourceName(resource, ctx.proxy.namespace);
    if (!ref || ref.namespace !== ctx.proxy.namespace) continue;
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
