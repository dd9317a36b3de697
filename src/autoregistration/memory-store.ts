/**
 * File mode's WorkloadEntry store: auto-registered entries live in an in-memory config source
 * beside the config directory (there is no API server to write them to). Each write goes through
 * the same validation as files and reaches the ConfigStore as any source's change would; the
 * entries are gone when meshpilot stops, as they would be once their proxies' grace ran out.
 */
import { formatConfigError, type MemorySource } from '../config/index.js';
import { MeshError } from '../util/errors.js';
import type { EntryObject, WorkloadEntryStore } from './entry-store.js';

/** The document a WorkloadEntry is written as (API server and memory source alike). */
export function entryDocument(e: EntryObject): Record<string, unknown> {
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'WorkloadEntry',
    metadata: { name: e.name, namespace: e.namespace, labels: e.labels, annotations: e.annotations },
    spec: e.spec,
    ...(e.conditions.length > 0 ? { status: { conditions: e.conditions } } : {}),
  };
}

export class MemoryWorkloadEntryStore implements WorkloadEntryStore {
  readonly kind = 'memory';
  readonly #source: MemorySource;
  readonly #entries = new Map<string, EntryObject>();

  constructor(source: MemorySource) {
    this.#source = source;
  }

  get(namespace: string, name: string): Promise<EntryObject | undefined> {
    return Promise.resolve(this.#entries.get(`${namespace}/${name}`));
  }

  list(): Promise<readonly EntryObject[]> {
    return Promise.resolve([...this.#entries.values()]);
  }

  create(entry: EntryObject): Promise<boolean> {
    if (this.#entries.has(`${entry.namespace}/${entry.name}`)) return Promise.resolve(false);
    this.#write(entry);
    return Promise.resolve(true);
  }

  update(namespace: string, name: string, change: (current: EntryObject) => EntryObject | undefined): Promise<boolean> {
    const current = this.#entries.get(`${namespace}/${name}`);
    const next = current ? change(current) : undefined;
    if (!next) return Promise.resolve(false);
    this.#write(next);
    return Promise.resolve(true);
  }

  remove(namespace: string, name: string, still: (current: EntryObject) => boolean): Promise<boolean> {
    const k = `${namespace}/${name}`;
    const current = this.#entries.get(k);
    if (!current || !still(current)) return Promise.resolve(false);
    this.#entries.delete(k);
    this.#source.delete({ kind: 'WorkloadEntry', namespace, name });
    return Promise.resolve(true);
  }

  #write(e: EntryObject): void {
    const r = this.#source.upsert(entryDocument(e));
    // A template the validator refuses (a bad label in the group) is the group's fault: say so.
    if (!r.ok)
      throw new MeshError('INVALID_ARGUMENT', `WorkloadEntry ${e.namespace}/${e.name}: ${r.errors.map(formatConfigError).join('; ')}`);
    this.#entries.set(`${e.namespace}/${e.name}`, e);
  }
}
