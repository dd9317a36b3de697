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
  private readonly byNamespace = new Map<string, Entry[]>();
  /** Every rule (selectors too) with its resolved host: the subset-name lookup's input. */
  private readonly resolved: readonly Entry[];
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
      const list = this.byNamespace.get(config.meta.namespace);
      if (list) list.push(entry);
      else this.byNamespace.set(config.meta.namespace, [entry]);
    }
    for (const list of this.byNamespace.values()) {
      // exact before wildcard, longer (more specific) wildcard first
      list.sort((a, b) => Number(isWildcard(a.host)) - Number(isWildcard(b.host)) || b.host.length - a.host.length);
    }
  }

  forHost(host: string, proxyNamespace: string, serviceNamespace: string): Config<'DestinationRule'> | undefined {
    for (const ns of [proxyNamespace, serviceNamespace, this.rootNamespace]) {
      const hit = this.byNamespace
        .get(ns)
        ?.find((e) => hostMatches(e.host, host) && isVisible(e.config.spec.exportTo, e.config.meta.namespace, proxyNamespace));
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
