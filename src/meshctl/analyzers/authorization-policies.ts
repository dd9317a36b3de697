/**
 * istioctl's auth.AuthorizationPoliciesAnalyzer: an AuthorizationPolicy should apply to some
 * workload in the mesh (IST0127 with its selector; a mesh-wide one in the root namespace looks in
 * every namespace, one without a selector needs any mesh pod in its namespace), and the namespaces
 * its rules name (`from.source.namespaces` / `notNamespaces`, `*` prefix or suffix globs) must
 * exist (IST0101, at the namespace entry). A pod is in the mesh with an `istio-proxy` container
 * that names an image, with `sidecar.istio.io/inject: "true"`, in an `istio-injection=enabled`
 * namespace, or when enrolled in ambient mode.
 */
import { labelsSubsetOf } from '../../config/index.js';
import { MSG } from '../analyze/messages.js';
import { at, configsOf, objectsOf, refOf, type Analyzer, type K8sObject, type Snapshot } from '../analyze/model.js';
import { selectorString } from './gateway-selector.js';
import { recordsAt } from './k8s-fields.js';

/** Istio's util.PodInMesh (and PodInAmbientMode): whether a pod counts as a workload of the mesh. */
export function podInMesh(s: Snapshot, pod: K8sObject): boolean {
  const containers = [...recordsAt(pod.body, 'spec', 'containers'), ...recordsAt(pod.body, 'spec', 'initContainers')];
  const proxy = containers.find((c) => c.name === 'istio-proxy');
  if (proxy !== undefined && typeof proxy.image === 'string' && proxy.image !== '') return true;
  if (pod.annotations['ambient.istio.io/redirection'] === 'enabled') return true;
  const opt = pod.labels['sidecar.istio.io/inject'] ?? pod.annotations['sidecar.istio.io/inject'];
  if (opt !== undefined) return opt === 'true';
  return s.namespaces.find((n) => n.ref.name === pod.ref.namespace)?.labels['istio-injection'] === 'enabled';
}

/** Istio's namespaceMatch: `*`, `*suffix`, `prefix*`, or the name (case-insensitively). */
function namespaceMatches(ns: string, exp: string): boolean {
  if (exp === '*') return true;
  if (exp.startsWith('*')) return ns.endsWith(exp.slice(1));
  if (exp.endsWith('*')) return ns.startsWith(exp.slice(0, -1));
  return ns.toLowerCase() === exp.toLowerCase();
}

export const authorizationPoliciesAnalyzer: Analyzer = {
  name: 'auth.AuthorizationPoliciesAnalyzer',
  description: 'Checks the validity of authorization policies',
  messages: [MSG.NoMatchingWorkloadsFound, MSG.ReferencedResourceNotFound],
  analyze(s, report) {
    const meshPods = objectsOf(s, 'Pod').filter((p) => podInMesh(s, p));
    const namespaces = s.namespaces.map((n) => n.ref.name);
    for (const ap of configsOf(s, 'AuthorizationPolicy')) {
      const resource = refOf(ap);
      const ns = ap.meta.namespace;
      const sel = ap.spec.selector?.matchLabels;
      const inScope = ns === s.rootNamespace ? meshPods : meshPods.filter((p) => p.ref.namespace === ns);
      // A mesh-wide policy without a selector applies to everything: nothing to check.
      if (!(ns === s.rootNamespace && sel === undefined)) {
        const matched = inScope.some((p) => sel === undefined || labelsSubsetOf(sel, p.labels));
        if (!matched) report({ type: MSG.NoMatchingWorkloadsFound, resource, args: [sel === undefined ? '' : selectorString(sel)] });
      }
      ap.spec.rules.forEach((rule, i) =>
        rule.from.forEach((from, j) => {
          const src = from.source;
          if (!src) return;
          const entries = [
            ...src.namespaces.map((n, k) => [n, `namespaces[${k}]`] as const),
            ...src.notNamespaces.map((n, k) => [n, `notNamespaces[${k}]`] as const),
          ];
          for (const [exp, field] of entries) {
            if (namespaces.some((n) => namespaceMatches(n, exp))) continue;
            report({
              type: MSG.ReferencedResourceNotFound,
              resource,
              args: ['namespace', exp],
              // istioctl points a notNamespaces entry at namespaces[k]; the entry itself is more useful.
              ...at(s, resource, `spec.rules[${i}].from[${j}].source.${field}`),
            });
          }
        }),
      );
    }
  },
};
