/**
 * istioctl's deprecation.DeprecationAnalyzer (IST0002): a VirtualService fault delay given as the
 * integer `percent` (use `percentage`), a Sidecar's `outboundTrafficPolicy.egressProxy` (ignored),
 * and CRDs of the removed `rbac.istio.io` kinds.
 */
import { MSG } from '../analyze/messages.js';
import { configsOf, objectsOf, refOf, type Analyzer } from '../analyze/model.js';
import { stringAt } from './k8s-fields.js';

const REMOVED_RBAC_KINDS = new Set(['ClusterRbacConfig', 'RbacConfig', 'ServiceRole', 'ServiceRoleBinding']);

export const deprecationAnalyzer: Analyzer = {
  name: 'deprecation.DeprecationAnalyzer',
  description: 'Checks for deprecated Istio types and fields',
  messages: [MSG.Deprecated],
  analyze(s, report) {
    for (const vs of configsOf(s, 'VirtualService')) {
      for (const route of vs.spec.http) {
        const delay = route.fault?.delay;
        if (delay !== undefined && delay.percent > 0)
          report({
            type: MSG.Deprecated,
            resource: refOf(vs),
            args: ['HTTPRoute.fault.delay.percent is deprecated; use HTTPRoute.fault.delay.percentage'],
          });
      }
    }
    for (const sc of configsOf(s, 'Sidecar')) {
      if (sc.spec.outboundTrafficPolicy?.egressProxy !== undefined)
        report({ type: MSG.Deprecated, resource: refOf(sc), args: ['OutboundTrafficPolicy.EgressProxy ignored'] });
    }
    for (const crd of objectsOf(s, 'CustomResourceDefinition')) {
      const group = stringAt(crd.body, 'spec', 'group');
      const kind = stringAt(crd.body, 'spec', 'names', 'kind') ?? '';
      if (group === 'rbac.istio.io' && REMOVED_RBAC_KINDS.has(kind))
        report({ type: MSG.Deprecated, resource: crd.ref, args: [`Custom resource type ${group} ${kind} is removed`] });
    }
  },
};
