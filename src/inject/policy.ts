/**
 * Whether a pod gets a sidecar. Two stages, as in Istio:
 *
 * 1. `webhookSelects`: the namespaceSelector/objectSelector pairs of Istio's
 *    `istio-sidecar-injector` MutatingWebhookConfiguration (istio-discovery chart,
 *    templates/mutatingwebhook.yaml) and of the revision tags' `istio-revision-tag-<tag>` ones. The API server applies them before calling istiod; meshpilot
 *    applies them itself too, so a webhook configuration that selects broadly (or `meshctl
 *    kube-inject`) decides the same way.
 * 2. `injectRequired`: istiod's own check (pkg/kube/inject/inject.go injectRequired): host
 *    network, ignored system namespaces, the `sidecar.istio.io/inject` label (then the legacy
 *    annotation), neverInjectSelector, alwaysInjectSelector, then the config's policy.
 */
import { isEmptyLabelSelector, labelSelectorMatches, type LabelSelector, type Labels } from '../config/index.js';
import { NAMESPACE_INJECTION_LABEL, REVISION_LABEL, SIDECAR_INJECT } from '../config/constants.js';

/** istiod's IgnoredNamespaces (pkg/kube/inject/initializer.go). */
export const IGNORED_NAMESPACES: ReadonlySet<string> = new Set(['kube-system', 'kube-public', 'kube-node-lease', 'local-path-storage']);

export type InjectionPolicy = 'enabled' | 'disabled';

export interface WebhookSelection {
  /** The istiod revision this injector serves; '' is the default revision. */
  readonly revision: string;
  /** Revision tags pointing at this revision (istioctl tag / the chart's revisionTags): named like a revision. */
  readonly tags?: readonly string[];
  /** Helm's sidecarInjectorWebhook.enableNamespacesByDefault (the `auto.` webhook). */
  readonly enableNamespacesByDefault?: boolean;
}

/** Which of the chart's webhooks would send this pod to us, or undefined when none does. */
export function webhookSelects(namespace: string, namespaceLabels: Labels, podLabels: Labels, sel: WebhookSelection): string | undefined {
  const revs = new Set([sel.revision === '' ? 'default' : sel.revision, ...(sel.tags ?? [])]);
  const nsRev = namespaceLabels[REVISION_LABEL];
  const nsInjection = namespaceLabels[NAMESPACE_INJECTION_LABEL];
  const podInject = podLabels[SIDECAR_INJECT];
  const podRev = podLabels[REVISION_LABEL];
  const notDisabled = podInject !== 'false';
  const nsUnlabelled = nsRev === undefined && nsInjection === undefined;
  // rev.namespace: the namespace names our revision (the legacy istio-injection label wins).
  if (nsRev !== undefined && revs.has(nsRev) && nsInjection === undefined && notDisabled) return 'rev.namespace.sidecar-injector.istio.io';
  // rev.object: an unlabelled namespace, the pod names our revision.
  if (nsUnlabelled && notDisabled && podRev !== undefined && revs.has(podRev)) return 'rev.object.sidecar-injector.istio.io';
  // The legacy selectors belong to the default revision, or to whichever one the tag "default" points at.
  if (sel.revision !== '' && !(sel.tags ?? []).includes('default')) return undefined;
  if (nsInjection === 'enabled' && notDisabled) return 'namespace.sidecar-injector.istio.io';
  if (nsUnlabelled && podInject === 'true' && podRev === undefined) return 'object.sidecar-injector.istio.io';
  if (
    sel.enableNamespacesByDefault === true &&
    nsUnlabelled &&
    !IGNORED_NAMESPACES.has(namespace) &&
    podInject === undefined &&
    podRev === undefined
  ) {
    return 'auto.sidecar-injector.istio.io';
  }
  return undefined;
}

export interface PolicyConfig {
  readonly policy: string;
  readonly neverInjectSelector: readonly LabelSelector[];
  readonly alwaysInjectSelector: readonly LabelSelector[];
}

export interface PodFacts {
  readonly namespace: string;
  readonly labels: Labels;
  readonly annotations: Labels;
  readonly hostNetwork: boolean;
}

export type Decision = { readonly inject: true; readonly reason: string } | { readonly inject: false; readonly reason: string };

/** Kubernetes ignores an empty selector in these lists (istiod: `!selector.Empty()`). */
function nonEmptyMatch(selectors: readonly LabelSelector[], labels: Labels): number {
  return selectors.findIndex((s) => !isEmptyLabelSelector(s) && labelSelectorMatches(s, labels));
}

/** istiod's injectRequired, with the reason spelled out. */
export function injectRequired(config: PolicyConfig, pod: PodFacts): Decision {
  if (pod.hostNetwork) return { inject: false, reason: 'the pod uses the host network' };
  if (IGNORED_NAMESPACES.has(pod.namespace)) return { inject: false, reason: `namespace ${pod.namespace} is never injected` };

  // The label is the newer API: when both are set, the label wins.
  let source = `annotation ${SIDECAR_INJECT}`;
  let objectSelector = pod.annotations[SIDECAR_INJECT] ?? '';
  if (pod.labels[SIDECAR_INJECT] !== undefined) {
    objectSelector = pod.labels[SIDECAR_INJECT];
    source = `label ${SIDECAR_INJECT}`;
  }
  let explicit: Decision | undefined;
  if (objectSelector === 'true') explicit = { inject: true, reason: `${source}="true"` };
  else if (objectSelector === 'false') explicit = { inject: false, reason: `${source}="false"` };
  // Any other value falls back to the default policy, as istiod (which logs a warning).

  if (explicit === undefined) {
    const never = nonEmptyMatch(config.neverInjectSelector, pod.labels);
    if (never >= 0) explicit = { inject: false, reason: `pod labels match neverInjectSelector[${never}]` };
  }
  if (explicit === undefined) {
    const always = nonEmptyMatch(config.alwaysInjectSelector, pod.labels);
    if (always >= 0) explicit = { inject: true, reason: `pod labels match alwaysInjectSelector[${always}]` };
  }
  switch (config.policy) {
    case 'enabled':
      return explicit ?? { inject: true, reason: 'policy enabled' };
    case 'disabled':
      return explicit ?? { inject: false, reason: 'policy disabled and the pod does not ask for injection' };
    default:
      return { inject: false, reason: `injector policy "${config.policy}" is neither enabled nor disabled: injection is off` };
  }
}
