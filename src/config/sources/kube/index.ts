/** Public surface of the Kubernetes config source and the shared list/watch plumbing the Kubernetes registry reuses. */
export { KubeConfigSource, GATEWAY_API_KINDS, ISTIO_KINDS, kubeOrigin, type KubeConfigSourceOptions } from './kube-source.js';
export { loadKubeConfig, customResourceTargets, namespaceTarget, rawListTarget, type CustomObject } from './kube-client.js';
export {
  Reflector,
  objectKey,
  startUntilAborted,
  stripManagedFields,
  statusCodeOf,
  type ReflectorEvent,
  type ReflectorStats,
  type ReflectorTarget,
} from './reflector.js';
export type { KubeJsonObject, KubeObject } from './kube-object.js';
export { NamespaceFilter, type NamespaceSelectionChange } from './namespace-filter.js';
export { Backoff, type BackoffOptions } from './backoff.js';
export { ReconcileQueue } from './reconcile-queue.js';
