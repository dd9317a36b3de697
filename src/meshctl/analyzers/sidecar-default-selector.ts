/** istioctl's sidecar.DefaultSelectorAnalyzer (IST0111): more than one Sidecar without a workloadSelector in a namespace. */
import type { Config } from '../../config/config.js';
import { MSG } from '../analyze/messages.js';
import { configsOf, refOf, type Analyzer } from '../analyze/model.js';

export const sidecarDefaultSelectorAnalyzer: Analyzer = {
  name: 'sidecar.DefaultSelectorAnalyzer',
  description: "Validates that there aren't multiple sidecar resources that have no selector",
  messages: [MSG.MultipleSidecarsWithoutWorkloadSelectors],
  analyze(s, report) {
    const byNs = new Map<string, Config<'Sidecar'>[]>();
    for (const sc of configsOf(s, 'Sidecar')) {
      // istioctl counts only a missing workloadSelector, not an empty one.
      if (sc.spec.workloadSelector === undefined) byNs.set(sc.meta.namespace, [...(byNs.get(sc.meta.namespace) ?? []), sc]);
    }
    for (const [ns, list] of byNs) {
      if (list.length < 2) continue;
      const names = list.map((sc) => sc.meta.name);
      for (const sc of list) report({ type: MSG.MultipleSidecarsWithoutWorkloadSelectors, resource: refOf(sc), args: [names, ns] });
    }
  },
};
