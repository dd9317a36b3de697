/**
 * istioctl's authn.BlockedCIDRsAnalyzer (IST0175): RequestAuthentications exist, so istiod
 * fetches their JWKS URIs, but the istiod Deployment (label `app: istiod`) sets no
 * BLOCKED_CIDRS_IN_JWKS_URIS to keep those fetches off internal networks.
 */
import { MSG } from '../analyze/messages.js';
import { configsOf, objectsOf, type Analyzer } from '../analyze/model.js';
import { podSpecOf, recordsAt } from './k8s-fields.js';

const SHOWN = 5;

export const blockedCidrsAnalyzer: Analyzer = {
  name: 'authn.BlockedCIDRsAnalyzer',
  description: 'Checks that BLOCKED_CIDRS_IN_JWKS_URIS is configured on istiod when RequestAuthentication resources exist',
  messages: [MSG.JwksUriFetchUnrestricted],
  analyze(s, report) {
    const names = configsOf(s, 'RequestAuthentication').map((c) => `${c.meta.namespace}/${c.meta.name}`);
    if (names.length === 0) return;
    const listed = names.length <= SHOWN ? names.join(', ') : `${names.slice(0, SHOWN).join(', ')}, and ${names.length - SHOWN} more`;
    for (const d of objectsOf(s, 'Deployment')) {
      if (d.labels.app !== 'istiod') continue;
      const configured = recordsAt(podSpecOf(d.body, 'Deployment'), 'containers').some((c) =>
        recordsAt(c, 'env').some((e) => e.name === 'BLOCKED_CIDRS_IN_JWKS_URIS' && typeof e.value === 'string' && e.value !== ''),
      );
      if (!configured) report({ type: MSG.JwksUriFetchUnrestricted, resource: d.ref, args: [names.length, listed] });
    }
  },
};
