/**
 * istioctl's destinationrule.CaCertificateAnalyzer: TLS mode SIMPLE or MUTUAL without
 * caCertificates does not verify the server (IST0128 for the rule's policy, IST0129 per port),
 * unless a credentialName supplies it on a DestinationRule with a workload selector.
 * The port prints as Go's PortSelector String(), `number:<n>`.
 */
import { ClientTLSSettings_TLSmode, type ClientTLSSettings } from '../../gen/networking/v1alpha3/destination_rule_pb.js';
import { MSG } from '../analyze/messages.js';
import { at, configsOf, fullName, refOf, type Analyzer } from '../analyze/model.js';

/**
 * The mode's name when it is one that should verify the server, else undefined. A credentialName
 * on a DestinationRule with a workload selector brings its CA with it (as istioctl reads it).
 */
function verifyingMode(tls: ClientTLSSettings | undefined, selected: boolean): string | undefined {
  if (!tls || tls.caCertificates !== '' || (tls.credentialName !== '' && selected)) return undefined;
  if (tls.mode === ClientTLSSettings_TLSmode.SIMPLE) return 'SIMPLE';
  if (tls.mode === ClientTLSSettings_TLSmode.MUTUAL) return 'MUTUAL';
  return undefined;
}

export const caCertificatesAnalyzer: Analyzer = {
  name: 'destinationrule.CaCertificateAnalyzer',
  description: 'Checks if caCertificates is set when TLS mode is SIMPLE/MUTUAL',
  messages: [MSG.NoServerCertificateVerificationDestinationLevel, MSG.NoServerCertificateVerificationPortLevel],
  analyze(s, report) {
    for (const dr of configsOf(s, 'DestinationRule')) {
      const resource = refOf(dr);
      const policy = dr.spec.trafficPolicy;
      const selected = dr.spec.workloadSelector !== undefined;
      const mode = verifyingMode(policy?.tls, selected);
      if (mode) {
        report({
          type: MSG.NoServerCertificateVerificationDestinationLevel,
          resource,
          args: [fullName(resource), dr.meta.namespace, mode, dr.spec.host],
        });
      }
      policy?.portLevelSettings.forEach((p, i) => {
        const m = verifyingMode(p.tls, selected);
        if (!m) return;
        report({
          type: MSG.NoServerCertificateVerificationPortLevel,
          resource,
          args: [fullName(resource), dr.meta.namespace, m, dr.spec.host, `number:${p.port?.number ?? 0}`],
          ...at(s, resource, `spec.trafficPolicy.portLevelSettings[${i}].tls`),
        });
      });
    }
  },
};
