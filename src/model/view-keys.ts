import type { ConfigSnapshot } from '../config/store-types.js';
import type { Proxy } from './proxy.js';

/**
 * Which proxy attributes generated config can depend on in this snapshot. Labels matter to routes
 * only through `sourceLabels` matches and to clusters/endpoints only through failoverPriority; in
 * most meshes neither is used, and every workload of a namespace shares one view.
 */
export interface ViewSensitivity {
  readonly sourceLabels: boolean;
  readonly failoverPriority: boolean;
}

const nonEmpty = (m: Readonly<Record<string, string>>): boolean => Object.keys(m).length > 0;

export function viewSensitivity(config: ConfigSnapshot): ViewSensitivity {
  let sourceLabels = false;
  for (const vs of config.byKind('VirtualService').values()) {
    const s = vs.spec;
    if (s.http.some((r) => r.match.some((m) => nonEmpty(m.sourceLabels))) || s.tcp.some((r) => r.match.some((m) => nonEmpty(m.sourceLabels))) ||
      s.tls.some((r) => r.match.some((m) => nonEmpty(m.sourceLabels)))) {
      sourceLabels = true;
      break;
    }
  }
  let failoverPriority = false;
  for (const dr of config.byKind('DestinationRule').values()) {
    const policies = [dr.spec.trafficPolicy, ...dr.spec.trafficPolicy?.portLevelSettings ?? [], ...dr.spec.subsets.map((s) => s.trafficPolicy)];
    if (policies.some((p) => (p?.loadBalancer?.localityLbSetting?.failoverPriority.length ?? 0) > 0)) {
      failoverPriority = true;
      break;
    }
  }
  return { sourceLabels, failoverPriority };
}

/** `k=v,…` in key order: a stable spelling of a label set for cache keys. */
export function labelsKey(labels: Readonly<Record<string, string>>): string {
  return Object.keys(labels).sort().map((k) => `${k}=${labels[k]}`).join(',');
}

/** The part of a cache key that stands for who asks: namespace, and labels only when they matter. */
export function viewKey(proxy: Proxy, labelsMatter: boolean): string {
  return labelsMatter ? `${proxy.namespace}|${labelsKey(proxy.labels)}` : proxy.namespace;
}
