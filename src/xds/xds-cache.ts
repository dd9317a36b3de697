/**
 * Marshal-once cache for generated resources: the first proxy that needs a resource for a given
 * view builds and encodes it, every other proxy with the same view reuses the bytes. Bounded
 * (PILOT_XDS_CACHE_SIZE, istiod default 60000) with least-recently-used eviction.
 */
export class XdsCache<V> {
  private readonly entries = new Map<string, V>();
  private hitCount = 0;
  private missCount = 0;
  private evictionCount = 0;

  constructor(private readonly maxEntries = 60_000) {}

  getOrBuild(key: string, build: () => V): V {
    const hit = this.entries.get(key);
    if (hit !== undefined) {
      this.hitCount++;
      // refresh recency: Map keeps insertion order
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit;
    }
    this.missCount++;
    const value = build();
    this.entries.set(key, value);
    if (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) {
        this.entries.delete(oldest.value);
        this.evictionCount++;
      }
    }
    return value;
  }

  clear(): void {
    this.entries.clear();
  }

  stats(): { size: number; hits: number; misses: number; evictions: number } {
    return { size: this.entries.size, hits: this.hitCount, misses: this.missCount, evictions: this.evictionCount };
  }
}
