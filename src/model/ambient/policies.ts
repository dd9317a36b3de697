/**
 * The ztunnel policies of a PushContext: every `istio.security.Authorization` istiod would serve
 * (converted AuthorizationPolicies, converted PeerAuthentications, the static STRICT policy), and
 * the names a workload lists in its `authorization_policies` (istiod's buildWorkloadPolicies).
 *
 * The index is built from the untracked snapshot and shared by every PushContext whose
 * AuthorizationPolicies and PeerAuthentications are the same maps (the store replaces a kind's
 * map only when it changes); a policy object that did not change is never converted again. What a
 * cached build reads is recorded by the functions below: the whole policy set for the list, the
 * workload's namespace and the root namespace for a workload's names.
 */
import type { Config } from '../../config/index.js';
import { isEmptyLabels, labelsSubsetOf, oldestConfig, type Labels } from '../../config/index.js';
import type { Authorization } from '../../gen/workloadapi/security/authorization_pb.js';
import { compareIds } from '../../util/order.js';
import { anyOf, namespaceDep } from '../dependency-tokens.js';
import type { PushContext } from '../push-context.js';
import { convertAuthorizationPolicy, type ConvertedAuthorizationPolicy, type ZtunnelPolicyStatus } from './authorization-convert.js';
import { convertPeerAuthentication, peerAuthenticationPolicyNames, staticStrictAuthorization } from './peer-authentication-convert.js';

type AuthorizationPolicy = Config<'AuthorizationPolicy'>;
type PeerAuthentication = Config<'PeerAuthentication'>;

/** Conversion options; the functions below take the PushContext's (from meshpilot discovery's environment) unless given others. */
export interface ZtunnelPolicyOptions {
  /** AMBIENT_ENABLE_DRY_RUN_AUTHORIZATION_POLICY (default off, as in istiod). */
  readonly dryRunPolicies?: boolean;
}

interface SelectorPolicy {
  /** `namespace/name`, as the workload lists it. */
  readonly resourceName: string;
  readonly matchLabels: Labels;
}

interface ZtunnelPolicyIndex {
  /** Every Authorization for ztunnel, by `namespace/name`. */
  readonly authorizations: readonly Authorization[];
  /** Converted AuthorizationPolicies with a label selector, by namespace, in name order. */
  readonly selectorPolicies: ReadonlyMap<string, readonly SelectorPolicy[]>;
  readonly peerAuthentications: ReadonlyMap<string, readonly PeerAuthentication[]>;
  /** istiod's `ZtunnelAccepted` condition of each AuthorizationPolicy it did not take as is, by `namespace/name`. */
  readonly statuses: ReadonlyMap<string, ZtunnelPolicyStatus>;
}

/** Every Authorization ztunnel gets over `type.googleapis.com/istio.security.Authorization`, by resource name (`namespace/name`). */
export function ztunnelAuthorizations(
  push: PushContext,
  options: ZtunnelPolicyOptions = push.ztunnelPolicyOptions,
): readonly Authorization[] {
  push.cache.record(anyOf('AuthorizationPolicy'));
  push.cache.record(anyOf('PeerAuthentication'));
  return policyIndex(push, options).authorizations;
}

/**
 * The `authorization_policies` of a workload: the converted AuthorizationPolicies of its namespace
 * and the root namespace whose selector picks it (sorted), then the PeerAuthentication-derived
 * ones (sorted). Namespace- and mesh-wide policies are not listed: ztunnel applies them by scope.
 */
export function workloadPolicyNames(
  push: PushContext,
  namespace: string,
  labels: Readonly<Record<string, string>>,
  options: ZtunnelPolicyOptions = push.ztunnelPolicyOptions,
): string[] {
  const root = push.mesh.rootNamespace;
  for (const ns of new Set([namespace, root])) {
    push.cache.record(namespaceDep('AuthorizationPolicy', ns));
    push.cache.record(namespaceDep('PeerAuthentication', ns));
  }
  const index = policyIndex(push, options);
  // istiod filters by the workload's labels only when it has some (a nil label map turns its
  // krt filter off), so a workload without labels lists every selector policy it could get.
  const unlabelled = isEmptyLabels(labels);
  const selected: string[] = [];
  for (const ns of new Set([root, namespace])) {
    for (const p of index.selectorPolicies.get(ns) ?? []) {
      if (unlabelled || labelsSubsetOf(p.matchLabels, labels)) selected.push(p.resourceName);
    }
  }
  selected.sort(compareIds);
  // The PeerAuthentications that apply: the namespace's without selector or selecting the
  // workload, and the root namespace's without selector.
  const applying = (index.peerAuthentications.get(namespace) ?? []).filter(
    (p) => p.spec.selector === undefined || labelsSubsetOf(p.spec.selector.matchLabels, labels),
  );
  if (namespace !== root) applying.push(...(index.peerAuthentications.get(root) ?? []).filter((p) => p.spec.selector === undefined));
  return [...selected, ...peerAuthenticationPolicyNames(root, applying)];
}

/** istiod's `ZtunnelAccepted` condition message of an AuthorizationPolicy it changed or refused, if any. */
export function ztunnelPolicyStatus(
  push: PushContext,
  namespace: string,
  name: string,
  options: ZtunnelPolicyOptions = push.ztunnelPolicyOptions,
): ZtunnelPolicyStatus | undefined {
  return policyIndex(push, options).statuses.get(`${namespace}/${name}`);
}

