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
