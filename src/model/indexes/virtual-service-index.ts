import {
  byCreationTime,
  configKeyString,
  type Config,
  type ConfigKey,
  type ConfigSnapshot,
  hostMatches,
  isVisible,
  isWildcard,
  resolveShortName,
} from '../../config/index.js';
import { settleLists } from './config-order.js';

/** The gateway name a VirtualService uses for sidecars and proxyless clients. */
export const MESH_GATEWAY = 'mesh';

interface Entry {
  readonly config: Config<'VirtualService'>;
  /** Hosts resolved to FQDNs against the VirtualService's namespace. */
  readonly hosts: readonly string[];
}

const byEntryOrder = (a: Entry, b: Entry): number => byCreationTime(a.config, b.config);

/** The index entry of a VirtualService bound to the mesh gateway, or undefined when it is for gateways only. */
function meshEntry(config: Config<'VirtualService'>, domain: string): Entry | undefined {
  const gateways = config.spec.gateways.length === 0 ? [MESH_GATEWAY] : config.spec.gateways;
  if (!gateways.includes(MESH_GATEWAY)) return undefined;
  return { config, hosts: config.spec.hosts.map((h) => resolveShortName(h, config.meta.namespace, domain)) };
}

/**
 * VirtualServices bound to the mesh gateway, indexed by host. When several apply to one host, the
 * oldest wins, as in istiod (creation time, then name, then namespace); `meshctl analyze` reports
 * the conflict. A change of a few VirtualServices
 * makes the next index from this one (withChanges): only the hosts they name are touched.
 */
export class VirtualServiceIndex {
  private constructor(
    /** Entries per exact host, oldest first. */
    private readonly exact: ReadonlyMap<string, readonly Entry[]>,
    /** Entries with at least one wildcard host, oldest first. */
    private readonly wildcards: readonly Entry[],
    /** Every entry by configKeyString. */
    private readonly byKey: ReadonlyMap<string, Entry>,
  ) {}

  /** `generated`: internal VirtualServices from other kinds (GAMMA routes), indexed beside the user's. */
  static build(snapshot: ConfigSnapshot, domain: string, generated: readonly Config<'VirtualService'>[] = []): VirtualServiceIndex {
    const entries = [...snapshot.byKind('VirtualService').values(), ...generated]
      .sort(byCreationTime)
      .map((c) => meshEntry(c, domain))
      .filter((e) => e !== undefined);
    const exact = new Map<string, Entry[]>();
    const wildcards: Entry[] = [];
    const byKey = new Map<string, Entry>();
    for (const entry of entries) {
      byKey.set(configKeyString(entry.config.meta), entry);
      if (entry.hosts.some(isWildcard)) wildcards.push(entry);
      for (const h of entry.hosts) {
        if (isWildcard(h)) continue;
        const list = exact.get(h);
        if (list) list.push(entry);
        else exact.set(h, [entry]);
      }
    }
    return new VirtualServiceIndex(exact, wildcards, byKey);
  }

  /** The index after `changed` VirtualServices took their versions in `snapshot` (this one is left as it is). */
  withChanges(snapshot: ConfigSnapshot, changed: readonly ConfigKey[], domain: string): VirtualServiceIndex {
    const exact = new Map(this.exact);
    const byKey = new Map(this.byKey);
    let wildcards = this.wildcards;
    const touched = new Set<string>();
    for (const key of changed) {
      const ks = configKeyString(key);
      const old = byKey.get(ks);
      if (old) {
        byKey.delete(ks);
        if (old.hosts.some(isWildcard)) wildcards = wildcards.filter((e) => e !== old);
        for (const h of old.hosts) {
          if (isWildcard(h)) continue;
          touched.add(h);
          exact.set(
            h,
            (exact.get(h) ?? []).filter((e) => e !== old),
          );
        }
      }
      const config = snapshot.get('VirtualService', key.namespace, key.name);
      const entry = config && meshEntry(config, domain);
      if (!entry) continue;
      byKey.set(ks, entry);
      if (entry.hosts.some(isWildcard)) wildcards = [...wildcards, entry].sort(byEntryOrder);
      for (const h of entry.hosts) {
        if (isWildcard(h)) continue;
        touched.add(h);
        exact.set(h, [...(exact.get(h) ?? []), entry]);
      }
    }
    settleLists(exact, touched, byEntryOrder);
    return new VirtualServiceIndex(exact, wildcards, byKey);
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
