/**
 * Connecting to the Kubernetes API: the kubeconfig to use, and list functions for the reflector.
 * Settings come in as arguments (parsed once at start-up), never from the environment at import.
 */
import { CoreV1Api, CustomObjectsApi, KubeConfig, type V1Namespace } from '@kubernetes/client-node';
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
  const core = kc.makeApiClient(CoreV1Api);
  return { path: '/api/v1/namespaces', list: (page) => core.listNamespace(pageParams(page)) };
}
