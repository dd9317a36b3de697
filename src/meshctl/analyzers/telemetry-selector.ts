/**
 * istioctl's telemetry.SelectorAnalyzer: a Telemetry's selector must match a pod of its namespace
 * (IST0101 `selector`, at the selector label), and no pod may be selected by two Telemetries
 * (IST0159, at `metadata.name`).
 */
import type { Telemetry } from '../../gen/telemetry/v1alpha1/telemetry_pb.js';
import { labelsSubsetOf } from '../../config/index.js';
import { MSG } from '../analyze/messages.js';
import { at, type AnalysisObject, type Analyzer, type K8sPod } from '../analyze/model.js';
import { selectorString } from './gateway-selector.js';

export const telemetrySelectorAnalyzer: Analyzer = {
  name: 'telemetry.SelectorAnalyzer',
  description:
    "Validates that telemetries that define a selector match at least one pod, and that there aren't multiple telemetry resources that select overlapping pods",
  messages: [MSG.ReferencedResourceNotFound, MSG.ConflictingTelemetryWorkloadSelectors],
  analyze(s, report) {
    const byPod = new Map<K8sPod, AnalysisObject<Telemetry>[]>();
    for (const t of s.telemetries) {
      const sel = t.spec.selector?.matchLabels;
      if (!sel || Object.keys(sel).length === 0) continue;
      const pods = s.pods.filter((p) => p.ref.namespace === t.ref.namespace && labelsSubsetOf(sel, p.labels));
      for (const p of pods) byPod.set(p, [...(byPod.get(p) ?? []), t]);
      if (pods.length === 0) {
        const first = Object.keys(sel).sort()[0] ?? '';
        report({
          type: MSG.ReferencedResourceNotFound,
          resource: t.ref,
          args: ['selector', selectorString(sel)],
          ...at(s, t.ref, `spec.selector.matchLabels.${first}`),
        });
      }
    }
    for (const [pod, list] of byPod) {
      if (list.length < 2) continue;
      const names = list.map((t) => t.ref.name).sort();
      for (const t of list) {
        report({
          type: MSG.ConflictingTelemetryWorkloadSelectors,
          resource: t.ref,
          args: [names, pod.ref.namespace, pod.ref.name],
          ...at(s, t.ref, 'metadata.name'),
        });
      }
    }
  },
};
