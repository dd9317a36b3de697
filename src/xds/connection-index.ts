import type { Connection } from './connection.js';
import { changeBetween } from './name-sets.js';
import { TypeUrl } from './type-urls.js';
import type { WatchedResource } from './watched-resource.js';

/**
 * The connected streams by what an endpoint change asks about: the ClusterLoadAssignments each
 * watches and the addresses its proxy has. An EDS-only push then visits its watchers, not every
 * stream (2000 sidecars, 200 watching a host: planning is 200 lookups, not 2000 scans).
 * Kept current by `watch` (each EDS state change; the common ACK keeps the same name set, which
 * is one identity check) and `add`/`remove` (connect, disconnect).
 */
export class ConnectionIndex {
  readonly #byName = new Map<string, Set<Connection>>();
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

  /** A stream's state of `typeUrl` changed (only EDS matters here). */
  watch(conn: Connection, typeUrl: string, w: WatchedResource | undefined): void {
    if (typeUrl !== TypeUrl.ClusterLoadAssignment) return;
    const prev = this.#held.get(conn);
    if (prev && w && prev.names === w.names && prev.wildcard === w.wildcard) return;
    const before = prev?.names ?? NO_NAMES;
    const after = w?.names ?? NO_NAMES;
    // Only the difference moves: a subscription that gains one name (a new service) costs that
    // name when the new set was derived from the old one, else a pass of membership checks — never
    // a removal and re-insertion of every name it already had.
    const change = changeBetween(before, after);
    if (change) {
      for (const n of change.dropped) removeFrom(this.#byName, n, conn);
      for (const n of change.added) addTo(this.#byName, n, conn);
    } else {
      for (const n of before) if (!after.has(n)) removeFrom(this.#byName, n, conn);
      for (const n of after) if (!before.has(n)) addTo(this.#byName, n, conn);
    }
    if (w?.wildcard === true) this.#wildcard.add(conn);
    else this.#wildcard.delete(conn);
    if (w) this.#held.set(conn, { names: w.names, wildcard: w.wildcard });
    else this.#held.delete(conn);
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
    for (const n of edsNames) for (const c of this.#byName.get(n) ?? []) eds(c);
    return out;
  }
}

const NO_NAMES: ReadonlySet<string> = new Set();

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
