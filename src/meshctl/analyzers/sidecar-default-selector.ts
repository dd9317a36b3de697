/**
 * istioctl's namespace-wide Sidecar checks (sidecar.SelectorAnalyzer; sidecar.DefaultSelectorAnalyzer
 * in older releases): more than one Sidecar without a workload selector (missing, or with no
 * labels) in a namespace is IST0111 on each; in a namespace in ambient mode such Sidecars have no
 * effect at all (IST0167 on each instead).
 */
import type { Config } from '../../config/index.js';
import { MSG } from '../analyze/messages.js';
import { configsOf, refOf, type Analyzer, type K8sNamespace } from '../analyze/model.js';
import { DATAPLANE_MODE_LABEL, NAMESPACE_INJECTION_LABEL, REVISION_LABEL } from '../../config/constants.js';

/** istioctl's NamespaceInAmbientMode: dataplane-mode ambient, unless sidecar injection or a revision is asked for. */
function ambientNamespace(ns: K8sNamespace | undefined): boolean {
  if (!ns || ns.labels[NAMESPACE_INJECTION_LABEL] === 'enabled') return false;
  if ((ns.labels[REVISION_LABEL] ?? '') !== '') return false;
  return ns.labels[DATAPLANE_MODE_LABEL] === 'ambient';
}

export const sidecarDefaultSelectorAnalyzer: Analyzer = {
  name: 'sidecar.DefaultSelectorAnalyzer',
  description: "Validates that there aren't multiple sidecar resources that have no selector",
  messages: [MSG.MultipleSidecarsWithoutWorkloadSelectors, MSG.IneffectivePolicy],
  analyze(s, report) {
    const byNs = new Map<string, Config<'Sidecar'>[]>();
    for (const sc of configsOf(s, 'Sidecar')) {
      const labels = sc.spec.workloadSelector?.labels ?? {};
      if (Object.keys(labels).length === 0) byNs.set(sc.meta.namespace, [...(byNs.get(sc.meta.namespace) ?? []), sc]);
    }
    for (const [ns, list] of byNs) {
      if (ambientNamespace(s.namespaces.find((n) => n.ref.name === ns))) {
        for (const sc of list)
          report({ type: MSG.IneffectivePolicy, resource: refOf(sc), args: ['namespace is in ambient mode, the policy has no impact'] });
        continue;
      }
      if (list.length < 2) continue;
      const names = list.map((sc) => sc.meta.name).sort();
      for (const sc of list) report({ type: MSG.MultipleSidecarsWithoutWorkloadSelectors, resource: refOf(sc), args: [names, ns] });
    }
  },
};
