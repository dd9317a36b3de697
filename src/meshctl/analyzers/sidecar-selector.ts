/**
 * istioctl's sidecar.SelectorAnalyzer: a Sidecar's workload selector must match a pod of its
 * namespace (IST0101 `selector`, at the selector label), and no pod may be selected by two
 * Sidecars (IST0110, at `metadata.name`). A Sidecar selecting a pod enrolled in ambient mode
 * (`ambient.istio.io/redirection: enabled`) has no effect: IST0167 instead, once per Sidecar.
 */
import { type Config, labelsSubsetOf } from '../../config/index.js';
import { MSG } from '../analyze/messages.js';
import { at, configsOf, refOf, type Analyzer, type K8sPod } from '../analyze/model.js';
import { selectorString } from './gateway-selector.js';

/** Set on a pod once the CNI has enrolled it in ambient mode. */
const AMBIENT_REDIRECTION = 'ambient.istio.io/redirection';

export const sidecarSelectorAnalyzer: Analyzer = {
  name: 'sidecar.SelectorAnalyzer',
  description:
    "Validates that sidecars that define a workload selector match at least one pod, and that there aren't multiple sidecar resources that select overlapping pods",
  messages: [MSG.ReferencedResourceNotFound, MSG.ConflictingSidecarWorkloadSelectors, MSG.IneffectivePolicy],
  analyze(s, report) {
    const byPod = new Map<K8sPod, Config<'Sidecar'>[]>();
    for (const sc of configsOf(s, 'Sidecar')) {
      const sel = sc.spec.workloadSelector?.labels;
      if (!sel || Object.keys(sel).length === 0) continue;
      let found = false;
      for (const pod of s.pods) {
        if (pod.ref.namespace !== sc.meta.namespace || !labelsSubsetOf(sel, pod.labels)) continue;
        found = true;
        byPod.set(pod, [...(byPod.get(pod) ?? []), sc]);
      }
      if (!found) {
        const resource = refOf(sc);
        const first = Object.keys(sel).sort()[0] ?? '';
        report({
          type: MSG.ReferencedResourceNotFound,
          resource,
          args: ['selector', selectorString(sel)],
          ...at(s, resource, `spec.workloadSelector.labels.${first}`),
        });
      }
    }
    const ineffective = new Set<Config<'Sidecar'>>();
    for (const [pod, list] of byPod) {
      const ambient = pod.annotations[AMBIENT_REDIRECTION] === 'enabled';
      if (list.length < 2 && !ambient) continue;
      const names = list.map((sc) => sc.meta.name).sort();
      for (const sc of list) {
        const resource = refOf(sc);
        if (ambient) {
          if (!ineffective.has(sc))
            report({ type: MSG.IneffectivePolicy, resource, args: ['selected workload is in ambient mode, the policy has no impact'] });
          ineffective.add(sc);
          continue;
        }
        report({
          type: MSG.ConflictingSidecarWorkloadSelectors,
          resource,
          args: [names, pod.ref.namespace, pod.ref.name],
          ...at(s, resource, 'metadata.name'),
        });
      }
    }
  },
};
