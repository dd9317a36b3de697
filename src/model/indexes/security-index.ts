import { type Config, type ConfigSnapshot, inCreationOrder, isEmptyLabels, labelsSubsetOf, type Labels } from '../../config/index.js';
import { AuthorizationPolicy_Action } from '../../gen/security/v1beta1/authorization_policy_pb.js';
import { PeerAuthentication_MutualTLS_Mode, type PeerAuthentication_MutualTLS } from '../../gen/security/v1beta1/peer_authentication_pb.js';
import type { PolicyTargetReference, WorkloadSelector } from '../../gen/type/v1beta1/selector_pb.js';
import { GATEWAY_API_GROUP, GATEWAY_NAME_LABEL } from '../../config/constants.js';

export type MtlsMode = 'STRICT' | 'PERMISSIVE' | 'DISABLE';

/** istiod's MergedPeerAuthentication: the workload's mode and its per-port overrides. */
export interface EffectiveMtls {
  readonly mode: MtlsMode;
  readonly portModes: ReadonlyMap<number, MtlsMode>;
}

/** The PeerAuthentications that decide one workload's mTLS, one per scope. */
export interface PeerAuthenticationSelection {
  readonly mesh?: Config<'PeerAuthentication'>;
  readonly namespace?: Config<'PeerAuthentication'>;
  readonly workload?: Config<'PeerAuthentication'>;
}

/** AuthorizationPolicies that apply to one workload, by action (istiod's AuthorizationPoliciesResult). */
export interface AuthorizationPolicySelection {
  readonly allow: Config<'AuthorizationPolicy'>[];
  readonly deny: Config<'AuthorizationPolicy'>[];
  readonly audit: Config<'AuthorizationPolicy'>[];
  readonly custom: Config<'AuthorizationPolicy'>[];
}

/** The mode on `port`: its port-level setting, else the workload's. */
export function mtlsModeForPort(eff: EffectiveMtls, port: number): MtlsMode {
  return eff.portModes.get(port) ?? eff.mode;
}

type SecurityKind = 'PeerAuthentication' | 'RequestAuthentication' | 'AuthorizationPolicy';

interface Targetable {
  readonly selector?: { readonly matchLabels: Labels } | undefined;
  readonly targetRef?: PolicyTargetReference | undefined;
  readonly targetRefs: readonly PolicyTargetReference[];
}

const hasLabels = (s: WorkloadSelector | undefined): s is WorkloadSelector => s !== undefined && !isEmptyLabels(s.matchLabels);
const selects = (s: { readonly matchLabels: Labels } | undefined, labels: Labels): boolean =>
  s === undefined || labelsSubsetOf(s.matchLabels, labels);

function modeOf(mtls: PeerAuthentication_MutualTLS | undefined): MtlsMode | undefined {
  switch (mtls?.mode) {
    case PeerAuthentication_MutualTLS_Mode.STRICT:
      return 'STRICT';
    case PeerAuthentication_MutualTLS_Mode.PERMISSIVE:
      return 'PERMISSIVE';
    case PeerAuthentication_MutualTLS_Mode.DISABLE:
      return 'DISABLE';
    default:
      return undefined; // UNSET (or absent) inherits from the wider scope
  }
}

/**
 * istiod's WorkloadPolicyMatcher.ShouldAttachPolicy for sidecars and gateways (not waypoints):
 * a policy with targetRefs is for waypoints and Gateway API gateways, never a sidecar; a Gateway
 * API gateway takes targetRefs to its Gateway in its own namespace, and selector policies too
 * (ENABLE_SELECTOR_BASED_K8S_GATEWAY_POLICY, on by default).
 */
export function shouldAttach(policyNamespace: string, spec: Targetable, namespace: string, labels: Labels): boolean {
  const refs = spec.targetRefs.length > 0 ? spec.targetRefs : spec.targetRef ? [spec.targetRef] : [];
  const gatewayName = labels[GATEWAY_NAME_LABEL];
  if (refs.length === 0) return selects(spec.selector, labels);
  if (gatewayName === undefined || policyNamespace !== namespace) return false;
  return refs.some(
    (r) =>
      r.group === GATEWAY_API_GROUP && r.kind === 'Gateway' && r.name === gatewayName && (r.namespace === '' || r.namespace === namespace),
  );
}

/** Groups a kind's objects by namespace, each namespace oldest first (istiod sorts them with sortConfigByCreationTime). */
function byNamespace<K extends SecurityKind>(configs: readonly Config<K>[]): Map<string, Config<K>[]> {
  const out = new Map<string, Config<K>[]>();
  for (const c of inCreationOrder(configs)) {
    const list = out.get(c.meta.namespace);
    if (list) list.push(c);
    else out.set(c.meta.namespace, [c]);
  }
  return out;
}

