import {
  byCreationTime,
  type Config,
  type ConfigSnapshot,
  hostMatches,
  hostsOverlap,
  isVisible,
  isWildcard,
  resolveShortName,
} from '../../config/index.js';
import type { Subset } from '../../gen/networking/v1alpha3/destination_rule_pb.js';

interface Entry {
  readonly config: Config<'DestinationRule'>;
  readonly host: string;
}

/**
 * DestinationRules by host with istiod's lookup precedence: a rule in the proxy's own namespace,
 * then one in the service's namespace, then one in the mesh root namespace; exact hosts before
 * wildcards (longest first). Rules with a workloadSelector are not applied to clients yet. Several
 * rules for one host in one namespace are not merged (istiod adds the later ones' subsets): the oldest applies.
 */
export class DestinationRuleIndex {
  /** Per namespace: rules of exact hosts by host, and wildcard rules (longer first), each oldest first. */
  private readonly byNamespace = new Map<string, { readonly exact: Map<string, Entry[]>; readonly wildcard: Entry[] }>();
  /** Every rule (selectors too) with its resolved host: the subset-name lookup's input. */
  private readonly resolved: readonly Entry[];
  #exportRestricted: boolean | undefined;
  #subsets: { readonly exact: ReadonlyMap<string, ReadonlySet<string>>; readonly wildcard: readonly Entry[] } | undefined;

  constructor(
    snapshot: ConfigSnapshot,
    domain: string,
    private readonly rootNamespace: string,
  ) {
    // Oldest first (istiod's sortConfigBySelectorAndCreationTime), so that of several rules for one
    // host in one namespace the oldest is found: the one whose traffic policy istiod keeps.
    const all = [...snapshot.byKind('DestinationRule').values()].sort(byCreationTime);
    this.resolved = all.map((config) => ({ config, host: resolveShortName(config.spec.host, config.meta.namespace, domain) }));
    for (const entry of this.resolved) {
      const config = entry.config;
      if (config.spec.workloadSelector) continue;
      let rules = this.byNamespace.get(config.meta.namespace);
      if (!rules) this.byNamespace.set(config.meta.namespace, (rules = { exact: new Map(), wildcard: [] }));
      if (isWildcard(entry.host)) rules.wildcard.push(entry);
      else {
        const same = rules.exact.get(entry.host);
        if (same) same.push(entry);
        else rules.exact.set(entry.host, [entry]);
      }
    }
    // Longer (more specific) wildcards first; the sort is stable, so equal lengths stay oldest first.
    for (const rules of this.byNamespace.values()) rules.wildcard.sort((a, b) => b.host.length - a.host.length);
  }

  /**
   * Whether a proxy's namespace can change what forHost answers: its namespace has rules of its
   * own, or some rule is not exported to every namespace. Otherwise every such namespace resolves
   * every host to the same rule (that of the service's namespace, else the root namespace's).
   */
  dependsOnNamespace(namespace: string): boolean {
    this.#exportRestricted ??= this.resolved.some((e) => e.config.spec.exportTo.length > 0 && !e.config.spec.exportTo.includes('*'));
    return this.#exportRestricted || this.byNamespace.has(namespace);
  }

  /** The rule a proxy in `proxyNamespace` applies to `host`: exact hosts before wildcards, in each namespace of the precedence. */
  forHost(host: string, proxyNamespace: string, serviceNamespace: string): Config<'DestinationRule'> | undefined {
    const visible = (e: Entry): boolean => isVisible(e.config.spec.exportTo, e.config.meta.namespace, proxyNamespace);
    for (const ns of [proxyNamespace, serviceNamespace, this.rootNamespace]) {
      const rules = this.byNamespace.get(ns);
      if (!rules) continue;
      const hit = rules.exact.get(host)?.find(visible) ?? rules.wildcard.find((e) => hostMatches(e.host, host) && visible(e));
      if (hit) return hit.config;
    }
    return undefined;
  }

  /**
   * The subset names of every DestinationRule, in any namespace, whose host overlaps `host` (a
   * superset of the subsets any proxy's clusters of that host can have): the ClusterLoadAssignment
   * names an endpoint change of the host may touch. Exact hosts are looked up, not scanned.
   */
  subsetNamesOverlapping(host: string): ReadonlySet<string> {
    const index = (this.#subsets ??= this.subsetIndex());
    if (isWildcard(host))
      return new Set(this.resolved.filter((e) => hostsOverlap(e.host, host)).flatMap((e) => e.config.spec.subsets.map((s) => s.name)));
    const names = new Set(index.exact.get(host));
    for (const e of index.wildcard) if (hostsOverlap(e.host, host)) for (const sub of e.config.spec.subsets) names.add(sub.name);
    return names;
  }

  private subsetIndex(): { exact: Map<string, Set<string>>; wildcard: Entry[] } {
    const exact = new Map<string, Set<string>>();
    const wildcard: Entry[] = [];
    for (const e of this.resolved) {
      if (e.config.spec.subsets.length === 0) continue;
      if (isWildcard(e.host)) {
        wildcard.push(e);
        continue;
      }
      let names = exact.get(e.host);
      if (!names) exact.set(e.host, (names = new Set()));
      for (const sub of e.config.spec.subsets) names.add(sub.name);
    }
    return { exact, wildcard };
  }

  static subset(dr: Config<'DestinationRule'> | undefined, name: string): Subset | undefined {
    return dr?.spec.subsets.find((s) => s.name === name);
  }
}
