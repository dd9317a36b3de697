/**
 * istioctl's gateway.SecretAnalyzer: a Gateway's selector must pick a pod (IST0101 `selector`);
 * the first picked pod's namespace is where its TLS servers' `credentialName` Secrets must be
 * (IST0101 `credentialName`), and each must hold a usable server certificate (IST0161): cert and
 * key as the gateway reads them (the server's own Secret reader) and a first certificate inside
 * its validity period. Lines point at the credentialName.
 */
import { X509Certificate } from 'node:crypto';
import { toJson } from '@bufbuild/protobuf';
import { StructSchema } from '@bufbuild/protobuf/wkt';
import type { Config } from '../../config/index.js';
import { parseKubernetesSecret } from '../../model/kubernetes-secret.js';
import { MSG } from '../analyze/messages.js';
import { at, configsOf, refOf, type Analyzer } from '../analyze/model.js';
import { gatewayPods, reportNoGatewayPods } from './gateway-selector.js';

/** Whether a Secret holds a server certificate istiod would serve now. */
export function isValidCredential(secret: Config<'Secret'>, now: Date): boolean {
  const doc = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: secret.meta.name, namespace: secret.meta.namespace },
    ...(toJson(StructSchema, secret.spec) as object),
  };
  const parsed = parseKubernetesSecret(doc);
  if (!parsed.ok || parsed.value.credential.certChain === '') return false;
  const first = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/.exec(parsed.value.credential.certChain)?.[0];
  if (first === undefined) return false;
  const cert = new X509Certificate(first);
  return now >= new Date(cert.validFrom) && now <= new Date(cert.validTo);
}

export const gatewaySecretAnalyzer: Analyzer = {
  name: 'gateway.SecretAnalyzer',
  description: "Checks a gateway's referenced secrets for correctness",
  messages: [MSG.ReferencedResourceNotFound, MSG.InvalidGatewayCredential],
  analyze(s, report) {
    const secrets = new Map(configsOf(s, 'Secret').map((sec) => [`${sec.meta.namespace}/${sec.meta.name}`, sec]));
    const now = new Date();
    for (const gw of configsOf(s, 'Gateway')) {
      const gwNs = gatewayPods(s, gw)[0]?.ref.namespace;
      if (gwNs === undefined) {
        reportNoGatewayPods(s, gw, report);
        continue;
      }
      const resource = refOf(gw);
      gw.spec.servers.forEach((srv, i) => {
        const cn = srv.tls?.credentialName ?? '';
        if (cn === '') return;
        const line = at(s, resource, `spec.servers[${i}].tls.credentialName`);
        const secret = secrets.get(cn.includes('/') ? cn : `${gwNs}/${cn}`);
        if (!secret) report({ type: MSG.ReferencedResourceNotFound, resource, args: ['credentialName', cn], ...line });
        else if (!isValidCredential(secret, now))
          report({ type: MSG.InvalidGatewayCredential, resource, args: [gw.meta.name, gwNs], ...line });
      });
    }
  },
};
