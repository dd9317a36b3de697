/**
 * istioctl's destinationrule.SubsetSelectPodAnalyzer: a DestinationRule host must name a service
 * (IST0174, exact host or a wildcard ServiceEntry host; a wildcard DestinationRule host names
 * none, as in istioctl), and each subset's labels merged over the service's selector must select
 * some workload (IST0173). Workloads: the files' Pods (any namespace, as istioctl) and, beyond
 * istioctl, WorkloadEntries.
 */
import { findService } from '../analyze/hosts.js';
import { MSG } from '../analyze/messages.js';
import { configsOf, refOf, type Analyzer } from '../analyze/model.js';
import { labelsSubsetOf } from '../../config/index.js';

export const destinationRuleSubsetPodsAnalyzer: Analyzer = {
  name: 'destinationrule.SubsetSelectPodAnalyzer',
  description: 'Checks if pods are selected by subsets in destination rules.',
  messages: [MSG.UnknownDestinationRuleHost, MSG.DestinationRuleSubsetNotSelectPods],
  analyze(s, report) {
    const workloads = [...s.pods.map((p) => p.labels), ...configsOf(s, 'WorkloadEntry').map((w) => w.spec.labels)];
    for (const dr of configsOf(s, 'DestinationRule')) {
      const resource = refOf(dr);
      const svc = dr.spec.host.startsWith('*') ? undefined : findService(s, dr.spec.host, dr.meta.namespace);
      if (!svc) {
        report({ type: MSG.UnknownDestinationRuleHost, resource, args: [dr.spec.host] });
        continue;
      }
      for (const ss of dr.spec.subsets) {
        const want = { ...svc.selector, ...ss.labels };
        if (!workloads.some((labels) => labelsSubsetOf(want, labels)))
          report({ type: MSG.DestinationRuleSubsetNotSelectPods, resource, args: [ss.name] });
      }
    }
  },
};
