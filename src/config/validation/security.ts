/** security.istio.io checks as istiod's webhook runs them (PeerAuthentication, RequestAuthentication, AuthorizationPolicy). */
import type { AuthorizationPolicy } from '../../gen/security/v1beta1/authorization_policy_pb.js';
import type { PeerAuthentication } from '../../gen/security/v1beta1/peer_authentication_pb.js';
import type { RequestAuthentication } from '../../gen/security/v1beta1/request_authentication_pb.js';
import { checkSelectorLabels } from './common.js';
import type { ObjectContext } from './context.js';
import { field, index, key, type Issues } from './issues.js';
import { checkAuthorizationPolicy } from './security-authz.js';
import { validateJwtRule } from './security-jwt.js';
import { checkSelectorAndTargets } from './security-targets.js';

export function validatePeerAuthentication(pa: PeerAuthentication, _ctx: ObjectContext, issues: Issues): void {
  const spec = 'spec';
  if (pa.selector) checkSelectorLabels(issues, field(field(spec, 'selector'), 'matchLabels'), pa.selector.matchLabels);
  const ports = Object.keys(pa.portLevelMtls);
  // A mesh- or namespace-wide policy has no workload ports to speak of (istiod: empty selector = no selector).
  const emptySelector = !pa.selector || Object.keys(pa.selector.matchLabels).length === 0;
  if (emptySelector && ports.length > 0)
    issues.add(field(spec, 'portLevelMtls'), 'mesh/namespace peer authentication cannot have port level mTLS');
  for (const port of ports) {
    const n = Number(port);
    if (!(n >= 1 && n <= 65535)) issues.add(key(field(spec, 'portLevelMtls'), port), `port ${port} must be in range 1..65535`);
  }
}

export function validateRequestAuthentication(ra: RequestAuthentication, _ctx: ObjectContext, issues: Issues): void {
  const spec = 'spec';
  checkSelectorAndTargets(issues, spec, ra);
  ra.jwtRules.forEach((rule, i) => validateJwtRule(issues, index(field(spec, 'jwtRules'), i), rule));
}

export function validateAuthorizationPolicy(ap: AuthorizationPolicy, _ctx: ObjectContext, issues: Issues): void {
  checkAuthorizationPolicy(ap, issues);
}
