/**
 * istioctl's injection.ImageAutoAnalyzer: `image: auto` on an `istio-proxy` container is a
 * placeholder only the injector fills. A Pod with it is always an error (IST0147: a created pod
 * is past injection); a Deployment's is a warning (IST0146) when no Istio injection webhook
 * (named `*istio.io`) selects its namespace and pod template labels.
 */
import { labelSelectorMatches } from '../../config/index.js';
import { MSG } from '../analyze/messages.js';
import { objectsOf, type Analyzer } from '../analyze/model.js';
import { podSpecOf, recordsAt, stringMapAt } from './k8s-fields.js';
import { selectorOf } from './webhook.js';

const hasAutoImage = (spec: unknown): boolean => recordsAt(spec, 'containers').some((c) => c.name === 'istio-proxy' && c.image === 'auto');

export const imageAutoAnalyzer: Analyzer = {
  name: 'injection.ImageAutoAnalyzer',
  description: 'Makes sure that Pods and Deployments with `image: auto` are going to be injected',
  messages: [MSG.ImageAutoWithoutInjectionWarning, MSG.ImageAutoWithoutInjectionError],
  analyze(s, report) {
    const hooks = objectsOf(s, 'MutatingWebhookConfiguration')
      .flatMap((o) => recordsAt(o.body, 'webhooks'))
      .filter((w) => String(w.name ?? '').endsWith('istio.io'))
      .map((w) => ({ ns: selectorOf(w.namespaceSelector), obj: selectorOf(w.objectSelector) }));
    for (const pod of objectsOf(s, 'Pod')) {
      if (hasAutoImage(podSpecOf(pod.body, 'Pod')))
        report({ type: MSG.ImageAutoWithoutInjectionError, resource: pod.ref, args: ['Pod', pod.ref.name] });
    }
    for (const d of objectsOf(s, 'Deployment')) {
      if (!hasAutoImage(podSpecOf(d.body, 'Deployment'))) continue;
      const nsLabels = s.namespaces.find((n) => n.ref.name === (d.ref.namespace || 'default'))?.labels ?? {};
      const podLabels = stringMapAt(d.body, 'spec', 'template', 'metadata', 'labels');
      const injected = hooks.some(
        (h) =>
          (h.ns === undefined || labelSelectorMatches(h.ns, nsLabels)) && (h.obj === undefined || labelSelectorMatches(h.obj, podLabels)),
      );
      if (!injected) report({ type: MSG.ImageAutoWithoutInjectionWarning, resource: d.ref, args: ['Deployment', d.ref.name] });
    }
  },
};
