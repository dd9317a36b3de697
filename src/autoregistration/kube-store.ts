/**
 * Cluster mode's WorkloadEntry store: the API server, as istiod writes (create; update with the
 * read resourceVersion, so a concurrent writer makes it read again; status through the status
 * subresource; delete with a resourceVersion precondition). Reads go to the server, not to the
 * config source's cache, so a decision is made on the version it is written over.
 */
import { kubeClient, statusCodeOf, type KubeClient, type KubeConfig } from '../kube/index.js';
import type { IstioCondition } from '../config/index.js';
import type { JsonObject } from '@bufbuild/protobuf';
import type { EntryObject, WorkloadEntryStore } from './entry-store.js';
import { entryDocument } from './memory-store.js';

const GROUP = 'networking.istio.io';
const VERSION = 'v1';
const COLLECTION = `/apis/${GROUP}/${VERSION}/workloadentries`;
const entriesOf = (namespace: string): string => `/apis/${GROUP}/${VERSION}/namespaces/${encodeURIComponent(namespace)}/workloadentries`;
const entryPath = (namespace: string, name: string): string => `${entriesOf(namespace)}/${encodeURIComponent(name)}`;
/** Reads again after this many write conflicts in a row before giving up (the caller retries later). */
const MAX_CONFLICTS = 5;

interface KubeEntry {
  readonly metadata?: {
    readonly name?: string;
    readonly namespace?: string;
    readonly resourceVersion?: string;
    readonly labels?: Record<string, string>;
    readonly annotations?: Record<string, string>;
    readonly ownerReferences?: readonly { readonly kind?: string; readonly name?: string; readonly uid?: string }[];
  };
  readonly spec?: JsonObject;
  readonly status?: { readonly conditions?: readonly IstioCondition[] };
}

function fromKube(o: KubeEntry): EntryObject {
  const owner = o.metadata?.ownerReferences?.find((r) => r.kind === 'WorkloadGroup');
  return {
    namespace: o.metadata?.namespace ?? '',
    name: o.metadata?.name ?? '',
    labels: o.metadata?.labels ?? {},
    annotations: o.metadata?.annotations ?? {},
    spec: o.spec ?? {},
    conditions: o.status?.conditions ?? [],
    ...(owner?.name ? { owner: { name: owner.name, ...(owner.uid ? { uid: owner.uid } : {}) } } : {}),
  };
}

/** The object to write: the entry over what the server holds (its other metadata, its resourceVersion). */
function toKube(e: EntryObject, base: KubeEntry | undefined): Record<string, unknown> {
  const doc = entryDocument(e);
  const meta = { ...base?.metadata, ...(doc.metadata as Record<string, unknown>) };
  if (!base && e.owner?.uid)
    Object.assign(meta, {
      ownerReferences: [
        { apiVersion: `${GROUP}/${VERSION}`, kind: 'WorkloadGroup', name: e.owner.name, uid: e.owner.uid, controller: true },
      ],
    });
  return { ...doc, metadata: meta, status: { ...base?.status, conditions: e.conditions } };
}

const conditionsJson = (c: readonly IstioCondition[]): string => JSON.stringify(c);

export class KubeWorkloadEntryStore implements WorkloadEntryStore {
  readonly kind = 'kube';
  readonly #api: KubeClient;
  readonly #fieldManager: string;

  constructor(kubeConfig: KubeConfig, fieldManager = 'meshpilot') {
    this.#api = kubeClient(kubeConfig);
    this.#fieldManager = fieldManager;
  }

  #read(namespace: string, name: string): Promise<KubeEntry | undefined> {
    return this.#api.getOrUndefined<KubeEntry>(entryPath(namespace, name));
  }

  async get(namespace: string, name: string): Promise<EntryObject | undefined> {
    const o = await this.#read(namespace, name);
    return o ? fromKube(o) : undefined;
  }

  async list(): Promise<readonly EntryObject[]> {
    return (await this.#api.listAll<KubeEntry>(COLLECTION)).map(fromKube);
  }

  async create(entry: EntryObject): Promise<boolean> {
    const body = toKube(entry, undefined);
    let created: KubeEntry;
    try {
      created = await this.#api.create<KubeEntry>(entriesOf(entry.namespace), body, { fieldManager: this.#fieldManager });
    } catch (err) {
      if (statusCodeOf(err) === 409) return false;
      throw err;
    }
    // Status is ignored on create (the subresource is separate): write it apart when there is any.
    if (entry.conditions.length > 0) await this.#writeStatus(entry, created);
    return true;
  }

  async update(namespace: string, name: string, change: (current: EntryObject) => EntryObject | undefined): Promise<boolean> {
    for (let conflicts = 0; ; conflicts++) {
      const base = await this.#read(namespace, name);
      if (!base) return false;
      const current = fromKube(base);
      const next = change(current);
      if (!next) return false;
      try {
        let written = base;
        const { conditions: _a, ...restNext } = next;
        const { conditions: _b, ...restCurrent } = current;
        if (JSON.stringify(restNext) !== JSON.stringify(restCurrent)) {
          written = await this.#api.update<KubeEntry>(entryPath(namespace, name), toKube(next, base), { fieldManager: this.#fieldManager });
        }
        if (conditionsJson(next.conditions) !== conditionsJson(current.conditions)) await this.#writeStatus(next, written);
        return true;
      } catch (err) {
        if (statusCodeOf(err) !== 409 || conflicts + 1 >= MAX_CONFLICTS) throw err;
      }
    }
  }

  async remove(namespace: string, name: string, still: (current: EntryObject) => boolean): Promise<boolean> {
    const base = await this.#read(namespace, name);
    if (!base || !still(fromKube(base))) return false;
    try {
      await this.#api.delete(entryPath(namespace, name), { preconditions: { resourceVersion: base.metadata?.resourceVersion ?? '' } });
      return true;
    } catch (err) {
      // Gone already, or changed since it was read (reconnected): not removed by us.
      if (statusCodeOf(err) === 404 || statusCodeOf(err) === 409) return false;
      throw err;
    }
  }

  async #writeStatus(e: EntryObject, base: KubeEntry): Promise<void> {
    await this.#api.update(`${entryPath(e.namespace, e.name)}/status`, toKube(e, base), { fieldManager: this.#fieldManager });
  }
}
