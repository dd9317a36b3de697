/**
 * The node check of impersonation on a Kubernetes cluster (istiod's ClusterNodeAuthorizer, a
 * subset of Kubernetes Node Authorization): a node proxy may get a certificate for an identity only
 * when a pod with that service account is scheduled on the node the proxy itself runs on.
 *
 * As istiod, the caller's pod is the one its pod-bound token names (TokenReview's
 * `authentication.kubernetes.io/pod-name` and `…/pod-uid` extras), looked up among the watched
 * pods; its node is that pod's `spec.nodeName`, never a claim of the caller. The pod must still be
 * the one the token was issued for (same UID) and run as the caller's service account.
 */
import { parseSpiffeId } from '../spiffe.js';
import type { Caller } from './authenticator.js';
import type { PlacementCheck } from './impersonation.js';

/** What the check needs of one pod. */
export interface PlacedPod {
  readonly uid: string;
  readonly serviceAccount: string;
  /** spec.nodeName; empty while unscheduled. */
  readonly nodeName: string;
}

/** The pods a cluster's registry already watches (no extra watch). */
export interface PodPlacements {
  /** A pod that is not Failed (istiod's `status.phase!=Failed`), in a namespace meshpilot sees. */
  placedPod(namespace: string, name: string): PlacedPod | undefined;
  /** Does a pod (not Failed) of `namespace` run as `serviceAccount` on `nodeName`? */
  serviceAccountOnNode(nodeName: string, namespace: string, serviceAccount: string): boolean;
}

/** The caller's service account: its identity in our trust domain (Kubernetes tokens carry exactly one). */
function callerAccount(caller: Caller, trustDomain: string): { namespace: string; serviceAccount: string } | undefined {
  for (const raw of caller.identities) {
    const id = parseSpiffeId(raw);
    if (id?.trustDomain === trustDomain) return id;
  }
  return undefined;
}

/** Why `caller` may not have `identity` on its node, or undefined. */
function placementRefusal(pods: PodPlacements, trustDomain: string, caller: Caller, identity: string): string | undefined {
  const account = callerAccount(caller, trustDomain);
  const target = parseSpiffeId(identity);
  if (!account || !target) return `cannot place ${identity} for caller ${caller.identities.join(',')}`;
  const where = `${account.namespace}/${caller.pod?.name ?? ''}`;
  if (!caller.pod)
    return `caller ${account.namespace}/${account.serviceAccount} did not authenticate with a pod-bound Kubernetes token (no pod to find its node by)`;
  const pod = pods.placedPod(account.namespace, caller.pod.name);
  if (!pod) return `caller pod ${where} not found`;
  // A pod re-created under the same name: the token belongs to the old one (the caller retries with its new token).
  if (pod.uid !== (caller.pod.uid ?? ''))
    return `caller pod ${where} found, but its UID ${pod.uid} is not the token's ${caller.pod.uid ?? '(none)'}`;
  if (pod.serviceAccount !== account.serviceAccount)
    return `caller pod ${where} runs as service account ${pod.serviceAccount}, not ${account.serviceAccount}`;
  if (pod.nodeName === '') return `caller pod ${where} is not scheduled on a node`;
  if (!pods.serviceAccountOnNode(pod.nodeName, target.namespace, target.serviceAccount))
    return `no pod of service account ${target.namespace}/${target.serviceAccount} runs on node "${pod.nodeName}"`;
  return undefined;
}

/** A PlacementCheck over the watched pods; its refusals are for the log (the caller gets istiod's opaque message). */
export function nodePlacement(pods: PodPlacements, trustDomain: string): PlacementCheck {
  return (caller, identity) => Promise.resolve(placementRefusal(pods, trustDomain, caller, identity));
}
