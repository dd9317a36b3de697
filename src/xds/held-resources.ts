import { joinedParts, type XdsResource } from './resource.js';

/** Name → resource of a shared list, built once per list (cache lists are shared by every proxy of a view). */
const indexMemo = new WeakMap<readonly XdsResource[], ReadonlyMap<string, XdsResource>>();

/** Name → resource of a list, built once per list and shared. */
export function indexOf(list: readonly XdsResource[]): ReadonlyMap<string, XdsResource> {
  let index = indexMemo.get(list);
  if (!index) {
    index = new Map(list.map((r) => [r.name, r]));
    indexMemo.set(list, index);
  }
  return index;
}

const NO_PATCH: ReadonlyMap<string, XdsResource> = new Map();

/** Names that differ between two shared lists (held base → new list), computed once per pair. */
const changedMemo = new WeakMap<readonly XdsResource[], WeakMap<readonly XdsResource[], ReadonlySet<string>>>();

function changedBetween(base: readonly XdsResource[], list: readonly XdsResource[]): ReadonlySet<string> {
  let byList = changedMemo.get(base);
  if (!byList) changedMemo.set(base, (byList = new WeakMap()));
  let names = byList.get(list);
  if (!names) {
    const held = indexOf(base);
    byList.set(list, (names = new Set(list.filter((r) => held.get(r.name)?.version !== r.version).map((r) => r.name))));
  }
  return names;
}

/**
 * What a SotW stream's proxy holds of one type: the list of its last full response (shared with
 * the cache, never copied per stream) plus the resources EDS-only pushes replaced since. An
 * endpoint change then costs each proxy a lookup of its few hosts, not a copy of thousands.
 */
export class HeldResources {
  private constructor(
    private readonly base: readonly XdsResource[],
    private readonly patch: ReadonlyMap<string, XdsResource>,
  ) {}

  static of(list: readonly XdsResource[]): HeldResources {
    return new HeldResources(list, NO_PATCH);
  }

  /** Version of the named resource the proxy holds, if any. */
  version(name: string): string | undefined {
    return (this.patch.get(name) ?? indexOf(this.base).get(name))?.version;
  }

  /** After a partial (EDS-only) response: these replace or add to what is held. */
  with(sent: readonly XdsResource[]): HeldResources {
    if (sent.length === 0) return this;
    const patch = new Map(this.patch);
    for (const r of sent) patch.set(r.name, r);
    return new HeldResources(this.base, patch);
  }

  /** Whether `list` is exactly what is held (any order): then a push of it changes nothing. */
  sameAs(list: readonly XdsResource[]): boolean {
    if (this.patch.size === 0) {
      if (list === this.base) return true;
      if (list.length !== this.base.length) return false;
      if (list.every((r, i) => r.name === this.base[i]?.name && r.version === this.base[i]?.version)) return true;
    }
    const base = indexOf(this.base);
    let size = base.size;
    for (const name of this.patch.keys()) if (!base.has(name)) size++;
    return size === list.length && list.every((r) => this.version(r.name) === r.version);
  }

  /**
   * Names in `list` whose version differs from what is held (new ones included). Proxies holding
   * the same shared list and getting the same new one share the answer.
   */
  changedIn(list: readonly XdsResource[]): ReadonlySet<string> {
    if (this.patch.size > 0) return new Set(list.filter((r) => this.version(r.name) !== r.version).map((r) => r.name));
    // Lists joined from a shared head and a proxy's own tail (its inbound clusters): when the tail
    // is the same, only the heads differ, and that difference is shared by every such proxy. (A
    // name that moved from tail to head counts as changed: at worst one extra resend.)
    const was = joinedParts(this.base);
    const now = joinedParts(list);
    if (was && now && was.tail === now.tail) return changedBetween(was.head, now.head);
    return changedBetween(this.base, list);
  }
}
