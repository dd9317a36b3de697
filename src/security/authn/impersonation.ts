/**
 * Impersonation (istiod's node authorizer): a CSR whose metadata names `ImpersonatedIdentity` asks
 * for a certificate on behalf of another workload — allowed only for callers listed in
 * CA_TRUSTED_NODE_ACCOUNTS (`<ns>/<sa>,...`, node proxies such as ztunnel). istiod further requires
 * a pod with that identity on the caller's node; without Kubernetes there are no nodes, so a
 * pluggable `placement` check stands in (the Kubernetes integration provides the real one).
 */
import { parseSpiffeId } from '../spiffe.js';
import type { Caller } from './authenticator.js';

export const IMPERSONATED_IDENTITY = 'ImpersonatedIdentity';

export interface TrustedNodeAccount {
  readonly namespace: string;
  readonly serviceAccount: string;
}

/** CA_TRUSTED_NODE_ACCOUNTS; invalid entries are returned apart, so the caller can warn (istiod ignores them). */
export function parseTrustedNodeAccounts(text: string | undefined): { accounts: TrustedNodeAccount[]; invalid: string[] } {
  const accounts: TrustedNodeAccount[] = [];
  const invalid: string[] = [];
  for (const entry of (text ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const [ns, sa, ...rest] = entry.split('/');
    if (!ns || !sa || rest.length) invalid.push(entry);
    else accounts.push({ namespace: ns, serviceAccount: sa });
  }
  return { accounts, invalid };
}

/** Does the caller's node run a workload with `identity`? (Kubernetes: a pod on the same node.) */
export type PlacementCheck = (caller: Caller, identity: string) => Promise<string | undefined>;

export interface ImpersonationPolicy {
  readonly trustDomain: string;
  readonly trusted: readonly TrustedNodeAccount[];
  readonly placement?: PlacementCheck;
}

/** Undefined when `caller` may get a certificate for `identity`, else the reason (for the log only). */
export async function impersonationRefusal(policy: ImpersonationPolicy, caller: Caller, identity: string): Promise<string | undefined> {
  if (policy.trusted.length === 0) return 'impersonation not allowed: no trusted node accounts (CA_TRUSTED_NODE_ACCOUNTS) are configured';
  const callerIds = caller.identities.map(parseSpiffeId);
  const trusted = callerIds.some(
    (id) =>
      id &&
      id.trustDomain === policy.trustDomain &&
      policy.trusted.some((t) => t.namespace === id.namespace && t.serviceAccount === id.serviceAccount),
  );
  if (!trusted) return `caller ${caller.identities.join(',')} is not a trusted node account`;
  const target = parseSpiffeId(identity);
  if (!target || target.trustDomain !== policy.trustDomain)
    return `impersonated identity ${identity} is not a SPIFFE ID of trust domain ${policy.trustDomain}`;
  return policy.placement ? policy.placement(caller, identity) : undefined;
}
