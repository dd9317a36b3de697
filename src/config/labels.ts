/**
 * Labels and label selectors, the one home of "does this selector pick these labels":
 * istiod's `labels.Instance.SubsetOf` (Istio's workload selectors: `matchLabels` only) and the
 * Kubernetes `LabelSelector` (`matchLabels` + `matchExpressions`, as `discoverySelectors`, the
 * injection webhook's selectors and Gateway API `allowedRoutes` use it).
 *
 * Both read an empty selector as "everything". Call sites where an empty selector picks nothing
 * (a ProxyConfig or injection selector must name a label) check {@link isEmptyLabels} /
 * {@link isEmptyLabelSelector} first.
 */

import type { Config } from './config.js';

/** A set of labels (or a `matchLabels` map): key → value. */
export type Labels = Readonly<Record<string, string>>;

/**
 * istiod's `labels.Instance.SubsetOf`: every label of `selector` is in `labels` with the same
 * value. An empty selector matches everything.
 */
export function labelsSubsetOf(selector: Labels, labels: Labels): boolean {
  for (const k in selector) if (Object.hasOwn(selector, k) && labels[k] !== selector[k]) return false;
  return true;
}

/** Whether a label map has no labels. */
export function isEmptyLabels(labels: Labels | undefined): boolean {
  if (labels === undefined) return true;
  for (const k in labels) if (Object.hasOwn(labels, k)) return false;
  return true;
}

export type LabelSelectorOperator = 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';

export interface LabelSelectorRequirement {
  readonly key: string;
  readonly operator: LabelSelectorOperator;
  readonly values?: readonly string[];
}

/** A Kubernetes `metav1.LabelSelector`. */
export interface LabelSelector {
  readonly matchLabels?: Labels;
  readonly matchExpressions?: readonly LabelSelectorRequirement[];
}

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

/** Whether a Kubernetes label selector matches; an empty selector (`{}`) matches everything. */
export function labelSelectorMatches(selector: LabelSelector, labels: Labels): boolean {
  return (
    labelsSubsetOf(selector.matchLabels ?? {}, labels) && (selector.matchExpressions ?? []).every((r) => requirementMatches(r, labels))
  );
}

/** Kubernetes' `selector.Empty()`: no `matchLabels` and no `matchExpressions`. */
export function isEmptyLabelSelector(selector: LabelSelector): boolean {
  return isEmptyLabels(selector.matchLabels) && (selector.matchExpressions ?? []).length === 0;
}

/** istiod's discoverySelectors: no selectors select everything; otherwise any one must match. */
export function anyLabelSelectorMatches(selectors: readonly LabelSelector[], labels: Labels): boolean {
  return selectors.length === 0 || selectors.some((s) => labelSelectorMatches(s, labels));
}

const entryLabels = new WeakMap<Config<'WorkloadEntry'>, Labels>();

/**
 * A WorkloadEntry's labels, as every selector and the workload it becomes read them: `spec.labels`
 * with `metadata.labels` over them, the metadata winning a key both set (istiod's
 * serviceentry.ConvertWorkloadEntry and, for ambient, ConvertClientWorkloadEntry). Computed once per object.
 */
export function workloadEntryLabels(we: Config<'WorkloadEntry'>): Labels {
  let labels = entryLabels.get(we);
  if (!labels) {
    labels = Object.freeze({ ...we.spec.labels, ...we.meta.labels });
    entryLabels.set(we, labels);
  }
  return labels;
}
