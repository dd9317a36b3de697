/**
 * Kubernetes label selectors (`matchLabels` + `matchExpressions`), as istiod's
 * `discoverySelectors` use them: a namespace is selected when any selector matches its labels.
 */
export interface LabelSelectorRequirement {
  readonly key: string;
  readonly operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  readonly values?: readonly string[];
}

export interface LabelSelector {
  readonly matchLabels?: Readonly<Record<string, string>>;
  readonly matchExpressions?: readonly LabelSelectorRequirement[];
}

type Labels = Readonly<Record<string, string>>;

function requirementMatches(r: LabelSelectorRequirement, labels: Labels): boolean {
  const has = Object.hasOwn(labels, r.key);
  const values = r.values ?? [];
  switch (r.operator) {
    case 'In':
      return has && values.includes(labels[r.key] ?? '');
    case 'NotIn':
      return !has || !values.includes(labels[r.key] ?? '');
    case 'Exists':
      return has;
    case 'DoesNotExist':
      return !has;
    default:
      return false; // unknown operator: selects nothing, as Kubernetes rejects it
  }
}

/** Whether one selector matches; an empty selector (`{}`) matches everything. */
export function selectorMatches(selector: LabelSelector, labels: Labels): boolean {
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false;
  return (selector.matchExpressions ?? []).every((r) => requirementMatches(r, labels));
}

/** istiod's discoverySelectors: no selectors select everything; otherwise any one must match. */
export function anySelectorMatches(selectors: readonly LabelSelector[], labels: Labels): boolean {
  return selectors.length === 0 || selectors.some((s) => selectorMatches(s, labels));
}
