/** Public surface of the Kubernetes service registry. */
export { KubeRegistry, type KubeRegistryChange, type KubeRegistryListener, type KubeRegistryOptions, type WorkloadChange } from './kube-registry.js';
export { KubeRegistrySnapshot, type KubeServiceEntry } from './kube-snapshot.js';
export {
  convertProtocol,
  convertService,
  DEFAULT_DOMAIN_SUFFIX,
  EXPORT_TO_ANNOTATION,
  kubeSourceKey,
  podLocality,
  serviceEndpoints,
  serviceExportTo,
  serviceHostname,
  type KubeSourceKind,
  type PodLookup,
} from './translate.js';
