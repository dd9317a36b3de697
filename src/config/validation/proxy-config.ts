/** istiod's ValidateProxyConfig: a valid workload selector and a non-negative concurrency. */
import type { ProxyConfig } from '../../gen/networking/v1beta1/proxy_config_pb.js';
import { checkSelectorLabels } from './common.js';
import type { ObjectContext } from './context.js';
import { field, type Issues } from './issues.js';

export function validateProxyConfig(spec: ProxyConfig, _ctx: ObjectContext, issues: Issues): void {
  if (spec.selector) checkSelectorLabels(issues, field(field('spec', 'selector'), 'matchLabels'), spec.selector.matchLabels);
  if (spec.concurrency !== undefined && spec.concurrency < 0)
    issues.add(field('spec', 'concurrency'), `concurrency must be greater than or equal to 0, got ${spec.concurrency}`);
}
