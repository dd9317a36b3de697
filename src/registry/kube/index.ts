/** Public surface of the Kubernetes service registry. */
export {
  KubeRegistry,
  type AmbientChange,
  type KubeRegistryChange,
  type KubeRegistryListener,
  type KubeRegistryOptions,
  type WorkloadChange,
} from './kube-registry.js';
export { KubeRegistrySnapshot, type KubeServiceEntry } from './kube-snapshot.js';
export {
  convertProtocol,
  convertService,
  kubeSourceKey,
  podLocality,
  serviceEndpoints,
  serviceExportTo,
  serviceHostname,
  type KubeSourceKind,
  type PodLookup,
} from './translate.js';
export { ambientPod, ambientService, podWorkloadName } from './ambient-translate.js';
