/**
 * istioctl's serviceentry.ProtocolAddressesAnalyzer (IST0134): a ServiceEntry without addresses
 * whose port protocol is TCP (any case) or unset cannot be told apart by the sidecar, unless
 * addresses are allocated: by the mesh config (DNS capture with `ISTIO_META_DNS_AUTO_ALLOCATE` or
 * `PILOT_ENABLE_IP_AUTOALLOCATE` in `defaultConfig.proxyMetadata`) or already in the
 * ServiceEntry's status. One message per such port, at the port's line.
 */
import { MSG } from '../analyze/messages.js';
import { at, configsOf, refOf, type Analyzer } from '../analyze/model.js';
import { recordsAt } from './k8s-fields.js';

export const serviceEntryAddressesAnalyzer: Analyzer = {
  name: 'serviceentry.Analyzer',
  description: 'Checks the validity of ServiceEntry',
  messages: [MSG.ServiceEntryAddressesRequired],
  analyze(s, report) {
    const meta = s.meshConfig.defaultConfig?.proxyMetadata ?? {};
    if (
      meta.ISTIO_META_DNS_CAPTURE === 'true' &&
      (meta.ISTIO_META_DNS_AUTO_ALLOCATE === 'true' || meta.PILOT_ENABLE_IP_AUTOALLOCATE === 'true')
    )
      return;
    const allocated = new Set(
      s.statusObjects
        .filter((o) => o.ref.kind === 'ServiceEntry' && recordsAt(o.body, 'status', 'addresses').length > 0)
        .map((o) => `${o.ref.namespace}/${o.ref.name}`),
    );
    for (const se of configsOf(s, 'ServiceEntry')) {
      if (se.spec.addresses.length > 0 || allocated.has(`${se.meta.namespace}/${se.meta.name}`)) continue;
      const resource = refOf(se);
      se.spec.ports.forEach((p, i) => {
        if (p.protocol === '' || p.protocol.toUpperCase() === 'TCP')
          report({ type: MSG.ServiceEntryAddressesRequired, resource, args: [], ...at(s, resource, `spec.ports[${i}]`) });
      });
    }
  },
};
