import type { Config } from '../../config/config.js';
import type { ConfigSnapshot } from '../../config/store-types.js';
import { hostMatches, isVisible, isWildcard, resolveShortName } from '../hosts.js';

/** The gateway name a VirtualService uses for sidecars and proxyless clients. */
export const MESH_GATEWAY = 'mesh';

interface Entry {
  readonly config: Config<'VirtualService'>;
  /** Hosts resolved to FQDNs against the VirtualService's namespace. */
  readonly hosts: readonly string[];
}

/**
 * VirtualServices bound to the mesh gateway, indexed by host. When several apply to one host, the
 * oldest wins in istiod; file objects carry no creation time, so we take namespace/name order —
 * deterministic, and `meshctl analyze` reports the conflict.
 */
export class VirtualServiceIndex {
  private readonly exact = new Map<string, Entry[]>();
  private readonly wildcards: Entry[] = [];

  constructor(snapshot: ConfigSnapshot, domain: string) {
    const all = [...snapshot.byKind('VirtualService').values()].sort(
      (a, b) => a.meta.namespace.localeCompare(b.meta.namespace) || a.meta.name.localeCompare(b.meta.name),
    );
    for (const config of all) {
      const gateways = config.spec.gateways.length === 0 ? [MESH_GATEWAY] : config.spec.gateways;
      if (!gateways.includes(MESH_GATEWAY)) continue;
      const hosts = config.spec.hosts.map((h) => resolveShortName(h, config.meta.namespace, domain));
      const entry: Entry = { config, hosts };
      for (const h of hosts) {
        if (isWildcard(h)) {
          if (!this.wildcards.includes(entry)) this.wildcards.push(entry);
        } else {
          const list = this.exact.get(h);
          if (list) list.push(entry);
          else this.exact.set(h, [entry]);
        }
      }
    }
  }

  /** The VirtualService that routes `host` for a proxy in `namespace` (exact host first, then the longest wildcard). */
  forHost(host: string, namespace: string): Config<'VirtualService'> | undefined {
    const visible = (e: Entry): boolean => isVisible(e.config.spec.exportTo, e.config.meta.namespace, namespace);
    const exact = this.exact.get(host)?.find(visible);
    if (exact) return exact.config;
    let best: { entry: Entry; len: number } | undefined;
    for (const e of this.wildcards) {
      if (!visible(e)) continue;
      for (const h of e.hosts) {
        if (hostMatches(h, host) && (!best || h.length > best.len)) best = { entry: e, len: h.length };
      }
    }
    return best?.entry.config;
  }

  /** Resolved hosts of a VirtualService (for push scoping). */
  static hostsOf(config: Config<'VirtualService'>, domain: string): string[] {
    return config.spec.hosts.map((h) => resolveShortName(h, config.meta.namespace, domain));
  }
}
