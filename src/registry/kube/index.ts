/** Public surface of the Kubernetes service registry. */
export {
  KubeRegistry,
  type AmbientChange,
  type KubeRegistryChange,
  type KubeRegistryOptions,
  type WorkloadChange,
} from './kube-registry.js';
