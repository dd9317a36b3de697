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
import type { KubeJsonObject } from '../config/sources/kube/index.js';
import { errorCodeOfHttpStatus, MeshError } from '../util/errors.js';

/** A refused call: the HTTP status and the Status message the server gave (what kubectl prints). */
export class KubeApiError extends MeshError {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
  ) {
    super(errorCodeOfHttpStatus(status), message);
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
/** client-go's limit on 429 retries. */
const MAX_ATTEMPTS = 10;

interface Answer {
  readonly status: number;
  readonly text: string;
  readonly retryAfterSeconds?: number;
}

export class KubeRest {
  private readonly discovered = new Map<string, Promise<ResourceInfo[]>>();

  constructor(private readonly kc: KubeConfig) {}

  /**
   * One call; a non-2xx answer throws KubeApiError with the server's message. 429 (the API server's
   * "storage is (re)initializing" right after a CRD is created, or its rate limit) is retried after
   * the Retry-After it names, as client-go does.
   */
  async call(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<KubeJsonObject> {
    for (let attempt = 1; ; attempt++) {
      const res = await this.send(method, path, body, contentType);
      if (res.status === 429 && attempt < MAX_ATTEMPTS) {
        await new Promise((r) => setTimeout(r, Math.min(res.retryAfterSeconds ?? 1, 10) * 1000));
        continue;
      }
      return this.result(method, path, res);
    }
  }

  private result(method: string, path: string, res: Answer): KubeJsonObject {
    const { status, text } = res;
    let json: KubeJsonObject = {};
    try {
      json = text === '' ? {} : (JSON.parse(text) as KubeJsonObject);
    } catch {
      if (status < 300)
        throw new MeshError('INTERNAL', `${method} ${path}: the API server answered HTTP ${status} with a body that is not JSON`);
    }
    if (status >= 200 && status < 300) return json;
    const message = typeof json.message === 'string' ? json.message : text.trim() || `HTTP ${status}`;
    throw new KubeApiError(status, typeof json.reason === 'string' ? json.reason : '', message);
  }

  private async send(method: string, path: string, body: unknown, contentType: string): Promise<Answer> {
    const cluster = this.kc.getCurrentCluster();
    if (!cluster) throw new MeshError('INVALID_ARGUMENT', 'the kubeconfig has no current cluster');
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
    const request = url.protocol === 'http:' ? httpRequest : httpsRequest;
    return new Promise<Answer>((resolve, reject) => {
      const req = request(url, opts, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          const retryAfter = Number(res.headers['retry-after']);
          resolve({
            status: res.statusCode ?? 0,
            text,
            ...(Number.isFinite(retryAfter) && retryAfter > 0 ? { retryAfterSeconds: retryAfter } : {}),
          });
        });
        res.on('error', reject);
      });
      req.on('timeout', () =>
        req.destroy(new MeshError('DEADLINE_EXCEEDED', `${method} ${url.pathname}: no answer within ${REQUEST_TIMEOUT_MS / 1000} s`)),
      );
      req.on('error', reject);
      req.end(payload);
    });
  }

  /** GET that answers undefined for 404. */
  async getOrUndefined(path: string): Promise<KubeJsonObject | undefined> {
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
