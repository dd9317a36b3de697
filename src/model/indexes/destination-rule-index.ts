import type { Config } from '../../config/config.js';
import type { ConfigSnapshot } from '../../config/store-types.js';
import type { Subset } from '../../gen/networking/v1alpha3/destination_rule_pb.js';
import { hostMatches, isVisible, isWildcard, resolveShortName } from '../hosts.js';

interface Entry {
  readonly config: Config<'DestinationRule'>;
  readonly host: string;
}

/**
 * DestinationRules by host with istiod's lookup precedence: a rule in the proxy's own namespace,
 * then one in the service's namespace, then one in the mesh root namespace; exact hosts before
 * wildcards (longest first). Rules with a workloadSelector are not applied to clients yet.
 */
export class DestinationRuleIndex {
  private readonly byNamespace = new Map<string, Entry[]>();

  constructor(snapshot: ConfigSnapshot, domain: string, private readonly rootNamespace: string) {
    const all = [...snapshot.byKind('DestinationRule').values()].sort((a, b) => a.meta.name.localeCompare(b.meta.name));
    for (const config of all) {
      if (config.spec.workloadSelector) continue;
      const entry = { config, host: resolveShortName(config.spec.host, config.meta.namespace, domain) };
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
      const hit = this.byNamespace.get(ns)?.find(
        (e) => hostMatches(e.host, host) && isVisible(e.config.spec.exportTo, e.config.meta.namespace, proxyNamespace),
      );
      if (hit) return hit.config;
    }
    return undefined;
  }

  static subset(dr: Config<'DestinationRule'> | undefined, name: string): Subset | undefined {
    return dr?.spec.subsets.find((s) => s.name === name);
  }
}
