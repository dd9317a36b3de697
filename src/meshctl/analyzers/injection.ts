/**
 * istioctl's injection.Analyzer over Namespaces and Pods: a namespace with neither
 * `istio-injection` nor `istio.io/rev` is not injected (IST0102, at metadata.name); one with more
 * than one kind of injection label is ambiguous (IST0123); a pod of an injected namespace
 * (`istio-injection=enabled` or a revision label) without an `istio-proxy` container or native
 * sidecar is missing its proxy (IST0103) — unless it opts out (`sidecar.istio.io/inject: "false"`,
 * label first) or uses the host network. As istioctl: the Istio system namespace is skipped, and
 * ambient namespaces (`istio.io/dataplane-mode=ambient`) need no sidecar.
 */
import { MSG } from '../analyze/messages.js';
import { at, type Analyzer } from '../analyze/model.js';

const INJECTION = 'istio-injection';
const REVISION = 'istio.io/rev';
const DATAPLANE_MODE = 'istio.io/dataplane-mode';

export const injectionAnalyzer: Analyzer = {
  name: 'injection.Analyzer',
  description: 'Checks conditions related to Istio sidecar injection',
  messages: [MSG.NamespaceNotInjected, MSG.PodMissingProxy, MSG.NamespaceMultipleInjectionLabels],
  analyze(s, report) {
    const injected = new Set<string>();
    for (const ns of s.namespaces) {
      const name = ns.ref.name;
      if (name === s.rootNamespace) continue;
      const injection = ns.labels[INJECTION];
      const labels = injection !== undefined ? [`${INJECTION}=${injection}`] : [];
      for (const l of [REVISION, DATAPLANE_MODE]) {
        const v = ns.labels[l];
        if (v !== undefined && (injection === undefined || injection === 'enabled')) labels.push(`${l}=${v}`);
      }
      if (labels.length > 1) report({ type: MSG.NamespaceMultipleInjectionLabels, resource: ns.ref, args: [labels] });
      if (ns.labels[DATAPLANE_MODE] === 'ambient') continue;
      if ((injection === undefined || injection === '') && ns.labels[REVISION] === undefined) {
        report({ type: MSG.NamespaceNotInjected, resource: ns.ref, args: [name, name], ...at(s, ns.ref, 'metadata.name') });
        continue;
      }
      if (injection !== undefined && injection !== '' && injection !== 'enabled') continue;
      injected.add(name);
    }
    for (const pod of s.pods) {
      if (!injected.has(pod.ref.namespace)) continue;
      const opt = pod.labels['sidecar.istio.io/inject'] ?? pod.annotations['sidecar.istio.io/inject'] ?? '';
      if (opt.toLowerCase() === 'false' || pod.hostNetwork) continue;
      if ([...pod.containers, ...pod.initContainers].includes('istio-proxy')) continue;
      report({ type: MSG.PodMissingProxy, resource: pod.ref, args: [`${pod.ref.namespace}/${pod.ref.name}`] });
    }
  },
};
