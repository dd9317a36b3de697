/**
 * istioctl's telemetry.DefaultSelectorAnalyzer (IST0160): more than one Telemetry without a
 * `selector` in a namespace, each reported with the sorted names of all of them.
 */
import { MSG } from '../analyze/messages.js';
import type { AnalysisObject, Analyzer } from '../analyze/model.js';
import type { Telemetry } from '../../gen/telemetry/v1alpha1/telemetry_pb.js';

export const telemetryDefaultSelectorAnalyzer: Analyzer = {
  name: 'telemetry.DefaultSelectorAnalyzer',
  description: "Validates that there aren't multiple telemetry resources that have no selector",
  messages: [MSG.MultipleTelemetriesWithoutWorkloadSelectors],
  analyze(s, report) {
    const byNs = new Map<string, AnalysisObject<Telemetry>[]>();
    for (const t of s.telemetries) {
      // Only a missing selector counts: an empty one is a selector, as in istioctl.
      if (t.spec.selector === undefined) byNs.set(t.ref.namespace, [...(byNs.get(t.ref.namespace) ?? []), t]);
    }
    for (const [ns, list] of byNs) {
      if (list.length < 2) continue;
      const names = list.map((t) => t.ref.name).sort();
      for (const t of list) report({ type: MSG.MultipleTelemetriesWithoutWorkloadSelectors, resource: t.ref, args: [names, ns] });
    }
  },
};
