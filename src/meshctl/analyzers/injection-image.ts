/**
 * istioctl's injection.ImageAnalyzer (IST0158): in a namespace injected by a revision whose
 * injector ConfigMap is known, pods whose `istio-proxy` container (or native sidecar) runs another
 * image than the injector's — with the image type variant (`-distroless`, …) the effective proxy
 * config selects — were injected by an older control plane. One message per namespace, listing
 * the pods. Pods pinning their image (`sidecar.istio.io/proxyImage`) are skipped.
 */
import { parse as parseYaml } from 'yaml';
import { labelsSubsetOf } from '../../config/index.js';
import { MSG } from '../analyze/messages.js';
import { configsOf, objectsOf, type Analyzer, type K8sObject, type Snapshot } from '../analyze/model.js';
import { injectedProxyImage, injectorConfigMapName, injectorValues } from './injector-config.js';
import { recordsAt, stringAt } from './k8s-fields.js';

const PROXY_CONFIG_ANNOTATION = 'proxy.istio.io/config';

/** Istio's EffectiveProxyConfigResolver.ImageType: mesh default, root ProxyConfig, namespace, workload, pod annotation. */
function imageTypeResolver(s: Snapshot): (pod: K8sObject) => string {
  const pcs = configsOf(s, 'ProxyConfig');
  const typeOf = (t: string | undefined): string => t ?? '';
  const root = pcs.find((p) => p.meta.namespace === s.rootNamespace);
  return (pod) => {
    let variant = s.meshConfig.defaultConfig?.image?.imageType ?? '';
    const set = (t: string): void => {
      if (t !== '') variant = t;
    };
    set(typeOf(root?.spec.image?.imageType));
    for (const p of pcs) {
      if (p.meta.namespace !== pod.ref.namespace || p.meta.namespace === s.rootNamespace) continue;
      if (p.spec.selector === undefined) set(typeOf(p.spec.image?.imageType));
    }
    for (const p of pcs) {
      if (p.meta.namespace !== pod.ref.namespace || p.meta.namespace === s.rootNamespace || p.spec.selector === undefined) continue;
      if (labelsSubsetOf(p.spec.selector.matchLabels, pod.labels)) set(typeOf(p.spec.image?.imageType));
    }
    const annotated = pod.annotations[PROXY_CONFIG_ANNOTATION];
    if (annotated !== undefined) {
      try {
        set(stringAt(parseYaml(annotated) as unknown, 'image', 'imageType') ?? '');
      } catch {
        // An unparsable annotation is ignored, as Istio's ApplyYAML error is.
      }
    }
    return variant === 'default' ? '' : variant;
  };
}

export const injectionImageAnalyzer: Analyzer = {
  name: 'injection.ImageAnalyzer',
  description: 'Checks the image of auto-injection configured with the running proxies on pods',
  messages: [MSG.PodsIstioProxyImageMismatchInNamespace],
  analyze(s, report) {
    const values = injectorValues(s);
    if (values.size === 0) return;
    const images = new Map([...values].map(([name, v]) => [name, injectedProxyImage(v)]));
    const revisionOf = new Map<string, string>();
    for (const ns of s.namespaces) {
      const rev = ns.labels['istio.io/rev'];
      if (rev !== undefined) revisionOf.set(ns.ref.name, rev);
      else if (ns.labels['istio-injection'] === 'enabled') revisionOf.set(ns.ref.name, 'default');
    }
    const imageType = imageTypeResolver(s);
    const mismatched = new Map<string, string[]>();
    for (const pod of objectsOf(s, 'Pod')) {
      const rev = revisionOf.get(pod.ref.namespace);
      if (rev === undefined || (pod.annotations['sidecar.istio.io/proxyImage'] ?? '') !== '') continue;
      const expected = images.get(injectorConfigMapName(rev));
      if (expected === undefined) continue;
      const variant = imageType(pod);
      for (const c of [...recordsAt(pod.body, 'spec', 'containers'), ...recordsAt(pod.body, 'spec', 'initContainers')]) {
        if (c.name !== 'istio-proxy' || c.image === expected || c.image === `${expected}-${variant}`) continue;
        mismatched.set(pod.ref.namespace, [...(mismatched.get(pod.ref.namespace) ?? []), pod.ref.name]);
      }
    }
    for (const [ns, pods] of mismatched) {
      const resource = s.namespaces.find((n) => n.ref.name === ns)?.ref;
      if (resource) report({ type: MSG.PodsIstioProxyImageMismatchInNamespace, resource, args: [pods.sort()] });
    }
  },
};
