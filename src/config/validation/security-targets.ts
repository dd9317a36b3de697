/** Where a security policy attaches: `selector`, `targetRef` or `targetRefs` (istiod's shared checks). */
import type { PolicyTargetReference, WorkloadSelector } from '../../gen/type/v1beta1/selector_pb.js';
import { checkSelectorLabels } from './common.js';
import { field, index, type Issues } from './issues.js';

export interface Targetable {
  readonly selector?: WorkloadSelector | undefined;
  readonly targetRef?: PolicyTargetReference | undefined;
  readonly targetRefs: readonly PolicyTargetReference[];
}

// Kinds a policy may target, by canonical group ("" is Kubernetes' core group).
const ALLOWED_TARGETS = [
  'core/Service',
  'networking.istio.io/ServiceEntry',
  'gateway.networking.k8s.io/Gateway',
  'gateway.networking.k8s.io/GatewayClass',
];

export function checkSelectorAndTargets(issues: Issues, spec: string, p: Targetable): void {
  const set = Number(p.selector !== undefined) + Number(p.targetRef !== undefined) + Number(p.targetRefs.length > 0);
  if (set > 1) issues.add(spec, 'only one of targetRefs or workloadSelector can be set');
  if (p.selector) checkSelectorLabels(issues, field(field(spec, 'selector'), 'matchLabels'), p.selector.matchLabels);
  if (p.targetRef) checkTargetRef(issues, field(spec, 'targetRef'), p.targetRef);
  p.targetRefs.forEach((r, i) => checkTargetRef(issues, index(field(spec, 'targetRefs'), i), r));
}

function checkTargetRef(issues: Issues, path: string, r: PolicyTargetReference): void {
  if (r.name === '') issues.add(field(path, 'name'), 'targetRef name must be set');
  if (r.namespace !== '')
    issues.add(field(path, 'namespace'), 'targetRef namespace must not be set; cross namespace referencing is not supported');
  const target = `${r.group === '' ? 'core' : r.group}/${r.kind}`;
  if (!ALLOWED_TARGETS.includes(target)) {
    issues.add(field(path, 'kind'), `targetRef must be to one of ${ALLOWED_TARGETS.join(', ')} but was ${r.group}/${r.kind}`);
  }
}
