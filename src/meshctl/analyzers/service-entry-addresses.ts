/**
 * istioctl's serviceentry.ProtocolAddressesAnalyzer (IST0134): a ServiceEntry without addresses
 * whose port protocol is TCP or unset cannot be told apart by the sidecar (no DNS auto-allocation
 * in file mode). One message per such port, at the port's line.
 */
import { MSG } from '../analyze/messages.js';
import { at, configsOf, refOf, type Analyzer } from '../analyze/model.js';

export const serviceEntryAddressesAnalyzer: Analyzer = {
  name: 'serviceentry.Analyzer',
  description: 'Checks the validity of ServiceEntry',
  messages: [MSG.ServiceEntryAddressesRequired],
  analyze(s, report) {
    for (const se of configsOf(s, 'ServiceEntry')) {
      if (se.spec.addresses.length > 0) continue;
      const resource = refOf(se);
      se.spec.ports.forEach((p, i) => {
        // Exactly "TCP", as istioctl compares it.
        if (p.protocol === '' || p.protocol === 'TCP')
          report({ type: MSG.ServiceEntryAddressesRequired, resource, args: [], ...at(s, resource, `spec.ports[${i}]`) });
      });
    }
  },
};
