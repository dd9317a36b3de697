import type {
  LoadBalancerSettings,
  LocalityLoadBalancerSetting,
  LocalityLoadBalancerSetting_Distribute,
  LocalityLoadBalancerSetting_Failover,
} from '../../gen/networking/v1alpha3/destination_rule_pb.js';
import type { Locality } from '../../registry/index.js';
import type { LocalityGroup } from './istio-endpoint.js';
import { NETWORK_LABEL } from '../../config/constants.js';

/**
 * istiod's GetEffectiveLbSetting, locality part: the DestinationRule's localityLbSetting, else the
 * mesh's (enabled by default); `enabled: false` at the level that applies turns it off.
 * Deliberate gap: zoneAwareLbSetting and Service trafficDistribution are not supported yet.
 */
export function effectiveLocalitySetting(
  lb: LoadBalancerSettings | undefined,
  mesh: LocalityLoadBalancerSetting | undefined,
): LocalityLoadBalancerSetting | undefined {
  const setting = lb?.localityLbSetting ?? mesh;
  return setting?.enabled === false ? undefined : setting;
}

/**
 * Whether a cluster gets common_lb_config.locality_weighted_lb_config (istiod, without
 * ENABLE_LOCALITY_WEIGHTED_LB_CONFIG): explicit weights, or failover rules that can take effect
 * (outlier detection set).
 */
export function needsLocalityWeightedConfig(setting: LocalityLoadBalancerSetting | undefined, outlierDetection: boolean): boolean {
  if (!setting) return false;
  return setting.distribute.length > 0 || (outlierDetection && (setting.failover.length > 0 || setting.failoverPriority.length > 0));
}

/** istiod's LocalityMatch: `region/zone/subzone` with `*` (or a missing part) matching anything. */
function localityMatch(l: Locality, rule: string): boolean {
  const [region = '', zone = '', subzone = ''] = rule.split('/');
  return (
    (region === '*' || l.region === region) &&
    (zone === '*' || zone === '' || l.zone === zone) &&
    (subzone === '*' || subzone === '' || l.subzone === subzone)
  );
}

/** 0: same subzone … 3: another region (istiod's LbPriority). */
function lbPriority(proxy: Locality, ep: Locality): number {
  if (proxy.region !== ep.region) return 3;
  if (proxy.zone !== ep.zone) return 2;
  return proxy.subzone === ep.subzone ? 0 : 1;
}

/** Renumbers priorities to 0..N without gaps, keeping their order. */
function compactPriorities(groups: readonly LocalityGroup[]): void {
  const distinct = [...new Set(groups.map((g) => g.priority))].sort((a, b) => a - b);
  const rank = new Map(distinct.map((p, i) => [p, i]));
  for (const g of groups) g.priority = rank.get(g.priority)!;
}

/**
 * istiod's applyLocalityWeights: the first `distribute` entry whose `from` matches the proxy sets
 * each matching locality's weight to its share of the target percentage; localities no `to` entry
 * matches lose their endpoints (kept as empty groups, as istiod).
 */
function applyDistribute(proxy: Locality, groups: LocalityGroup[], distribute: readonly LocalityLoadBalancerSetting_Distribute[]): void {
  const rule = distribute.find((d) => localityMatch(proxy, d.from));
  if (!rule) return;
  const unmatched = new Set(groups.keys());
  for (const [target, weight] of Object.entries(rule.to)) {
    const matched = [...unmatched].filter((i) => localityMatch(groups[i]!.locality, target));
    const original = new Map(matched.map((i) => [i, groups[i]!.weight ?? 1]));
    const total = [...original.values()].reduce((s, w) => s + w, 0);
    for (const [i, w] of original) {
      unmatched.delete(i);
      const share = (w * weight) / total;
      if (share > 0) groups[i]!.weight = Math.ceil(share);
    }
  }
  for (const i of unmatched) groups[i]!.endpoints = [];
}

