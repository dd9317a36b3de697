/**
 * Cluster-local hosts (istiod's pilot/pkg/model/cluster_local.go): a host whose endpoints a proxy
 * takes from its own cluster only. The mesh config's `serviceSettings[].settings.clusterLocal`
 * names them; istiod's defaults — every service of kube-system, `kubernetes.default.svc`, and the
 * discovery address's host (`defaultConfig.discoveryAddress`, istiod's own Service) — hold unless a
 * serviceSettings entry with `clusterLocal: false` names them (or, for the kube-system wildcard, a
 * host under it).
 */
import { isWildcard } from '../hosts.js';

/** One `serviceSettings` entry of the mesh config. */
export interface ServiceSetting {
  readonly hosts: readonly string[];
  readonly clusterLocal: boolean;
}

/** istiod's ProxyConfig default discoveryAddress (pkg/config/mesh/mesh.go). */
export const DEFAULT_DISCOVERY_ADDRESS = 'istiod.istio-system.svc:15012';

const DEFAULT_CLUSTER_LOCAL_NAMESPACES = ['kube-system'];
const DEFAULT_CLUSTER_LOCAL_SERVICES = ['kubernetes.default.svc'];

/** Which hosts are cluster-local, from the mesh config (istiod's ClusterLocalHosts). */
export class ClusterLocalHosts {
  readonly #specific = new Map<string, boolean>();
  readonly #wildcard = new Map<string, boolean>();

  constructor(settings: readonly ServiceSetting[], domain: string, discoveryAddress: string = DEFAULT_DISCOVERY_ADDRESS) {
    const defaults: string[] = [
      ...DEFAULT_CLUSTER_LOCAL_NAMESPACES.map((n) => `*.${n}.svc.${domain}`),
      ...DEFAULT_CLUSTER_LOCAL_SERVICES.map((s) => `${s}.${domain}`),
    ];
    const discoveryHost = hostOf(discoveryAddress);
    if (discoveryHost !== undefined) defaults.push(discoveryHost.endsWith(domain) ? discoveryHost : `${discoveryHost}.${domain}`);
    const overridden = new Set<string>();
    for (const s of settings) {
      if (!s.clusterLocal) {
        // A host set to not cluster-local drops the default it names, or the wildcard default it falls under.
        for (const h of s.hosts) for (const d of defaults) if (h === d || (isWildcard(d) && h.endsWith(d.slice(1)))) overridden.add(d);
      }
      for (const h of s.hosts) (isWildcard(h) ? this.#wildcard : this.#specific).set(h, s.clusterLocal);
    }
    for (const d of defaults) if (!overridden.has(d)) (isWildcard(d) ? this.#wildcard : this.#specific).set(d, true);
  }

  /** Whether `host` is cluster-local: the most specific entry that matches it says (istiod's MostSpecificHostMatch); none: no. */
  isClusterLocal(host: string): boolean {
    if (isWildcard(host)) {
      const exact = this.#wildcard.get(host);
      if (exact !== undefined) return exact;
      return this.#mostSpecificWildcard(host.slice(1)) ?? false;
    }
    return this.#specific.get(host) ?? this.#mostSpecificWildcard(host) ?? false;
  }

  #mostSpecificWildcard(needle: string): boolean | undefined {
    let best: string | undefined;
    let value: boolean | undefined;
    for (const [pattern, v] of this.#wildcard) {
      if (!needle.endsWith(pattern.slice(1))) continue;
      // istiod's host.MoreSpecific between wildcards: longer first, then alphabetical.
      if (best === undefined || pattern.length > best.length || (pattern.length === best.length && pattern < best)) {
        best = pattern;
        value = v;
      }
    }
    return value;
  }
}

/** The host of `host:port` (istiod's net.SplitHostPort); undefined when it has no port, as istiod then logs and skips it. */
function hostOf(address: string): string | undefined {
  const m = /^(?:\[([^\]]*)\]|([^:]*)):(\d+)$/.exec(address);
  return m ? (m[1] ?? m[2]) : undefined;
}
