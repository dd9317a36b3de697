/**
 * istioctl's sidecar.SelectorAnalyzer: a Sidecar's workload selector must match a pod of its
 * namespace (IST0101 `selector`, at the selector label), and no pod may be selected by two
 * Sidecars (IST0110, at `metadata.name`). Pods come from the files.
 */
import type { Config } from '../../config/config.js';
import { MSG } from '../analyze/messages.js';
import { at, configsOf, refOf, selects, type Analyzer } from '../analyze/model.js';
import { selectorString } from './gateway-selector.js';

export const sidecarSelectorAnalyzer: Analyzer = {
  name: 'sidecar.SelectorAnalyzer',
  description: "Validates that sidecars that define a workload selector match at least one pod, and that there aren't multiple sidecar resources that select overlapping pods",
  messages: [MSG.ReferencedResourceNotFound, MSG.ConflictingSidecarWorkloadSelectors],
  analyze(s, report) {
    const byPod = new Map<string, Config<'Sidecar'>[]>();
    for (const sc of configsOf(s, 'Sidecar')) {
      const sel = sc.spec.workloadSelector?.labels;
      if (!sel || Object.keys(sel).length === 0) continue;
      let found = false;
      for (const pod of s.pods) {
        if (pod.ref.namespace !== sc.meta.namespace || !selects(sel, pod.labels)) continue;
        found = true;
        const key = `${pod.ref.namespace}/${pod.ref.name}`;
        byPod.set(key, [...(byPod.get(key) ?? []), sc]);
      }
      if (!found) {
        const resource = refOf(sc);
        const first = Object.keys(sel).sort()[0] ?? '';
        report({ type: MSG.ReferencedResourceNotFound, resource, args: ['selector', selectorString(sel)], ...at(s, resource, `spec.workloadSelector.labels.${first}`) });
      }
    }
    for (const [pod, list] of byPod) {
      if (list.length < 2) continue;
      const names = list.map((sc) => sc.meta.name);
      const [ns = '', podName = ''] = pod.split('/');
      for (const sc of list) {
        const resource = refOf(sc);
        report({ type: MSG.ConflictingSidecarWorkloadSelectors, resource, args: [names, ns, podName], ...at(s, resource, 'metadata.name') });
      }
    }
  },
};
