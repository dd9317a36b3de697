/**
 * The ADS connections of each auto-registered or health-checked proxy (istiod's adsConnections):
 * a VM may hold several streams at once (Envoy's ADS, a proxyless client, a reconnect that
 * overlaps the old stream); its entry is unregistered only when the last one ends.
 */

/** What identifies one proxy: its network, first IP, group and namespace (istiod's proxyKey). */
export interface ProxyKey {
  readonly network: string;
  readonly ip: string;
  readonly group: string;
  readonly namespace: string;
}

const keyString = (k: ProxyKey): string => `${k.network}/${k.ip}/${k.namespace}/${k.group}`;

export class AdsConnections<C> {
  readonly #byProxy = new Map<string, { readonly key: ProxyKey; readonly conns: Map<string, C> }>();

  connect(key: ProxyKey, id: string, conn: C): void {
    const ks = keyString(key);
    let entry = this.#byProxy.get(ks);
    if (!entry) this.#byProxy.set(ks, (entry = { key, conns: new Map() }));
    entry.conns.set(id, conn);
  }

  /** Forgets one connection; true while the proxy still has others. */
  disconnect(key: ProxyKey, id: string): boolean {
    const ks = keyString(key);
    const entry = this.#byProxy.get(ks);
    if (!entry) return false;
    entry.conns.delete(id);
    if (entry.conns.size > 0) return true;
    this.#byProxy.delete(ks);
    return false;
  }

  /** The connections of every proxy of one WorkloadGroup. */
  forGroup(namespace: string, group: string): C[] {
    const out: C[] = [];
    for (const { key, conns } of this.#byProxy.values())
      if (key.namespace === namespace && key.group === group) out.push(...conns.values());
    return out;
  }

  /** How many connections one proxy has. */
  count(key: ProxyKey): number {
    return this.#byProxy.get(keyString(key))?.conns.size ?? 0;
  }
}
