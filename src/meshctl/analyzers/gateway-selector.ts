import { type Config, labelsSubsetOf } from '../../config/index.js';
import { MSG } from '../analyze/messages.js';
import { at, refOf, type K8sPod, type Report, type Snapshot } from '../analyze/model.js';

/** Shared by the gateway analyzers: a selector's printed form (k8s labels.Set.String(): sorted `k=v`, comma-joined). */
export const selectorString = (sel: Readonly<Record<string, string>>): string =>
  Object.keys(sel)
    .sort()
    .map((k) => `${k}=${sel[k] ?? ''}`)
    .join(',');

/** The pods a Gateway's selector picks, in every namespace (an empty selector picks every pod), as istioctl's gateway analyzers match them. */
export function gatewayPods(s: Snapshot, gw: Config<'Gateway'>): K8sPod[] {
  return s.pods.filter((p) => labelsSubsetOf(gw.spec.selector, p.labels));
}

/** IST0101 `selector` for a Gateway whose selector picks no pod, at the selector's first label. */
export function reportNoGatewayPods(s: Snapshot, gw: Config<'Gateway'>, report: Report): void {
  const resource = refOf(gw);
  const first = Object.keys(gw.spec.selector).sort()[0] ?? '';
  report({
    type: MSG.ReferencedResourceNotFound,
    resource,
    args: ['selector', selectorString(gw.spec.selector)],
    ...at(s, resource, `spec.selector.${first}`),
  });
}
