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
import { injectorConfigMapName, injectorValues } from './injector-config.js';
import { fieldAt } from './k8s-fields.js';
import {
  DATAPLANE_MODE_LABEL,
  NAMESPACE_INJECTION_LABEL,
  PROXY_CONTAINER,
  REVISION_LABEL,
  SIDECAR_INJECT,
} from '../../config/constants.js';

export const injectionAnalyzer: Analyzer = {
  name: 'injection.Analyzer',
  description: 'Checks conditions related to Istio sidecar injection',
  messages: [MSG.NamespaceNotInjected, MSG.PodMissingProxy, MSG.NamespaceMultipleInjectionLabels, MSG.NamespaceInjectionEnabledByDefault],
  analyze(s, report) {
    const injected = new Set<string>();
    const injectors = injectorValues(s);
    // As istioctl: the flag read for one namespace's revision carries over to the next when that one's injector is unknown.
    let enabledByDefault = false;
    for (const ns of s.namespaces) {
      const name = ns.ref.name;
      if (name === s.rootNamespace) continue;
      const injection = ns.labels[NAMESPACE_INJECTION_LABEL];
      const labels = injection !== undefined ? [`${NAMESPACE_INJECTION_LABEL}=${injection}`] : [];
      for (const l of [REVISION_LABEL, DATAPLANE_MODE_LABEL]) {
        const v = ns.labels[l];
        if (v !== undefined && (injection === undefined || injection === 'enabled')) labels.push(`${l}=${v}`);
      }
      if (labels.length > 1) report({ type: MSG.NamespaceMultipleInjectionLabels, resource: ns.ref, args: [labels] });
      if (ns.labels[DATAPLANE_MODE_LABEL] === 'ambient') continue;
      const injector = injectors.get(injectorConfigMapName(ns.labels[REVISION_LABEL] ?? ''));
      if (injector) enabledByDefault = fieldAt(injector, 'sidecarInjectorWebhook', 'enableNamespacesByDefault') === true;
      if ((injection === undefined || injection === '') && ns.labels[REVISION_LABEL] === undefined) {
        if (enabledByDefault) {
          report({ type: MSG.NamespaceInjectionEnabledByDefault, resource: ns.ref, args: [] });
          continue;
        }
        report({ type: MSG.NamespaceNotInjected, resource: ns.ref, args: [name, name], ...at(s, ns.ref, 'metadata.name') });
        continue;
      }
      if (injection !== undefined && injection !== '' && injection !== 'enabled') continue;
      injected.add(name);
    }
    for (const pod of s.pods) {
      if (!injected.has(pod.ref.namespace)) continue;
      const opt = pod.labels[SIDECAR_INJECT] ?? pod.annotations[SIDECAR_INJECT] ?? '';
      if (opt.toLowerCase() === 'false' || pod.hostNetwork) continue;
      if ([...pod.containers, ...pod.initContainers].includes(PROXY_CONTAINER)) continue;
      report({ type: MSG.PodMissingProxy, resource: pod.ref, args: [`${pod.ref.namespace}/${pod.ref.name}`] });
    }
  },
};
