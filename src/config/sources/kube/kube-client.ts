/**
 * Reflector targets for the kinds meshpilot watches, and the kubeconfig loading the config source
 * shares (the client itself is src/kube). Settings come in as arguments (parsed once at start-up),
 * never from the environment at import.
 */
import type { V1Namespace } from '@kubernetes/client-node';
import { kubeClient, type KubeConfig } from '../../../kube/index.js';
import type { ReflectorTarget } from './reflector.js';

export { loadKubeConfig } from '../../../kube/index.js';

/** What a custom-resource LIST returns: raw JSON objects. */
export type CustomObject = Readonly<Record<string, unknown>> & {
  readonly metadata?: { readonly name?: string; readonly namespace?: string; readonly resourceVersion?: string };
};

/** One target per version, in the order given (the first one the server serves is used). */
export function customResourceTargets(group: string, versions: readonly string[], plural: string): ReflectorTarget<CustomObject>[] {
  return versions.map((version) => ({ path: `/apis/${group}/${version}/${plural}` }));
}

/** Namespaces (cluster-scoped). */
export function namespaceTarget(): ReflectorTarget<V1Namespace> {
  return { path: '/api/v1/namespaces' };
}

/** A LIST + WATCH of `path` through `kc`, objects as the raw JSON the server sent. */
export function rawListTarget<T>(kc: KubeConfig, path: string): ReflectorTarget<T> {
  return { path, list: (page) => kubeClient(kc).list<T>(path, page) };
}
