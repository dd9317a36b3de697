/**
 * API discovery: which resources a group/version serves (kind → plural resource name, namespaced or
 * not), and the paths of collections and objects. Used where a kind is known only at run time (the
 * installer's manifests, the gateway deployment controller's rendered objects).
 */
import { statusCodeOf } from './client.js';

/** Where a kind is served: its plural resource name and whether it lives in namespaces. */
export interface ResourceInfo {
  readonly apiVersion: string;
  readonly kind: string;
  readonly resource: string;
  readonly namespaced: boolean;
  readonly verbs: readonly string[];
}

interface ApiResourceList {
  resources?: { name: string; kind: string; namespaced: boolean; verbs?: string[] }[];
}

export class ApiDiscovery {
  readonly #cache = new Map<string, Promise<ResourceInfo[]>>();

  constructor(private readonly get: (path: string) => Promise<unknown>) {}

  /** The resources one group/version serves (cached; `refresh` asks again, e.g. after CRDs were created). */
  resources(apiVersion: string, refresh = false): Promise<ResourceInfo[]> {
    let entry = this.#cache.get(apiVersion);
    if (!entry || refresh) {
      entry = this.#fetch(apiVersion);
      this.#cache.set(apiVersion, entry);
      // A failed discovery must not stay cached.
      entry.catch(() => this.#cache.delete(apiVersion));
    }
    return entry;
  }

  /** Where `kind` of `apiVersion` is served, or undefined when the server does not know it (yet). */
  async resolve(apiVersion: string, kind: string): Promise<ResourceInfo | undefined> {
    const found = (await this.resources(apiVersion)).find((r) => r.kind === kind);
    if (found) return found;
    // Not cached yet or served since (a CRD just established): ask once more.
    return (await this.resources(apiVersion, true)).find((r) => r.kind === kind);
  }

  async #fetch(apiVersion: string): Promise<ResourceInfo[]> {
    let list: ApiResourceList;
    try {
      list = (await this.get(groupVersionPath(apiVersion))) as ApiResourceList;
    } catch (err) {
      if (statusCodeOf(err) === 404) return [];
      throw err;
    }
    return (list.resources ?? [])
      .filter((r) => !r.name.includes('/'))
      .map((r) => ({ apiVersion, kind: r.kind, resource: r.name, namespaced: r.namespaced, verbs: r.verbs ?? [] }));
  }
}

/** `/api/v1` for the core group, `/apis/GROUP/VERSION` otherwise. */
export function groupVersionPath(apiVersion: string): string {
  return apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
}

/** The collection path of a resource: in one namespace, or across all of them when `namespace` is undefined. */
export function collectionPath(info: ResourceInfo, namespace?: string): string {
  const base = groupVersionPath(info.apiVersion);
  return info.namespaced && namespace !== undefined
    ? `${base}/namespaces/${encodeURIComponent(namespace)}/${info.resource}`
    : `${base}/${info.resource}`;
}

/** The path of one object. */
export function objectPath(info: ResourceInfo, name: string, namespace?: string): string {
  return `${collectionPath(info, namespace)}/${encodeURIComponent(name)}`;
}
