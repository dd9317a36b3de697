import type { Authorization } from '../../gen/workloadapi/security/authorization_pb.js';
import type { PushContext } from '../push-context.js';

/** Every AuthorizationPolicy (and PeerAuthentication) as ztunnel's Authorization resources. */
export function ztunnelAuthorizations(push: PushContext): readonly Authorization[] {
  void push;
  return []; // The policy conversion lives here.
}

/** `namespace/name` of the selector-based policies that apply to a workload (Workload.authorization_policies). */
export function workloadPolicyNames(push: PushContext, namespace: string, labels: Readonly<Record<string, string>>): string[] {
  void push;
  void namespace;
  void labels;
  return []; // The policy conversion lives here.
}
