/**
 * Marshal-once cache for generated resources and per-view derivations, kept across pushes
 * (istiod's XdsCache). The first proxy that needs a value for a given view builds it; every other
 * proxy with the same view, in this push and in later ones, reuses it until a config change it
 * depends on invalidates it.
 *
 * Dependencies are recorded, not declared: while a value is built, every read of the PushContext
 * (service, VirtualService, DestinationRule, endpoints, policies, config lookups…) records a
 * dependency token into the build under way. A cached value reused inside another build is
 * recorded there as that entry, not as all of its tokens: a view's list of a thousand services'
 * clusters records a thousand entries, not the three thousand tokens they read. A change then
 * removes exactly the entries whose tokens it touches, and with each removed entry the entries
 * that reused it.
 *
 * Tokens (see dependency-tokens.ts): `<Kind>@<host>` (config of that kind for one host),
 * `<Kind>@*` (any config of that kind), `<Kind>/<ns>/<name>` (one object),
 * `endpoints@<host>`, `instances@<ip>`.
 *
 * Bounded (PILOT_XDS_CACHE_SIZE, istiod's default 60000) with least-recently-used eviction (in
 * batches of 1/16 of the size).
 */
export interface XdsCacheStats {
  readonly size: number;
  readonly hits: number;
  readonly misses: number;
  readonly evictions: number;
  /** Entries removed by config changes (precise invalidation), and whole-cache clears. */
  readonly invalidated: number;
  readonly clears: number;
}

interface Entry {
  readonly key: string;
  readonly value: unknown;
  /** Dependency tokens its build recorded. */
  readonly deps: readonly string[];
  /** Cached entries its build reused (it goes when any of them goes). */
  readonly reused: readonly Entry[];
  /** Keys of the entries that reused it: one key (no Set for the many entries reused once) or a set. */
  reusedBy: string | Set<string> | undefined;
  /** The epoch of the snapshot it was built from. */
  readonly epoch: number;
  /** The access count when it was last moved to the young end of the recency order. */
  moved: number;
}

/** Which entries a change removes: entries with any of `tokens`, or any token of the `kinds`. */
export interface Invalidation {
  readonly tokens: ReadonlySet<string>;
  /** Kinds changed in a way that cannot be narrowed (wildcard hosts, kinds without a host). */
  readonly kinds: ReadonlySet<string>;
}

/** The kind part of a token (`VirtualService@a.b` → `VirtualService`). */
function tokenKind(token: string): string {
  const at = token.indexOf('@');
  const slash = token.indexOf('/');
  const end = at < 0 ? slash : slash < 0 ? at : Math.min(at, slash);
  return end < 0 ? token : token.slice(0, end);
}

/** A full cache evicts this fraction of its size at once (the oldest first). */
const EVICT_FRACTION = 16;

export class XdsCache {
  private readonly entries = new Map<string, Entry>();
  /** token → keys of the entries that recorded it. */
  private readonly byToken = new Map<string, Set<string>>();
  /** Dependency collectors of the builds under way (tokens, and entries reused), innermost last. */
  private readonly building: Set<string | Entry>[] = [];
  private hitCount = 0;
  private missCount = 0;
  private evictionCount = 0;
  private invalidatedCount = 0;
  private clearCount = 0;
  /** Increases with every invalidation; a build started under an older epoch is not stored. */
  private epochValue = 0;

  /** Lookups and stores so far (the recency clock). */
  private accesses = 0;
  private readonly recencySlack: number;

  constructor(private readonly maxEntries = 60_000) {
    this.recencySlack = Math.floor(maxEntries / EVICT_FRACTION);
  }

  /** The current invalidation epoch: a PushContext published after an invalidation carries it. */
  get epoch(): number {
    return this.epochValue;
  }

  /** Whether a build is under way (reads then record dependencies; memos that skip recording must not be used). */
  isBuilding(): boolean {
    return this.building.length > 0;
  }

  /** Records a dependency of the build under way (no-op outside a build). */
  record(token: string): void {
    this.building[this.building.length - 1]?.add(token);
  }

  /**
   * The cached value of `key`, or `build()`'s, cached with the tokens recorded while it ran.
   * `epoch`: the epoch of the snapshot building it; a value built from a snapshot that an
   * invalidation has since superseded is returned but not kept (it may already be stale).
   */
  getOrBuild<V>(key: string, build: () => V, epoch: number = this.epochValue): V {
    const hit = this.entries.get(key);
    if (hit !== undefined) {
      this.hitCount++;
      // Refresh recency (Map keeps insertion order) unless it was refreshed lately: thousands of
      // proxies reading the same entries in one push then cost lookups, not re-insertions. An
      // entry is never older than one eviction batch of accesses past its true recency.
      if (++this.accesses - hit.moved > this.recencySlack) {
        hit.moved = this.accesses;
        this.entries.delete(key);
        this.entries.set(key, hit);
      }
      this.building[this.building.length - 1]?.add(hit);
      return hit.value as V;
    }
    this.missCount++;
    const collected = new Set<string | Entry>();
    this.building.push(collected);
    let value: V;
    try {
      value = build();
    } finally {
      this.building.pop();
    }
    const deps: string[] = [];
    const reused: Entry[] = [];
    for (const d of collected) {
      if (typeof d === 'string') deps.push(d);
      else reused.push(d);
    }
    const entry: Entry = { key, value, deps, reused, reusedBy: undefined, epoch, moved: ++this.accesses };
    const stored = epoch === this.epochValue && this.store(entry);
    // Not kept: the enclosing build depends on what this one read.
    if (stored) this.building[this.building.length - 1]?.add(entry);
    else this.pass(collected);
    return value;
  }

