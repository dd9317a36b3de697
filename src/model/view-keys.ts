import type { Config, ConfigKey, ConfigSnapshot } from '../config/index.js';
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

function usesSourceLabels(vs: Config<'VirtualService'>): boolean {
  const s = vs.spec;
  return (
    s.http.some((r) => r.match.some((m) => nonEmpty(m.sourceLabels))) ||
    s.tcp.some((r) => r.match.some((m) => nonEmpty(m.sourceLabels))) ||
    s.tls.some((r) => r.match.some((m) => nonEmpty(m.sourceLabels)))
  );
}

function usesFailoverPriority(dr: Config<'DestinationRule'>): boolean {
  const policies = [
    dr.spec.trafficPolicy,
    ...(dr.spec.trafficPolicy?.portLevelSettings ?? []),
    ...dr.spec.subsets.map((s) => s.trafficPolicy),
  ];
  return policies.some((p) => (p?.loadBalancer?.localityLbSetting?.failoverPriority.length ?? 0) > 0);
}

/** What the previous snapshot's sensitivity was and which objects changed since (an incremental build). */
export interface SensitivityChange {
  readonly previous: ViewSensitivity;
  readonly changed: readonly ConfigKey[];
  readonly unchangedDestinationRules: boolean;
}

/**
 * Scans every VirtualService and DestinationRule — unless a change can only have turned a flag on:
 * a flag that was off stays off unless a changed object of its kind now uses it.
 */
export function viewSensitivity(config: ConfigSnapshot, change?: SensitivityChange): ViewSensitivity {
  const any = <K extends 'VirtualService' | 'DestinationRule'>(
    kind: K,
    uses: (c: Config<K>) => boolean,
    wasOn: boolean | undefined,
  ): boolean => {
    if (change && wasOn === false) {
      return change.changed.some((k) => {
        if (k.kind !== kind) return false;
        const c = config.get(kind, k.namespace, k.name);
        return c !== undefined && uses(c);
      });
    }
    for (const c of config.byKind(kind).values()) if (uses(c)) return true;
    return false;
  };
  const failoverPriority = change?.unchangedDestinationRules
    ? change.previous.failoverPriority
    : any('DestinationRule', usesFailoverPriority, change?.previous.failoverPriority);
  return { sourceLabels: any('VirtualService', usesSourceLabels, change?.previous.sourceLabels), failoverPriority };
}

/** `k=v,…` in key order: a stable spelling of a label set for cache keys. */
export function labelsKey(labels: Readonly<Record<string, string>>): string {
  return Object.keys(labels)
    .sort()
    .map((k) => `${k}=${labels[k]}`)
    .join(',');
}

const proxyLabelKeys = new WeakMap<Proxy, string>();

/** labelsKey of a proxy's labels, once per proxy (a Proxy never changes; cache keys ask on every push). */
export function proxyLabelsKey(proxy: Proxy): string {
  let key = proxyLabelKeys.get(proxy);
  if (key === undefined) proxyLabelKeys.set(proxy, (key = labelsKey(proxy.labels)));
  return key;
}

/** The part of a cache key that stands for who asks: namespace, and labels only when they matter. */
export function viewKey(proxy: Proxy, labelsMatter: boolean): string {
  return labelsMatter ? `${proxy.namespace}|${proxyLabelsKey(proxy)}` : proxy.namespace;
}
