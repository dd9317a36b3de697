/**
 * The config store: sources write into it (ConfigSink), consumers read immutable snapshots and
 * hear about real changes. Copy-on-write per kind: a kind's map is replaced only when that
 * kind changes, so consecutive snapshots share the maps of unchanged kinds and an incremental
 * PushContext can compare them by identity.
 */
import { configKeyString, formatConfigError, keyOf, type Config, type ConfigError, type ConfigKey } from './config.js';
import { boundedErrors, ERROR_BOUNDS } from './error-bounds.js';
import { KINDS, KIND_NAMES, type KindName } from './kinds.js';
import type { ConfigChange, ConfigEvent, ConfigSink, ConfigSnapshot } from './store-types.js';
import { silentLogger, type Logger } from '../util/log.js';
import { errorMessage } from '../util/errors.js';

/** `observedAt`: when the source saw the batch happen (see ConfigSink.apply); absent means now. */
export type ConfigListener = (events: readonly ConfigEvent[], snapshot: ConfigSnapshot, observedAt?: number) => void;

export interface ConfigStoreOptions {
  readonly logger?: Logger;
}

type KindMap = ReadonlyMap<string, Config>;
type KindMaps = ReadonlyMap<KindName, KindMap>;

const EMPTY: KindMap = new Map();
const nsName = (namespace: string, name: string): string => `${namespace}/${name}`;

// Sorted lists are computed once per kind map (and namespace); maps are immutable and shared
// between snapshots.
const sortedCache = new WeakMap<KindMap, readonly Config[]>();
const namespaceCache = new WeakMap<KindMap, Map<string, readonly Config[]>>();

/**
 * Each kind map the store made, with the map it was copied from and the ids that differ. Weak both
 * ways: the lineage lets consumers find what changed between two maps without comparing every
 * object, but it never keeps an old map alive.
 */
const lineage = new WeakMap<KindMap, { readonly base: WeakRef<KindMap>; readonly ids: ReadonlySet<string> }>();
/** Longest chain of maps walked back before giving up (a full comparison is then cheaper to reason about). */
const MAX_LINEAGE_STEPS = 64;

/**
 * Ids (`namespace/name`) that may differ between `before` and `after` (a superset: an id changed
 * and changed back is included), or undefined when the store cannot tell (unrelated maps, or an
 * intermediate map already collected). Callers confirm each id by identity.
 */
export function changedIdsBetween(
  before: ReadonlyMap<string, Config>,
  after: ReadonlyMap<string, Config>,
): ReadonlySet<string> | undefined {
  if (before === after) return new Set();
  const ids = new Set<string>();
  let at: KindMap | undefined = after;
  for (let step = 0; at && at !== before && step < MAX_LINEAGE_STEPS; step++) {
    const link = lineage.get(at);
    if (!link) return undefined;
    for (const id of link.ids) ids.add(id);
    at = link.base.deref();
  }
  return at === before ? ids : undefined;
}

const sortByKey = (entries: [string, Config][]): readonly Config[] =>
  Object.freeze(entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, c]) => c));

function sorted(map: KindMap): readonly Config[] {
  let list = sortedCache.get(map);
  if (!list) {
    list = sortByKey([...map.entries()]);
    sortedCache.set(map, list);
  }
  return list;
}

/**
 * One namespace's objects in key order. Sorting just them, not the whole kind: after a change of
 * one WorkloadEntry among 10,000, the registry update asks for one namespace of the new map.
 */
function sortedInNamespace(map: KindMap, namespace: string): readonly Config[] {
  let byNs = namespaceCache.get(map);
  if (!byNs) namespaceCache.set(map, (byNs = new Map()));
  let list = byNs.get(namespace);
  if (!list) {
    const all = sortedCache.get(map);
    list = all
      ? Object.freeze(all.filter((c) => c.meta.namespace === namespace))
      : (patchedFromBase(map, namespace) ?? sortByKey([...map.entries()].filter(([, c]) => c.meta.namespace === namespace)));
    byNs.set(namespace, list);
  }
  return list;
}

