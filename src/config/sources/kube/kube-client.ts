/**
 * Connecting to the Kubernetes API: the kubeconfig to use, and list functions for the reflector.
 * Settings come in as arguments (parsed once at start-up), never from the environment at import.
 */
import { CustomObjectsApi, KubeConfig, type V1Namespace } from '@kubernetes/client-node';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import type { ListPage, ReflectorTarget } from './reflector.js';

export interface KubeConnectOptions {
  /** A kubeconfig file (`--kubeconfig`). */
  readonly kubeconfig?: string;
  /** Context to use instead of the file's current-context. */
  readonly context?: string;
  /** The process environment: `KUBERNETES_SERVICE_HOST` means in-cluster config when no file is named. */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/** The file if one is named; in a Pod the service-account config; otherwise client-node's default lookup. */
export function loadKubeConfig(opts: KubeConnectOptions = {}): KubeConfig {
  const kc = new KubeConfig();
  if (opts.kubeconfig !== undefined) kc.loadFromFile(opts.kubeconfig);
  else if (opts.env?.KUBERNETES_SERVICE_HOST) kc.loadFromCluster();
  else kc.loadFromDefault();
  if (opts.context !== undefined) kc.setCurrentContext(opts.context);
  return kc;
}

/** LIST paging parameters as client-node's request objects name them. */
export function pageParams(page: { readonly limit: number; readonly continueToken?: string }): { limit: number; _continue?: string } {
  return page.continueToken !== undefined ? { limit: page.limit, _continue: page.continueToken } : { limit: page.limit };
}

/** What a custom-resource LIST returns: raw JSON objects. */
export type CustomObject = Readonly<Record<string, unknown>> & {
  readonly metadata?: { readonly name?: string; readonly namespace?: string; readonly resourceVersion?: string };
};

/** One target per version, in the order given (the first one the server serves is used). */
export function customResourceTargets(
  kc: KubeConfig,
  group: string,
  versions: readonly string[],
  plural: string,
): ReflectorTarget<CustomObject>[] {
  const api = kc.makeApiClient(CustomObjectsApi);
  return versions.map((version) => ({
    path: `/apis/${group}/${version}/${plural}`,
    list: async (page) => (await api.listClusterCustomObject({ group, version, plural, ...pageParams(page) })) as ListPage<CustomObject>,
  }));
}

/** Namespaces (cluster-scoped). */
export function namespaceTarget(kc: KubeConfig): ReflectorTarget<V1Namespace> {
  return rawListTarget<V1Namespace>(kc, '/api/v1/namespaces');
}

const LIST_TIMEOUT_MS = 60_000;

/**
 * A LIST of `path` as raw JSON. The typed list calls of client-node build a model instance for every
 * object with a slot for every field the schema has (a PodSpec alone has ~40), which the watch
 * events, raw JSON, never had: objects from a LIST and from the watch now look alike and hold only
 * what the server sent. A failure carries the HTTP status as `statusCode` (see statusCodeOf).
 */
export function rawListTarget<T>(kc: KubeConfig, path: string): ReflectorTarget<T> {
  return { path, list: (page) => rawList<T>(kc, path, page) };
}

async function rawList<T>(
  kc: KubeConfig,
  path: string,
  page: { readonly limit: number; readonly continueToken?: string },
): Promise<ListPage<T>> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig has no current cluster');
  const url = new URL(cluster.server.replace(/\/$/, '') + path);
  url.searchParams.set('limit', String(page.limit));
  if (page.continueToken !== undefined) url.searchParams.set('continue', page.continueToken);
  const opts: RequestOptions = { method: 'GET', headers: {}, timeout: LIST_TIMEOUT_MS };
  await kc.applyToHTTPSOptions(opts);
  opts.headers = { ...(opts.headers as Record<string, string>), accept: 'application/json' };
  const request = url.protocol === 'http:' ? httpRequest : httpsRequest;
  const { status, text } = await new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = request(url, opts, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`LIST ${path}: no answer within ${LIST_TIMEOUT_MS / 1000} s`)));
    req.on('error', reject);
    req.end();
  });
  if (status < 200 || status >= 300) {
    let message = text.trim();
    try {
      message = (JSON.parse(text) as { message?: string }).message ?? message;
    } catch {
      // not a Status object: the text as it came
    }
    throw Object.assign(new Error(`LIST ${path}: HTTP ${status}: ${message}`), { statusCode: status });
  }
  return JSON.parse(text) as ListPage<T>;
}
