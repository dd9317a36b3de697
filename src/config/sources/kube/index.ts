/** Public surface of the Kubernetes config source and the shared list/watch plumbing the Kubernetes registry reuses. */
export {
  KubeConfigSource,
  GATEWAY_API_KINDS,
  ISTIO_KINDS,
  kubeOrigin,
  type KubeConfigSourceOptions,
  type KubeKindStats,
} from './kube-source.js';
export {
  loadKubeConfig,
  customResourceTargets,
  namespaceTarget,
  pageParams,
  type CustomObject,
  type KubeConnectOptions,
} from './kube-client.js';
export {
  Reflector,
  objectKey,
  startUntilAborted,
  statusCodeOf,
  type ListFn,
  type ListPage,
  type ReflectorEvent,
  type ReflectorOptions,
  type ReflectorStats,
  type ReflectorTarget,
} from './reflector.js';
export type { KubeJsonObject, KubeMetadata, KubeObject } from './kube-object.js';
export { NamespaceFilter, type NamespaceFilterOptions, type NamespaceSelectionChange } from './namespace-filter.js';
export { Backoff, type BackoffOptions } from './backoff.js';
export { ReconcileQueue } from './reconcile-queue.js';