/**
 * istiod's applyLocalityFailover: priority by how much of the locality matches the proxy's; a
 * region the `failover` rule for the proxy's region does not name drops below every other.
 */
function applyFailover(proxy: Locality, groups: readonly LocalityGroup[], failover: readonly LocalityLoadBalancerSetting_Failover[]): void {
  for (const g of groups) {
    let p = lbPriority(proxy, g.locality);
    const rule = failover.find((f) => f.from === proxy.region);
    if (p === 3 && rule && g.locality.region !== rule.to) p = 4;
    // ×5 keeps any priority failoverPriority already assigned (five locality levels, 0-4).
    g.priority = g.priority * 5 + p;
  }
  compactPriorities(groups);
}

/**
 * istiod's applyFailoverPriorityPerLocality: splits a locality by how many of the ordered labels an
 * endpoint shares with the proxy (`label=value` compares with that value instead); a differing
 * network as first label only pushes the endpoint below all others.
 */
function splitByLabels(proxyLabels: Readonly<Record<string, string>>, g: LocalityGroup, priorities: readonly string[]): LocalityGroup[] {
  const parsed = priorities.map((p) => {
    const [label = '', value] = p.split('=');
    return { label, value };
  });
  const includesNetwork = parsed[0]?.label === NETWORK_LABEL;
  const byPriority = new Map<number, LocalityGroup['endpoints']>();
  for (const w of g.endpoints) {
    let priority = 0;
    let adjust = 0;
    for (const [j, { label, value }] of parsed.entries()) {
      if ((value ?? proxyLabels[label] ?? '') === (w.labels[label] ?? '')) continue;
      if (j === 0 && includesNetwork) {
        adjust = parsed.length;
        continue;
      }
      priority = parsed.length - j;
      break;
    }
    const p = priority + adjust;
    byPriority.set(p, [...(byPriority.get(p) ?? []), w]);
  }
  return [...byPriority.keys()]
    .sort((a, b) => a - b)
    .map((p) => {
      const endpoints = byPriority.get(p)!;
      return { locality: g.locality, priority: p, endpoints, weight: endpoints.reduce((s, w) => s + (w.lb.loadBalancingWeight ?? 0), 0) };
    });
}

function applyFailoverPriority(
  groups: LocalityGroup[],
  proxyLabels: Readonly<Record<string, string>>,
  priorities: readonly string[],
): LocalityGroup[] {
  if (Object.keys(proxyLabels).length === 0 || groups.length === 0) return groups;
  const out = groups.flatMap((g) => splitByLabels(proxyLabels, g, priorities));
  compactPriorities(out);
  return out;
}

export interface LocalityLbInput {
  readonly setting: LocalityLoadBalancerSetting;
  readonly proxyLocality: Locality;
  readonly proxyLabels: Readonly<Record<string, string>>;
  /** Failover only takes effect with outlier detection (Envoy never drops to a lower priority otherwise). */
  readonly enableFailover: boolean;
}

/**
 * istiod's ApplyLocalityLoadBalancer on a load assignment relative to the calling proxy: either
 * `distribute` weights, or (with outlier detection) failoverPriority label tiers and/or locality
 * failover priorities. Mutates and returns the groups (failoverPriority may split them).
 */
export function applyLocalityLb(groups: LocalityGroup[], input: LocalityLbInput): LocalityGroup[] {
  const { setting } = input;
  if (setting.distribute.length > 0) {
    applyDistribute(input.proxyLocality, groups, setting.distribute);
    return groups;
  }
  if (!input.enableFailover) return groups;
  if (setting.failoverPriority.length === 0) {
    applyFailover(input.proxyLocality, groups, setting.failover);
    return groups;
  }
  const out = applyFailoverPriority(groups, input.proxyLabels, setting.failoverPriority);
  if (setting.failover.length > 0) applyFailover(input.proxyLocality, out, setting.failover);
  return out;
}
