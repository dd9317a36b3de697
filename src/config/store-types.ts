import type { Config, ConfigError, ConfigKey } from './config.js';
import type { KindName } from './kinds.js';

/** A change a source hands to the store. */
export type ConfigChange = { readonly type: 'upsert'; readonly config: Config } | { readonly type: 'delete'; readonly key: ConfigKey };

/** What the store reports after applying a batch: only real changes (same resourceVersion = no event). */
export interface ConfigEvent {
  readonly type: 'add' | 'update' | 'delete';
  readonly key: ConfigKey;
  readonly config?: Config;
  readonly old?: Config;
}

/**
 * An immutable view of every object at one moment. Per-kind maps are shared between
 * snapshots when that kind did not change, so an incremental PushContext can tell what moved.
 */
export interface ConfigSnapshot {
  /** Objects of one kind, keyed `namespace/name`. */
  byKind<K extends KindName>(kind: K): ReadonlyMap<string, Config<K>>;
  get<K extends KindName>(kind: K, namespace: string, name: string): Config<K> | undefined;
  list<K extends KindName>(kind: K, namespace?: string): readonly Config<K>[];
}

/** Receives what a source found: batches of changes and the errors of rejected input. */
export interface ConfigSink {
  /**
   * `observedAt`: when the source saw the change happen (ms, `realClock` time), if earlier than now:
   * a file source settles a burst of writes before reading it, and that wait counts towards the
   * push's debounce rather than adding to it.
   */
  apply(changes: readonly ConfigChange[], observedAt?: number): void;
  reportErrors(source: string, errors: readonly ConfigError[]): void;
}

/** A place config comes from (directory, Kubernetes, memory). */
export interface ConfigSource {
  /** Loads everything once, hands it to the sink, then keeps watching. Resolves after the first load. */
  start(sink: ConfigSink): Promise<void>;
  stop(): Promise<void>;
}