  /**
   * For a snapshot that invalidations have since superseded: the cached value of `key` if it was
   * built from that snapshot or an older one. Having survived every invalidation since, it depends
   * on nothing that changed after it was built, so it holds for that snapshot too. (A value built
   * from a newer snapshot may not.) Undefined when there is none; nothing is recorded or reordered.
   */
  peekAsOf(key: string, epoch: number): { readonly value: unknown } | undefined {
    const hit = this.entries.get(key);
    return hit !== undefined && hit.epoch <= epoch ? { value: hit.value } : undefined;
  }

  /** Removes the entries a change touches; returns how many. Bumps the epoch. */
  invalidate(inv: Invalidation): number {
    this.epochValue++;
    const doomed = this.keysRecording(inv.tokens);
    if (inv.kinds.size > 0) {
      for (const [t, keys] of this.byToken) if (inv.kinds.has(tokenKind(t))) for (const k of keys) doomed.add(k);
    }
    let removed = 0;
    for (const k of doomed) removed += this.remove(k);
    this.invalidatedCount += removed;
    return removed;
  }

  /**
   * Removes the entries that recorded any of `tokens` because no proxy needs them any more (the
   * last proxy at a workload address disconnected), not because what they describe changed: like
   * an eviction, it leaves the epoch alone, and a value being built meanwhile is still correct.
   * Without it, every pod restart (a new address) would leave its inbound entries behind until
   * the LRU bound evicts them, ~2 KB per address up to PILOT_XDS_CACHE_SIZE entries.
   */
  forget(tokens: Iterable<string>): number {
    let removed = 0;
    for (const k of this.keysRecording(tokens)) removed += this.remove(k);
    return removed;
  }

  /** The keys of the entries that recorded any of `tokens`. */
  private keysRecording(tokens: Iterable<string>): Set<string> {
    const keys = new Set<string>();
    for (const t of tokens) for (const k of this.byToken.get(t) ?? []) keys.add(k);
    return keys;
  }

  /** Drops everything (a push that cannot be scoped). Bumps the epoch. */
  clear(): void {
    this.epochValue++;
    this.entries.clear();
    this.byToken.clear();
    this.clearCount++;
  }

  has(key: string): boolean {
    return this.entries.has(key);
  }

  /** Every cached key, value and dependencies (a reused entry as `#<key>`); benchmarks' memory breakdown, not the serving path. */
  *entriesForDebug(): IterableIterator<[string, unknown, readonly string[]]> {
    for (const [k, e] of this.entries) yield [k, e.value, [...e.deps, ...e.reused.map((r) => `#${r.key}`)]];
  }

  stats(): XdsCacheStats {
    return {
      size: this.entries.size,
      hits: this.hitCount,
      misses: this.missCount,
      evictions: this.evictionCount,
      invalidated: this.invalidatedCount,
      clears: this.clearCount,
    };
  }

  /** What an uncached build recorded becomes the enclosing build's. */
  private pass(collected: ReadonlySet<string | Entry>): void {
    const outer = this.building[this.building.length - 1];
    if (outer) for (const d of collected) outer.add(d);
  }

  /**
   * Keeps `entry` unless an entry it reused is gone already (evicted while it was being built): a
   * change to what that entry read would then not reach it.
   */
  private store(entry: Entry): boolean {
    const key = entry.key;
    for (const r of entry.reused) if (this.entries.get(r.key) !== r) return false;
    this.entries.set(key, entry);
    for (const t of entry.deps) {
      let keys = this.byToken.get(t);
      if (!keys) this.byToken.set(t, (keys = new Set()));
      keys.add(key);
    }
    for (const r of entry.reused) {
      if (r.reusedBy === undefined || r.reusedBy === key) r.reusedBy = key;
      else if (typeof r.reusedBy === 'string') r.reusedBy = new Set([r.reusedBy, key]);
      else r.reusedBy.add(key);
    }
    if (this.entries.size > this.maxEntries) this.evictOldest(Math.ceil(this.maxEntries / EVICT_FRACTION));
    return true;
  }

  /**
   * Evicts the `n` least recently used entries in one pass. One at a time, each eviction's
   * `keys().next()` walked every slot earlier evictions and recency moves had emptied: once
   * full (60,000), each new entry cost O(size) — 200,000 inserts took 12 s instead of 0.2 s.
   */
  private evictOldest(n: number): void {
    const doomed: string[] = [];
    for (const k of this.entries.keys()) {
      doomed.push(k);
      if (doomed.length >= n) break;
    }
    for (const k of doomed) this.evictionCount += this.remove(k);
  }

  /** Removes an entry and, with it, every entry that reused it; returns how many. */
  private remove(key: string): number {
    const e = this.entries.get(key);
    if (!e) return 0;
    this.entries.delete(key);
    for (const t of e.deps) {
      const keys = this.byToken.get(t);
      if (!keys) continue;
      keys.delete(key);
      if (keys.size === 0) this.byToken.delete(t);
    }
    for (const r of e.reused) {
      if (r.reusedBy === key) r.reusedBy = undefined;
      else if (typeof r.reusedBy === 'object') r.reusedBy.delete(key);
    }
    let removed = 1;
    const reusers = e.reusedBy;
    e.reusedBy = undefined;
    if (typeof reusers === 'string') removed += this.remove(reusers);
    else if (reusers) for (const k of reusers) removed += this.remove(k);
    return removed;
  }
}
