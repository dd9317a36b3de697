/** Public surface of the Kubernetes service registry. */
export { KubeRegistry, type KubeRegistryChange, type KubeRegistryOptions, type WorkloadChange } from './kube-registry.js';
