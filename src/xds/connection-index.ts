import type { Connection } from './connection.js';
import { TypeUrl } from './type-urls.js';
import type { WatchedResource } from './watched-resource.js';

/**
 * The connected streams by what an endpoint change asks about: the ClusterLoadAssignments each
 * watches and the addresses its proxy has. An EDS-only push then visits its watchers, not every
 * stream (2000 sidecars, 200 watching a host: planning is 200 lookups, not 2000 scans).
 * Streams are indexed by the name set they watch, and a set by its names once: sidecars in step
 * hold one pooled set, so a thousand of them subscribing to a thousand names (or all moving to the
 * set with one new service) index a thousand names once, not once per stream.
 * Kept current by `watch` (each EDS state change; the common ACK keeps the same set, which is one
 * identity check) and `add`/`remove` (connect, disconnect).
 */
export class ConnectionIndex {
  /** Streams by the set of names they watch (pooled sets are shared). */
  readonly #bySet = new Map<ReadonlySet<string>, Set<Connection>>();
  /** Each name's watched sets. */
  readonly #setsByName = new Map<string, Set<ReadonlySet<string>>>();
  readonly #wildcard = new Set<Connection>();
  readonly #held = new Map<Connection, { readonly names: ReadonlySet<string>; readonly wildcard: boolean }>();
  readonly #byAddress = new Map<string, Set<Connection>>();

  add(conn: Connection): void {
    for (const ip of conn.proxy.ipAddresses) addTo(this.#byAddress, ip, conn);
  }

  remove(conn: Connection): void {
    this.watch(conn, TypeUrl.ClusterLoadAssignment, undefined);
    for (const ip of conn.proxy.ipAddresses) removeFrom(this.#byAddress, ip, conn);
  }

  /** Is any stream's proxy at this address? */
  hasAddress(ip: string): boolean {
    return this.#byAddress.has(ip);
  }

  /** Streams indexed, by what: tests check that a closed stream leaves nothing behind. */
  sizes(): {
    readonly byAddress: number;
    readonly watchedSets: number;
    readonly names: number;
    readonly held: number;
    readonly wildcard: number;
  } {
    return {
      byAddress: this.#byAddress.size,
      watchedSets: this.#bySet.size,
      names: this.#setsByName.size,
      held: this.#held.size,
      wildcard: this.#wildcard.size,
    };
  }

  /** A stream's state of `typeUrl` changed (only EDS matters here). */
  watch(conn: Connection, typeUrl: string, w: WatchedResource | undefined): void {
    if (typeUrl !== TypeUrl.ClusterLoadAssignment) return;
    const prev = this.#held.get(conn);
    if (prev && w && prev.names === w.names && prev.wildcard === w.wildcard) return;
    if (prev && prev.names !== w?.names) this.#leave(prev.names, conn);
    if (w && w.names !== prev?.names) this.#join(w.names, conn);
    if (w?.wildcard === true) this.#wildcard.add(conn);
    else this.#wildcard.delete(conn);
    if (w) this.#held.set(conn, { names: w.names, wildcard: w.wildcard });
    else this.#held.delete(conn);
  }

  #join(names: ReadonlySet<string>, conn: Connection): void {
    if (names.size === 0) return;
    let conns = this.#bySet.get(names);
    if (!conns) {
      this.#bySet.set(names, (conns = new Set()));
      for (const n of names) addTo(this.#setsByName, n, names);
    }
    conns.add(conn);
  }

  #leave(names: ReadonlySet<string>, conn: Connection): void {
    const conns = this.#bySet.get(names);
    if (!conns) return;
    conns.delete(conn);
    if (conns.size > 0) return;
    this.#bySet.delete(names);
    for (const n of names) removeFrom(this.#setsByName, n, names);
  }

  /**
   * Who an endpoint change reaches: proxies at a changed instance address need a full push (their
   * inbound config), watchers of a changed ClusterLoadAssignment (or of all of them) an EDS push.
   */
  endpointReach(edsNames: ReadonlySet<string>, instanceIps: ReadonlySet<string>): Map<Connection, 'eds' | 'full'> {
    const out = new Map<Connection, 'eds' | 'full'>();
    for (const ip of instanceIps) for (const c of this.#byAddress.get(ip) ?? []) out.set(c, 'full');
    const eds = (c: Connection): void => {
      if (!out.has(c)) out.set(c, 'eds');
    };
    for (const c of this.#wildcard) eds(c);
    const sets = new Set<ReadonlySet<string>>();
    for (const n of edsNames) for (const set of this.#setsByName.get(n) ?? []) sets.add(set);
    for (const set of sets) for (const c of this.#bySet.get(set) ?? []) eds(c);
    return out;
  }
}

function addTo<K, V>(map: Map<K, Set<V>>, key: K, value: V): void {
  let set = map.get(key);
  if (!set) map.set(key, (set = new Set()));
  set.add(value);
}

function removeFrom<K, V>(map: Map<K, Set<V>>, key: K, value: V): void {
  const set = map.get(key);
  if (!set) return;
  set.delete(value);
  if (set.size === 0) map.delete(key);
}