/**
 * Authentication and authorization policies by namespace, with istiod's selection rules: a policy
 * in the mesh root namespace applies to workloads in every namespace, others to their own. Each
 * namespace's policies are oldest first (creation time, then name: config/creation-order.ts), so the
 * first that applies is istiod's "oldest wins" and lists come in istiod's order.
 */
export class SecurityPolicyIndex {
  private readonly byKind: { readonly [K in SecurityKind]: ReadonlyMap<string, readonly Config<K>[]> };

  constructor(
    config: ConfigSnapshot,
    private readonly rootNamespace: string,
  ) {
    this.byKind = {
      PeerAuthentication: byNamespace(config.list('PeerAuthentication')),
      RequestAuthentication: byNamespace(config.list('RequestAuthentication')),
      AuthorizationPolicy: byNamespace(config.list('AuthorizationPolicy')),
    };
  }

  private list<K extends SecurityKind>(kind: K, namespace: string): readonly Config<K>[] {
    return (this.byKind[kind] as ReadonlyMap<string, readonly Config<K>[]>).get(namespace) ?? [];
  }

  /**
   * istiod's ComposePeerAuthentication inputs: the oldest root-namespace policy without a selector
   * (mesh), the oldest one in the workload's namespace without a selector, and the oldest one there
   * whose selector matches. Policies with a selector in the root namespace are ignored, as istiod does.
   */
  peerAuthentication(namespace: string, labels: Labels): PeerAuthenticationSelection {
    const out: { mesh?: Config<'PeerAuthentication'>; namespace?: Config<'PeerAuthentication'>; workload?: Config<'PeerAuthentication'> } =
      {};
    const mesh = this.list('PeerAuthentication', this.rootNamespace).find((c) => !hasLabels(c.spec.selector));
    if (mesh) out.mesh = mesh;
    if (namespace === this.rootNamespace) return out;
    const local = this.list('PeerAuthentication', namespace);
    const ns = local.find((c) => !hasLabels(c.spec.selector));
    if (ns) out.namespace = ns;
    const workload = local.find((c) => hasLabels(c.spec.selector) && selects(c.spec.selector, labels));
    if (workload) out.workload = workload;
    return out;
  }

  /** PERMISSIVE, overridden by mesh, namespace and workload in turn (UNSET inherits); ports from the workload policy. */
  effectiveMtls(namespace: string, labels: Labels): EffectiveMtls {
    const sel = this.peerAuthentication(namespace, labels);
    let mode: MtlsMode = 'PERMISSIVE';
    for (const pa of [sel.mesh, sel.namespace, sel.workload]) mode = modeOf(pa?.spec.mtls) ?? mode;
    const portModes = new Map<number, MtlsMode>();
    for (const [port, mtls] of Object.entries(sel.workload?.spec.portLevelMtls ?? {})) portModes.set(Number(port), modeOf(mtls) ?? mode);
    return { mode, portModes };
  }

  /** Root-namespace policies first, then the workload's namespace, as istiod lists them. */
  authorizationPolicies(namespace: string, labels: Labels): AuthorizationPolicySelection {
    const out: AuthorizationPolicySelection = { allow: [], deny: [], audit: [], custom: [] };
    for (const c of this.attached('AuthorizationPolicy', [this.rootNamespace, namespace], namespace, labels)) {
      switch (c.spec.action) {
        case AuthorizationPolicy_Action.ALLOW:
          out.allow.push(c);
          break;
        case AuthorizationPolicy_Action.DENY:
          out.deny.push(c);
          break;
        case AuthorizationPolicy_Action.AUDIT:
          out.audit.push(c);
          break;
        case AuthorizationPolicy_Action.CUSTOM:
          out.custom.push(c);
          break;
        default:
          break; // an action this build does not know: istiod ignores the policy
      }
    }
    return out;
  }

  /** The workload's own namespace first, then the root namespace (istiod's GetJwtPoliciesForWorkload). */
  requestAuthentications(namespace: string, labels: Labels): Config<'RequestAuthentication'>[] {
    return this.attached('RequestAuthentication', [namespace, this.rootNamespace], namespace, labels);
  }

  private attached<K extends 'AuthorizationPolicy' | 'RequestAuthentication'>(
    kind: K,
    namespaces: readonly string[],
    namespace: string,
    labels: Labels,
  ): Config<K>[] {
    const out: Config<K>[] = [];
    for (const ns of new Set(namespaces)) {
      for (const c of this.list(kind, ns)) if (shouldAttach(c.meta.namespace, c.spec as Targetable, namespace, labels)) out.push(c);
    }
    return out;
  }
}
