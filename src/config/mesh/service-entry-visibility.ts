/**
 * MeshConfig.serviceEntryVisibility: how far a ServiceEntry is seen, set mesh-wide by the namespace
 * it is defined in (istiod's ServiceEntryVisibilityMatcher). Policies are tried in order; the first
 * whose rules all match decides, else `defaultVisibility`; unset, every ServiceEntry is public.
 * Ambient (ztunnel, waypoints) honours it always; sidecars only with `applyToSidecars`.
 */
import {
  ServiceEntryVisibility_Visibility as ProtoVisibility,
  type LabelSelector as ProtoLabelSelector,
  type ServiceEntryVisibility as ProtoServiceEntryVisibility,
} from '../../gen/mesh/v1alpha1/config_pb.js';
import { labelSelectorMatches, type LabelSelector, type LabelSelectorRequirement, type Labels } from '../labels.js';

/** `none`: published to no one; `namespace`: only within its own namespace; `public`: as exportTo says. */
export type ServiceVisibility = 'public' | 'namespace' | 'none';

export interface ServiceEntryVisibilityPolicy {
  readonly visibility: ServiceVisibility;
  /**
   * All must match. A rule is a namespace selector, or undefined for a matcher this version does
   * not know (it never matches, so the policy fails closed).
   */
  readonly rules: readonly (LabelSelector | undefined)[];
}

export interface ServiceEntryVisibility {
  readonly defaultVisibility: ServiceVisibility;
  readonly applyToSidecars: boolean;
  readonly policies: readonly ServiceEntryVisibilityPolicy[];
}

const OPERATORS = new Set<string>(['In', 'NotIn', 'Exists', 'DoesNotExist']);

function visibilityOf(v: ProtoVisibility): ServiceVisibility {
  return v === ProtoVisibility.NONE ? 'none' : v === ProtoVisibility.NAMESPACE ? 'namespace' : 'public';
}

/** A mesh LabelSelector as a Kubernetes one; an operator Kubernetes does not know is an error naming `at`. */
export function meshLabelSelector(sel: ProtoLabelSelector, at: string): LabelSelector {
  const matchExpressions = sel.matchExpressions.map((r, j): LabelSelectorRequirement => {
    if (!OPERATORS.has(r.operator))
      throw new Error(`${at}.matchExpressions[${j}].operator: "${r.operator}" is not In, NotIn, Exists or DoesNotExist`);
    return { key: r.key, operator: r.operator as LabelSelectorRequirement['operator'], values: [...r.values] };
  });
  return { matchLabels: { ...sel.matchLabels }, matchExpressions };
}

/** The parsed field (errors name the field path below `serviceEntryVisibility`). */
export function serviceEntryVisibilityFrom(p: ProtoServiceEntryVisibility): ServiceEntryVisibility {
  return {
    defaultVisibility: visibilityOf(p.defaultVisibility),
    applyToSidecars: p.applyToSidecars,
    policies: p.policies.map((policy, i) => ({
      visibility: visibilityOf(policy.visibility),
      rules: policy.matchingRules.map((rule, j) =>
        rule.matcher.case === 'namespaceSelector'
          ? meshLabelSelector(rule.matcher.value, `serviceEntryVisibility.policies[${i}].matchingRules[${j}].namespaceSelector`)
          : undefined,
      ),
    })),
  };
}

/** The visibility of a ServiceEntry in a namespace with these labels (public when the mesh sets none). */
export function serviceEntryVisibilityFor(v: ServiceEntryVisibility | undefined, namespaceLabels: Labels): ServiceVisibility {
  if (!v) return 'public';
  const policy = v.policies.find((p) => p.rules.every((r) => r !== undefined && labelSelectorMatches(r, namespaceLabels)));
  return policy ? policy.visibility : v.defaultVisibility;
}
