/**
 * istioctl's webhook.Analyzer (IST0139): Istio's injection webhooks (a webhook named `*istio.io`,
 * or any revision named in labels or selectors) must not overlap — for every combination of
 * namespace and pod injection labels (with each revision's `istio.io/rev`) at most one webhook may
 * match, or a pod is injected twice — and a webhook's service must exist.
 */
import { labelSelectorMatches, type LabelSelector, type LabelSelectorRequirement } from '../../config/index.js';
import { MSG } from '../analyze/messages.js';
import { objectsOf, type Analyzer, type K8sObject } from '../analyze/model.js';
import { isRecord, recordAt, recordsAt, stringAt, stringMapAt } from './k8s-fields.js';

const REV = 'istio.io/rev';

interface Hook {
  /** `config/webhook`, as istioctl names a webhook in its message. */
  readonly id: string;
  readonly owner: K8sObject;
  readonly namespaceSelector: LabelSelector | undefined;
  readonly objectSelector: LabelSelector | undefined;
  readonly service: { readonly namespace: string; readonly name: string } | undefined;
}

export function selectorOf(v: unknown): LabelSelector | undefined {
  if (!isRecord(v)) return undefined;
  const matchExpressions = recordsAt(v, 'matchExpressions').map((e): LabelSelectorRequirement => ({
    key: String(e.key ?? ''),
    operator: String(e.operator ?? '') as LabelSelectorRequirement['operator'],
    values: Array.isArray(e.values) ? e.values.map(String) : [],
  }));
  return { matchLabels: stringMapAt(v, 'matchLabels'), matchExpressions };
}

function revisionsOf(sel: LabelSelector | undefined, out: Set<string>): void {
  const r = sel?.matchLabels?.[REV];
  if (r !== undefined) out.add(r);
  for (const e of sel?.matchExpressions ?? []) if (e.key === REV) for (const v of e.values ?? []) out.add(v);
}

/** Label sets to try: none, enabled, disabled — and each again with every revision. */
function labelSets(key: string, revisions: readonly string[]): Record<string, string>[] {
  const base = (): Record<string, string>[] => [
    {},
    { [key]: key === 'istio-injection' ? 'enabled' : 'true' },
    { [key]: key === 'istio-injection' ? 'disabled' : 'false' },
  ];
  return [...base(), ...revisions.flatMap((rev) => base().map((l) => ({ ...l, [REV]: rev })))];
}

export const webhookAnalyzer: Analyzer = {
  name: 'webhook.Analyzer',
  description: 'Checks the validity of Istio webhooks',
  messages: [MSG.InvalidWebhook],
  analyze(s, report) {
    const hooks: Hook[] = [];
    const revisions = new Set<string>();
    for (const o of objectsOf(s, 'MutatingWebhookConfiguration')) {
      const revs = new Set<string>();
      if (o.labels[REV] !== undefined) revs.add(o.labels[REV]);
      const own = recordsAt(o.body, 'webhooks').map((w): Hook => {
        const namespaceSelector = selectorOf(w.namespaceSelector);
        const objectSelector = selectorOf(w.objectSelector);
        revisionsOf(namespaceSelector, revs);
        revisionsOf(objectSelector, revs);
        const svc = recordAt(w, 'clientConfig', 'service');
        return {
          id: `${o.ref.name}/${String(w.name ?? '')}`,
          owner: o,
          namespaceSelector,
          objectSelector,
          service: svc ? { namespace: stringAt(svc, 'namespace') ?? '', name: stringAt(svc, 'name') ?? '' } : undefined,
        };
      });
      if (revs.size === 0 && !own.some((h) => h.id.endsWith('istio.io'))) continue;
      hooks.push(...own);
      for (const r of revs) revisions.add(r);
    }
    const revs = [...revisions].sort();
    const matches = (sel: LabelSelector | undefined, labels: Record<string, string>): boolean =>
      sel === undefined || labelSelectorMatches(sel, labels);
    for (const nl of labelSets('istio-injection', revs)) {
      for (const ol of labelSets('sidecar.istio.io/inject', revs)) {
        const hit = hooks.filter((h) => matches(h.namespaceSelector, nl) && matches(h.objectSelector, ol));
        const ids = [...new Set(hit.map((h) => h.id))].sort();
        if (ids.length < 2) continue;
        for (const h of hit) {
          const others = ids.filter((id) => id !== h.id);
          report({
            type: MSG.InvalidWebhook,
            resource: h.owner.ref,
            args: [`Webhook overlaps with others: [${others.join(' ')}]. This may cause injection to occur twice.`],
          });
        }
      }
    }
    const services = new Set(s.services.map((svc) => `${svc.ref.namespace}/${svc.ref.name}`));
    for (const h of hooks) {
      if (h.service && !services.has(`${h.service.namespace}/${h.service.name}`)) {
        report({
          type: MSG.InvalidWebhook,
          resource: h.owner.ref,
          args: [`Injector refers to a control plane service that does not exist: ${h.service.namespace}/${h.service.name}.`],
        });
      }
    }
  },
};
