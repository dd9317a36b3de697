/**
 * istioctl's destinationrule.SubsetSelectPodAnalyzer: a DestinationRule host must name a service
 * (IST0174, exact host or a wildcard ServiceEntry host; a wildcard DestinationRule host names
 * none, as in istioctl), and each subset's labels merged over the service's selector must select
 * some workload (IST0173). Workloads: the files' Pods (any namespace, as istioctl; with their
 * Node's region/zone/subzone labels and `kubernetes.io/hostname`, as istiod augments them) and,
 * beyond istioctl, WorkloadEntries.
 */
import { findService } from '../analyze/hosts.js';
import { MSG } from '../analyze/messages.js';
import { configsOf, objectsOf, refOf, type Analyzer } from '../analyze/model.js';
import { REGION_LABEL, SUBZONE_LABEL, ZONE_LABEL } from '../../config/constants.js';
import { stringAt } from './k8s-fields.js';
import { labelsSubsetOf, workloadEntryLabels } from '../../config/index.js';

export const destinationRuleSubsetPodsAnalyzer: Analyzer = {
  name: 'destinationrule.SubsetSelectPodAnalyzer',
  description: 'Checks if pods are selected by subsets in destination rules.',
  messages: [MSG.UnknownDestinationRuleHost, MSG.DestinationRuleSubsetNotSelectPods],
  analyze(s, report) {
    // As istiod's AugmentLabels: a pod also carries its Node's topology labels and its node's host name.
    const nodes = new Map(objectsOf(s, 'Node').map((n) => [n.ref.name, n.labels]));
    const podLabels = objectsOf(s, 'Pod').map((p) => {
      const nodeName = stringAt(p.body, 'spec', 'nodeName') ?? '';
      const node = nodes.get(nodeName) ?? {};
      const out: Record<string, string> = { ...p.labels };
      for (const l of [REGION_LABEL, ZONE_LABEL, SUBZONE_LABEL]) if ((node[l] ?? '') !== '') out[l] = node[l] ?? '';
      if (nodeName !== '') out['kubernetes.io/hostname'] = nodeName;
      return out;
    });
    const workloads = [...podLabels, ...configsOf(s, 'WorkloadEntry').map(workloadEntryLabels)];
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
