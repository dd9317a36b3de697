/**
 * Subscription name sets shared between streams. The sidecars of one namespace subscribe to the
 * same few hundred cluster names; each request decodes fresh copies, and at 2000 sidecars those
 * copies were ~37 MiB of identical strings. An identical list yields the one Set already held.
 * Entries are weak: a set lives only while some stream's state holds it, so names a client made
 * up (or lists nobody watches any more) do not accumulate.
 */
/** Pooled sets by identity: a stable number for cache keys of values derived from a whole set. */
const pooledIds = new WeakMap<ReadonlySet<string>, number>();
let nextPooledId = 0;

/**
 * The id of a pooled (shared, never mutated) name set, or undefined for any other set. Streams
 * watching the same list hold the same set, so a value built from the whole list (a proxy's EDS
 * response) can be cached under this id and shared by all of them.
 */
export function pooledNameSetId(set: ReadonlySet<string>): number | undefined {
  return pooledIds.get(set);
}

export class NameSetPool {
  readonly #sets = new Map<string, WeakRef<ReadonlySet<string>>>();
  readonly #registry = new FinalizationRegistry<string>((key) => {
    if (this.#sets.get(key)?.deref() === undefined) this.#sets.delete(key);
  });

  /** The set of `names`: a shared one when an identical list (same names, same order) is held. */
  of(names: readonly string[]): ReadonlySet<string> {
    const key = names.join('\n');
    const held = this.#sets.get(key)?.deref();
    // The key is not injective (a name may contain a newline): a hit is checked name by name.
    if (held && sameInOrder(held, names)) return held;
    const set: ReadonlySet<string> = new Set(names);
    if (held) return set;
    this.#sets.set(key, new WeakRef(set));
    this.#registry.register(set, key);
    pooledIds.set(set, ++nextPooledId);
    return set;
  }

  /** Distinct lists held (debug and tests). */
  get size(): number {
    return this.#sets.size;
  }
}

function sameInOrder(set: ReadonlySet<string>, names: readonly string[]): boolean {
  if (set.size !== names.length) return false;
  let i = 0;
  for (const n of set) if (n !== names[i++]) return false;
  return true;
}

/** A fresh, unshared set (the default where no pool is given). */
export const unsharedNameSet = (names: readonly string[]): ReadonlySet<string> => new Set(names);
