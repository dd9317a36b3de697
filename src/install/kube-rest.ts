/**
 * The few raw REST calls the installer makes (server-side apply, get, list by label, delete) and API
 * discovery (kind → resource path). Raw rather than client-node's typed APIs because those
 * re-serialise bodies through their models, which drops fields they do not know (a CRD schema's
 * `x-kubernetes-int-or-string`, say), and apply must send the rendered object exactly.
 * Authentication and TLS come from the KubeConfig (client-node's applyToHTTPSOptions).
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';

/** A JSON object as the API server sends and takes it. */
export type KubeObject = { apiVersion?: string; kind?: string; metadata?: KubeMetadata; [k: string]: unknown };
export interface KubeMetadata {
  name?: string;
  namespace?: string;
  labels?: Record<string, string>;
  resourceVersion?: string;
  [k: string]: unknown;
}

/** A refused call: the HTTP status and the Status message the server gave (what kubectl prints). */
export class KubeApiError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
  ) {
    super(message);
    this.name = 'KubeApiError';
  }
}

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

const REQUEST_TIMEOUT_MS = 30_000;

export class KubeRest {
  private readonly discovered = new Map<string, Promise<ResourceInfo[]>>();

  constructor(private readonly kc: KubeConfig) {}

  /** One call; a non-2xx answer throws KubeApiError with the server's message. */
  async call(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<KubeObject> {
    const cluster = this.kc.getCurrentCluster();
    if (!cluster) throw new Error('the kubeconfig has no current cluster');
    const url = new URL(path, cluster.server);
    const opts: RequestOptions = { method, headers: {}, timeout: REQUEST_TIMEOUT_MS };
    await this.kc.applyToHTTPSOptions(opts);
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers = (opts.headers ?? {}) as Record<string, string>;
    headers.accept = 'application/json';
    if (payload !== undefined) {
      headers['content-type'] = contentType;
      headers['content-length'] = String(Buffer.byteLength(payload));
    }
    opts.headers = headers;
    const send = url.protocol === 'http:' ? httpRequest : httpsRequest;
    const { status, text } = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = send(url, opts, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        res.on('error', reject);
      });
      req.on('timeout', () => req.destroy(new Error(`${method} ${url.pathname}: no answer within ${REQUEST_TIMEOUT_MS / 1000} s`)));
      req.on('error', reject);
      req.end(payload);
    });
    let json: KubeObject = {};
    try {
      json = text === '' ? {} : (JSON.parse(text) as KubeObject);
    } catch {
      if (status < 300) throw new Error(`${method} ${url.pathname}: the API server answered HTTP ${status} with a body that is not JSON`);
    }
    if (status >= 200 && status < 300) return json;
    const message = typeof json.message === 'string' ? json.message : text.trim() || `HTTP ${status}`;
    throw new KubeApiError(status, typeof json.reason === 'string' ? json.reason : '', message);
  }

  /** GET that answers undefined for 404. */
  async getOrUndefined(path: string): Promise<KubeObject | undefined> {
    try {
      return await this.call('GET', path);
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 404) return undefined;
      throw err;
    }
  }

  /** The resources one group/version serves (cached; `refresh` asks again, e.g. after CRDs were created). */
  async resources(apiVersion: string, refresh = false): Promise<ResourceInfo[]> {
    let entry = this.discovered.get(apiVersion);
    if (!entry || refresh) {
      entry = this.fetchResources(apiVersion);
      this.discovered.set(apiVersion, entry);
      // A failed discovery must not stay cached.
      entry.catch(() => this.discovered.delete(apiVersion));
    }
    return entry;
  }

  private async fetchResources(apiVersion: string): Promise<ResourceInfo[]> {
    let list: ApiResourceList;
    try {
      list = (await this.call('GET', groupVersionPath(apiVersion))) as ApiResourceList;
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 404) return [];
      throw err;
    }
    return (list.resources ?? [])
      .filter((r) => !r.name.includes('/'))
      .map((r) => ({ apiVersion, kind: r.kind, resource: r.name, namespaced: r.namespaced, verbs: r.verbs ?? [] }));
  }

  /** Where `kind` of `apiVersion` is served, or undefined when the server does not know it (yet). */
  async resolve(apiVersion: string, kind: string): Promise<ResourceInfo | undefined> {
    const found = (await this.resources(apiVersion)).find((r) => r.kind === kind);
    if (found) return found;
    // Not cached yet or served since (a CRD just established): ask once more.
    return (await this.resources(apiVersion, true)).find((r) => r.kind === kind);
  }

  /** Every listable, deletable resource the server serves, in each group's preferred version. */
  async allResources(): Promise<ResourceInfo[]> {
    const groups = (await this.call('GET', '/apis')) as { groups?: { preferredVersion?: { groupVersion?: string } }[] };
    const versions = ['v1', ...(groups.groups ?? []).map((g) => g.preferredVersion?.groupVersion).filter((v): v is string => v !== undefined)];
    const lists = await Promise.all(
      versions.map((v) =>
        this.resources(v, true).catch((err: unknown) => {
          // An aggregated API whose backend is down (503) serves nothing the installer applied.
          if (err instanceof KubeApiError && err.status === 503) return [];
          throw err;
        }),
      ),
    );
    return lists.flat().filter((r) => r.verbs.includes('list') && r.verbs.includes('delete'));
  }
}

/** `/api/v1` for the core group, `/apis/GROUP/VERSION` otherwise. */
export function groupVersionPath(apiVersion: string): string {
  return apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
}

/** The collection path of a resource: in one namespace, or across all of them when `namespace` is undefined. */
export function collectionPath(info: ResourceInfo, namespace?: string): string {
  const base = groupVersionPath(info.apiVersion);
  return info.namespaced && namespace !== undefined ? `${base}/namespaces/${encodeURIComponent(namespace)}/${info.resource}` : `${base}/${info.resource}`;
}

/** The path of one object. */
export function objectPath(info: ResourceInfo, name: string, namespace?: string): string {
  return `${collectionPath(info, namespace)}/${encodeURIComponent(name)}`;
}
