/**
 * A config source held in memory, for tests and embedding: objects are added, updated and
 * deleted through code, and go through the same validation as files. An invalid update is
 * reported and the object's previous version stays, as with files.
 */
import { configKeyString, type Config, type ConfigError, type ConfigKey, type ConfigOrigin } from '../config.js';
import type { ConfigChange, ConfigSink, ConfigSource } from '../store-types.js';
import { fail, type Result } from '../../util/result.js';
import { readKey, validateObject, type RawObject, type ValidateOptions } from '../validation/index.js';

export interface MemorySourceOptions {
  /** Name under which errors are reported, and the origin `file` of objects (default `memory`). */
  readonly name?: string;
  readonly defaultNamespace?: string;
}

export class MemorySource implements ConfigSource {
  readonly #name: string;
  readonly #validate: ValidateOptions;
  readonly #objects = new Map<string, Config>();
  /** Errors of the last rejected write per object key (or per anonymous write). */
  readonly #errors = new Map<string, readonly ConfigError[]>();
  #anonymous = 0;
  #sink: ConfigSink | undefined;

  constructor(opts: MemorySourceOptions = {}) {
    this.#name = opts.name ?? 'memory';
    this.#validate = opts.defaultNamespace !== undefined ? { defaultNamespace: opts.defaultNamespace } : {};
  }

  /** Hands over the objects at once: nothing to load (the promise is ConfigSource's, for sources that do). */
  start(sink: ConfigSink): Promise<void> {
    this.#sink = sink;
    if (this.#objects.size > 0) sink.apply([...this.#objects.values()].map((config) => ({ type: 'upsert', config })));
    this.#report();
    return Promise.resolve();
  }

  stop(): Promise<void> {
    this.#sink = undefined;
    return Promise.resolve();
  }

  /** Adds a new object; fails if it exists already. */
  add(obj: RawObject, origin?: ConfigOrigin): Result<Config, ConfigError> {
    return this.#write(obj, origin, 'add');
  }

  /** Replaces an existing object; fails if there is none. */
  update(obj: RawObject, origin?: ConfigOrigin): Result<Config, ConfigError> {
    return this.#write(obj, origin, 'update');
  }

  /** Adds or replaces. */
  upsert(obj: RawObject, origin?: ConfigOrigin): Result<Config, ConfigError> {
    return this.#write(obj, origin, 'upsert');
  }

  /** Deletes an object; returns whether it existed. Also forgets that object's errors. */
  delete(key: ConfigKey): boolean {
    const ks = configKeyString(key);
    const existed = this.#objects.delete(ks);
    const hadErrors = this.#errors.delete(ks);
    if (existed) this.#emit([{ type: 'delete', key }]);
    if (hadErrors) this.#report();
    return existed;
  }

  list(): readonly Config[] {
    return [...this.#objects.values()];
  }

  #write(obj: RawObject, origin: ConfigOrigin | undefined, mode: 'add' | 'update' | 'upsert'): Result<Config, ConfigError> {
    const at = origin ?? { file: this.#name };
    const r = validateObject(obj, at, this.#validate);
    const key = r.ok ? r.value.meta : readKey(obj, this.#validate);
    const ks = key ? configKeyString(key) : `#${++this.#anonymous}`;
    let result = r;
    if (r.ok) {
      const exists = this.#objects.has(ks);
      if (mode === 'add' && exists) result = fail({ ...objectOf(r.value, at), message: 'already exists' });
      if (mode === 'update' && !exists) result = fail({ ...objectOf(r.value, at), message: 'not found' });
    }
    if (!result.ok) {
      this.#errors.set(ks, result.errors);
      this.#report();
      return result;
    }
    const hadErrors = this.#errors.delete(ks);
    this.#objects.set(ks, result.value);
    this.#emit([{ type: 'upsert', config: result.value }]);
    if (hadErrors) this.#report();
    return result;
  }

  #emit(changes: readonly ConfigChange[]): void {
    this.#sink?.apply(changes);
  }

  #report(): void {
    this.#sink?.reportErrors(this.#name, [...this.#errors.values()].flat());
  }
}

function objectOf(c: Config, origin: ConfigOrigin): Omit<ConfigError, 'message'> {
  return { origin, kind: c.meta.kind, namespace: c.meta.namespace, name: c.meta.name };
}