// Indexes by the identity of the policy maps they were built from.
const indexes = new WeakMap<object, WeakMap<object, Map<string, ZtunnelPolicyIndex>>>();
// Conversions by policy object; keyed by what else they depend on.
const convertedPolicies = new WeakMap<AuthorizationPolicy, Map<string, ConvertedAuthorizationPolicy>>();
const convertedPeerAuthentications = new WeakMap<
  PeerAuthentication,
  {
    readonly root: string;
    readonly ns: PeerAuthentication | undefined;
    readonly mesh: PeerAuthentication | undefined;
    readonly out: Authorization | undefined;
  }
>();

function policyIndex(push: PushContext, options: ZtunnelPolicyOptions): ZtunnelPolicyIndex {
  const snapshot = push.snapshot;
  const apMap = snapshot.byKind('AuthorizationPolicy');
  const paMap = snapshot.byKind('PeerAuthentication');
  const key = `${push.mesh.rootNamespace}|${options.dryRunPolicies === true}`;
  let byPa = indexes.get(apMap);
  if (!byPa) indexes.set(apMap, (byPa = new WeakMap()));
  let byKey = byPa.get(paMap);
  if (!byKey) byPa.set(paMap, (byKey = new Map()));
  let index = byKey.get(key);
  if (!index) {
    index = buildIndex(snapshot.list('AuthorizationPolicy'), snapshot.list('PeerAuthentication'), push.mesh.rootNamespace, options);
    byKey.set(key, index);
  }
  return index;
}

function convertPolicy(root: string, ap: AuthorizationPolicy, options: ZtunnelPolicyOptions): ConvertedAuthorizationPolicy {
  const key = `${root}|${options.dryRunPolicies === true}`;
  let byKey = convertedPolicies.get(ap);
  if (!byKey) convertedPolicies.set(ap, (byKey = new Map()));
  let out = byKey.get(key);
  if (!out) byKey.set(key, (out = convertAuthorizationPolicy(root, ap, options)));
  return out;
}

function convertPeer(root: string, pa: PeerAuthentication, ns: PeerAuthentication | undefined, mesh: PeerAuthentication | undefined) {
  const hit = convertedPeerAuthentications.get(pa);
  if (hit && hit.root === root && hit.ns === ns && hit.mesh === mesh) return hit.out;
  const out = convertPeerAuthentication(root, pa, ns, mesh);
  convertedPeerAuthentications.set(pa, { root, ns, mesh, out });
  return out;
}

function buildIndex(
  aps: readonly AuthorizationPolicy[],
  pas: readonly PeerAuthentication[],
  root: string,
  options: ZtunnelPolicyOptions,
): ZtunnelPolicyIndex {
  const authorizations: Authorization[] = [];
  const selectorPolicies = new Map<string, SelectorPolicy[]>();
  const statuses = new Map<string, ZtunnelPolicyStatus>();
  for (const ap of aps) {
    const { authorization, status } = convertPolicy(root, ap, options);
    const resourceName = `${ap.meta.namespace}/${ap.meta.name}`;
    if (status) statuses.set(resourceName, status);
    if (!authorization) continue;
    authorizations.push(authorization);
    // `selector: {}` selects no workload (istiod's label selector is nil then); only labels attach a policy.
    const matchLabels = ap.spec.selector?.matchLabels;
    if (matchLabels && !isEmptyLabels(matchLabels)) pushTo(selectorPolicies, ap.meta.namespace, { resourceName, matchLabels });
  }
  const peerAuthentications = new Map<string, PeerAuthentication[]>();
  for (const pa of pas) pushTo(peerAuthentications, pa.meta.namespace, pa);
  // A converted PeerAuthentication inherits from the oldest policy without `selector` of its namespace and of the root.
  const selectorLess = (ns: string): PeerAuthentication | undefined =>
    oldestConfig((peerAuthentications.get(ns) ?? []).filter((p) => p.spec.selector === undefined));
  const meshPolicy = selectorLess(root);
  for (const [ns, list] of peerAuthentications) {
    if (ns === root) continue;
    const nsPolicy = selectorLess(ns);
    for (const pa of list) {
      const out = convertPeer(root, pa, nsPolicy, meshPolicy);
      if (out) authorizations.push(out);
    }
  }
  // Sent as soon as any PeerAuthentication exists, whatever its mode.
  if (pas.length > 0) authorizations.push(staticStrict(root));
  const resourceName = (a: Authorization): string => `${a.namespace}/${a.name}`;
  authorizations.sort((a, b) => compareIds(resourceName(a), resourceName(b)));
  return { authorizations, selectorPolicies, peerAuthentications, statuses };
}

const staticStrictByRoot = new Map<string, Authorization>();
/** One static policy object per root namespace, so that consumers caching by identity see it unchanged. */
function staticStrict(root: string): Authorization {
  let out = staticStrictByRoot.get(root);
  if (!out) staticStrictByRoot.set(root, (out = staticStrictAuthorization(root)));
  return out;
}

function pushTo<V>(map: Map<string, V[]>, key: string, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}
