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

/** How a stream's name set is made: from a whole list, or from the set it watched and a change. */
export interface NameSets {
  of(names: readonly string[]): ReadonlySet<string>;
  /** `base` without `dropped`, then `added` (names not in base), in that order. */
  changed(base: ReadonlySet<string>, added: readonly string[], dropped: readonly string[]): ReadonlySet<string>;
}

/** A set derived by a change, with the change (checked on a hit: the memo key is not injective). */
interface Derived {
  readonly set: WeakRef<ReadonlySet<string>>;
  readonly added: readonly string[];
  readonly dropped: readonly string[];
}

function applyChange(base: ReadonlySet<string>, added: readonly string[], dropped: readonly string[]): string[] {
  const gone = new Set(dropped);
  const list = gone.size === 0 ? [...base] : [...base].filter((n) => !gone.has(n));
  for (const n of added) list.push(n);
  return list;
}

export class NameSetPool implements NameSets {
  readonly #sets = new Map<string, WeakRef<ReadonlySet<string>>>();
  /**
   * Frozen lists (decoded requests share them by their bytes) → their set: a stream repeating its
   * list (every SotW ACK) finds its set by identity, not by joining the list.
   */
  readonly #setOfList = new WeakMap<readonly string[], ReadonlySet<string>>();
  /** Sets derived from a pooled set by a change, weak on the base (gone with it). */
  readonly #derived = new WeakMap<ReadonlySet<string>, Map<string, Derived>>();
  readonly #registry = new FinalizationRegistry<string>((key) => {
    if (this.#sets.get(key)?.deref() === undefined) this.#sets.delete(key);
  });

  /** The set of `names`: a shared one when an identical list (same names, same order) is held. */
  of(names: readonly string[]): ReadonlySet<string> {
    const known = this.#setOfList.get(names);
    if (known) return known;
    const set = this.#of(names);
    if (Object.isFrozen(names)) this.#setOfList.set(names, set);
    return set;
  }

  #of(names: readonly string[]): ReadonlySet<string> {
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

  /**
   * A subscription change: streams that watched one set and made the same change get one set,
   * found by the change (a few names) instead of by joining the whole list again.
   */
  changed(base: ReadonlySet<string>, added: readonly string[], dropped: readonly string[]): ReadonlySet<string> {
    if (added.length === 0 && dropped.length === 0) return base;
    let byChange = this.#derived.get(base);
    if (!byChange) this.#derived.set(base, (byChange = new Map()));
    const key = `${added.join('\n')}\0${dropped.join('\n')}`;
    const known = byChange.get(key);
    const held = known?.set.deref();
    if (held && sameList(known!.added, added) && sameList(known!.dropped, dropped)) return held;
    const set = this.of(applyChange(base, added, dropped));
    if (byChange.size >= MAX_CHANGES_PER_SET) byChange.delete(byChange.keys().next().value as string);
    byChange.set(key, { set: new WeakRef(set), added, dropped });
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

const MAX_CHANGES_PER_SET = 16;

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((n, i) => n === b[i]);
}

/** A fresh, unshared set (the default where no pool is given). */
export const unsharedNameSet = (names: readonly string[]): ReadonlySet<string> => new Set(names);

/** Fresh, unshared sets. */
export const unsharedNameSets: NameSets = {
  of: unsharedNameSet,
  changed: (base, added, dropped) => (added.length === 0 && dropped.length === 0 ? base : new Set(applyChange(base, added, dropped))),
};
