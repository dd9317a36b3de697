/**
 * What a Delta stream holds (name → version) as two disjoint maps: `head`, the versions of a list
 * shared by a whole view (the outbound clusters every sidecar of a namespace gets), and `tail`,
 * the proxy's own (its inbound clusters). Streams in step share one head map, so planning the next
 * push of that list is one diff for all of them, and what each holds costs only its tail.
 */
export class LayeredVersions implements ReadonlyMap<string, string> {
  constructor(
    readonly head: ReadonlyMap<string, string>,
    readonly tail: ReadonlyMap<string, string>,
  ) {}

  get(name: string): string | undefined {
    return this.tail.get(name) ?? this.head.get(name);
  }

  has(name: string): boolean {
    return this.tail.has(name) || this.head.has(name);
  }

  get size(): number {
    return this.head.size + this.tail.size;
  }

  *entries(): MapIterator<[string, string]> {
    yield* this.head.entries();
    yield* this.tail.entries();
  }

  *keys(): MapIterator<string> {
    yield* this.head.keys();
    yield* this.tail.keys();
  }

  *values(): MapIterator<string> {
    yield* this.head.values();
    yield* this.tail.values();
  }

  [Symbol.iterator](): MapIterator<[string, string]> {
    return this.entries();
  }

  forEach(fn: (value: string, key: string, map: ReadonlyMap<string, string>) => void): void {
    for (const [k, v] of this.entries()) fn(v, k, this);
  }
}

/**
 * What a stream holds after a partial regeneration (`only`: an EDS-only push, or an answer to newly
 * subscribed names): the map it held before with a few names replaced or dropped. Copying a
 * thousand-entry map per stream for a one-name change cost more than the change itself (and made
 * garbage the size of every stream's state), so the few changes ride over the unchanged base.
 * Invariants: `changes` and `deletes` are disjoint, and `deletes` are names the base holds.
 */
export class OverlayVersions implements ReadonlyMap<string, string> {
  readonly size: number;

  private constructor(
    readonly base: ReadonlyMap<string, string>,
    readonly changes: ReadonlyMap<string, string>,
    readonly deletes: ReadonlySet<string>,
  ) {
    let added = 0;
    for (const name of changes.keys()) if (!base.has(name)) added++;
    this.size = base.size - deletes.size + added;
  }

  /**
   * `held` with `changes` set and `deletes` dropped. Overlays do not stack: one over an overlay
   * merges into a single overlay over the first base, and one that outgrows a small fraction of
   * its base is flattened into a plain map, so lookups stay two probes and memory stays bounded.
   */
  static over(
    held: ReadonlyMap<string, string>,
    changes: ReadonlyMap<string, string>,
    deletes: Iterable<string>,
  ): ReadonlyMap<string, string> {
    let base = held;
    const c = new Map<string, string>();
    const d = new Set<string>();
    if (held instanceof OverlayVersions) {
      base = held.base;
      for (const [name, version] of held.changes) c.set(name, version);
      for (const name of held.deletes) d.add(name);
    }
    for (const name of deletes) {
      c.delete(name);
      if (base.has(name)) d.add(name);
    }
    for (const [name, version] of changes) {
      d.delete(name);
      c.set(name, version);
    }
    if (c.size + d.size > Math.max(OVERLAY_MIN, base.size / OVERLAY_FRACTION)) {
      const flat = new Map<string, string>();
      for (const [name, version] of base) if (!d.has(name) && !c.has(name)) flat.set(name, version);
      for (const [name, version] of c) flat.set(name, version);
      return flat;
    }
    return new OverlayVersions(base, c, d);
  }

  get(name: string): string | undefined {
    return this.changes.get(name) ?? (this.deletes.has(name) ? undefined : this.base.get(name));
  }

  has(name: string): boolean {
    return this.changes.has(name) || (!this.deletes.has(name) && this.base.has(name));
  }

  *entries(): MapIterator<[string, string]> {
    for (const entry of this.base) if (!this.deletes.has(entry[0]) && !this.changes.has(entry[0])) yield entry;
    yield* this.changes.entries();
  }

  *keys(): MapIterator<string> {
    for (const [name] of this.entries()) yield name;
  }

  *values(): MapIterator<string> {
    for (const [, version] of this.entries()) yield version;
  }

  [Symbol.iterator](): MapIterator<[string, string]> {
    return this.entries();
  }

  forEach(fn: (value: string, key: string, map: ReadonlyMap<string, string>) => void): void {
    for (const [k, v] of this.entries()) fn(v, k, this);
  }
}

/** An overlay is flattened once its changes exceed this many names and 1/OVERLAY_FRACTION of its base. */
const OVERLAY_MIN = 64;
const OVERLAY_FRACTION = 8;