/** The namespace's list of the map this one was copied from, with the copy's changes applied; undefined if not at hand. */
function patchedFromBase(map: KindMap, namespace: string): readonly Config[] | undefined {
  const link = lineage.get(map);
  const base = link?.base.deref();
  // The base's namespace list, or one filtered (not sorted) from its whole sorted list.
  const old =
    base && (namespaceCache.get(base)?.get(namespace) ?? (sortedCache.has(base) ? sortedInNamespace(base, namespace) : undefined));
  if (!link || !old) return undefined;
  const prefix = `${namespace}/`;
  const changed = [...link.ids].filter((id) => id.startsWith(prefix));
  if (changed.length === 0) return old;
  const gone = new Set(changed);
  const entries: [string, Config][] = old
    .filter((c) => !gone.has(nsName(c.meta.namespace, c.meta.name)))
    .map((c) => [nsName(c.meta.namespace, c.meta.name), c]);
  for (const id of changed) {
    const c = map.get(id);
    if (c) entries.push([id, c]);
  }
  return sortByKey(entries);
}

/** One immutable view; `list` returns objects sorted by namespace/name. */
class Snapshot implements ConfigSnapshot {
  constructor(
    private readonly kinds: KindMaps,
    /** Increases with every applied change; equal generations mean equal content. */
    readonly generation: number,
  ) {}

  byKind<K extends KindName>(kind: K): ReadonlyMap<string, Config<K>> {
    return (this.kinds.get(kind) ?? EMPTY) as ReadonlyMap<string, Config<K>>;
  }

  get<K extends KindName>(kind: K, namespace: string, name: string): Config<K> | undefined {
    return this.byKind(kind).get(nsName(namespace, name));
  }

  list<K extends KindName>(kind: K, namespace?: string): readonly Config<K>[] {
    const map = this.kinds.get(kind) ?? EMPTY;
    return (namespace === undefined ? sorted(map) : sortedInNamespace(map, namespace)) as readonly Config<K>[];
  }
}

export type ConfigStoreSnapshot = Snapshot;

export class ConfigStore implements ConfigSink {
  readonly #logger: Logger;
  #current: Snapshot = new Snapshot(new Map(KIND_NAMES.map((k) => [k, EMPTY])), 0);
  readonly #listeners = new Set<ConfigListener>();
  readonly #errors = new Map<string, readonly ConfigError[]>();

  constructor(opts: ConfigStoreOptions = {}) {
    this.#logger = opts.logger ?? silentLogger;
  }

  /** The current snapshot; O(1), and the same object until something changes. */
  snapshot(): ConfigStoreSnapshot {
    return this.#current;
  }

