/**
 * istioctl's gateway.CertificateAnalyzer (IST0138): a gateway shares a TLS certificate with another
 * gateway whose selector contains all of its selector's labels (so they land on the same pods).
 * Same certificate: both credentialNames set and equal, or neither set and the same
 * serverCertificate and privateKey. One message per pair of servers, at `metadata.name`.
 */
import type { ServerTLSSettings } from '../../gen/networking/v1alpha3/gateway_pb.js';
import { MSG } from '../analyze/messages.js';
import { at, configsOf, fullName, refOf, type Analyzer } from '../analyze/model.js';
import { labelsSubsetOf } from '../../config/index.js';

function sameCertificate(a: ServerTLSSettings, b: ServerTLSSettings): boolean {
  if (a.credentialName !== '' && b.credentialName !== '') return a.credentialName === b.credentialName;
  if (a.credentialName !== '' || b.credentialName !== '') return false;
  return a.serverCertificate !== '' && a.serverCertificate === b.serverCertificate && a.privateKey !== '' && a.privateKey === b.privateKey;
}

export const gatewayDuplicateCertificateAnalyzer: Analyzer = {
  name: 'gateway.CertificateAnalyzer',
  description: 'Checks a gateway certificate',
  messages: [MSG.GatewayDuplicateCertificate],
  analyze(s, report) {
    const gws = configsOf(s, 'Gateway');
    for (const gw of gws) {
      const resource = refOf(gw);
      for (const other of gws) {
        if (other === gw || !labelsSubsetOf(gw.spec.selector, other.spec.selector)) continue;
        for (const a of gw.spec.servers) {
          for (const b of other.spec.servers) {
            if (a.tls && b.tls && sameCertificate(a.tls, b.tls)) {
              report({
                type: MSG.GatewayDuplicateCertificate,
                resource,
                args: [[fullName(resource), fullName(refOf(other))]],
                ...at(s, resource, 'metadata.name'),
              });
            }
          }
        }
      }
    }
  },
};