  /**
   * Applies a batch and returns the events it caused: the net effect per object, so an upsert
   * with an unchanged resourceVersion, or an add and delete of the same object, raises none.
   */
  apply(changes: readonly ConfigChange[], observedAt?: number): ConfigEvent[] {
    const base = this.#current;
    const next = new Map<KindName, Map<string, Config>>(); // copies of the kinds this batch touches
    const before = new Map<string, Config | undefined>(); // first-touch order = event order

    for (const change of changes) {
      const k: ConfigKey = change.type === 'upsert' ? change.config.meta : change.key;
      if (!(k.kind in KINDS)) {
        this.#logger.warn('ignoring change of an unknown kind', { kind: k.kind, namespace: k.namespace, name: k.name });
        continue;
      }
      const id = nsName(k.namespace, k.name);
      const ks = configKeyString(k);
      let map = next.get(k.kind);
      if (!map) {
        map = new Map(base.byKind(k.kind));
        next.set(k.kind, map);
      }
      if (!before.has(ks)) before.set(ks, map.get(id));
      if (change.type === 'upsert') {
        const old = map.get(id);
        // Keep the stored object when only its origin moved: identity stays stable for consumers.
        if (!old || old.meta.resourceVersion !== change.config.meta.resourceVersion) map.set(id, change.config);
      } else {
        map.delete(id);
      }
    }

    const events: ConfigEvent[] = [];
    const changedKinds = new Set<KindName>();
    for (const [ks, old] of before) {
      const kind = ks.slice(0, ks.indexOf('/')) as KindName;
      const id = ks.slice(kind.length + 1);
      const now = next.get(kind)?.get(id);
      if (now === old) continue;
      changedKinds.add(kind);
      if (!old && now) events.push({ type: 'add', key: keyOf(now), config: now });
      else if (old && !now) events.push({ type: 'delete', key: keyOf(old), old });
      else if (old && now) events.push({ type: 'update', key: keyOf(now), config: now, old });
    }
    if (events.length === 0) return events;

    const kinds = new Map<KindName, KindMap>();
    const changedIds = new Map<KindName, Set<string>>();
    for (const ks of before.keys()) {
      const kind = ks.slice(0, ks.indexOf('/')) as KindName;
      let ids = changedIds.get(kind);
      if (!ids) changedIds.set(kind, (ids = new Set()));
      ids.add(ks.slice(kind.length + 1));
    }
    for (const kind of KIND_NAMES) {
      const copy = next.get(kind);
      if (copy && changedKinds.has(kind)) {
        kinds.set(kind, copy);
        lineage.set(copy, { base: new WeakRef(base.byKind(kind)), ids: changedIds.get(kind) ?? new Set() });
      } else {
        kinds.set(kind, base.byKind(kind));
      }
    }
    this.#current = new Snapshot(kinds, base.generation + 1);
    this.#notify(events, this.#current, observedAt);
    return events;
  }

  /**
   * Replaces the error set of `source`; logs only errors that are new, so re-reports do not spam.
   * One set per source, replaced (never appended to) and bounded (ERROR_BOUNDS): what a source's
   * rejected input costs here does not grow with reloads, nor with the size of the input.
   */
  reportErrors(source: string, reported: readonly ConfigError[]): void {
    const errors = boundedErrors(reported, ERROR_BOUNDS.maxErrorsPerSource);
    const previous = new Set((this.#errors.get(source) ?? []).map(formatConfigError));
    const current = new Set<string>();
    for (const e of errors) {
      const text = formatConfigError(e);
      current.add(text);
      if (!previous.has(text)) this.#logger.warn(`invalid config: ${text}`, { source });
    }
    const resolved = [...previous].filter((t) => !current.has(t)).length;
    if (resolved > 0) this.#logger.info('config errors resolved', { source, resolved, remaining: reported.length });
    if (errors.length === 0) this.#errors.delete(source);
    else this.#errors.set(source, Object.freeze(errors));
  }

  /** The latest error set of every source that has errors (for debug endpoints). */
  errors(): ReadonlyMap<string, readonly ConfigError[]> {
    return new Map(this.#errors);
  }

  /** Calls `listener` after every batch that changed something; returns the unsubscribe. */
  onChange(listener: ConfigListener): () => void {
    // Wrapped so the same function can subscribe twice and unsubscribe each independently.
    const entry: ConfigListener = (events, snap, observedAt) => listener(events, snap, observedAt);
    this.#listeners.add(entry);
    return () => {
      this.#listeners.delete(entry);
    };
  }

  #notify(events: readonly ConfigEvent[], snap: Snapshot, observedAt: number | undefined): void {
    for (const listener of [...this.#listeners]) {
      try {
        listener(events, snap, observedAt);
      } catch (err) {
        // One broken consumer must not stop the others, nor the source that applied the batch.
        this.#logger.error('config listener failed', { error: errorMessage(err), events: events.length });
      }
    }
  }
}
