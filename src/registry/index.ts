/** The public surface of src/registry: what other folders import (SURFACE in scripts/layers.ts). */
export { aggregateRegistry } from './aggregate.js';
export {
  type Endpoint,
  type Locality,
  type Protocol,
  type RegistrySnapshot,
  type Service,
  addressesInCluster,
  type ServicePort,
  type WorkloadInstances,
} from './model.js';
export {
  buildServiceEntryRegistry,
  hasWorkloadSelector,
  parseProtocol,
  updateSelectedPods,
  updateWorkloadEntries,
} from './service-entry-registry.js';
export { workloadInstancesOf } from './workload-instances.js';
export { convertProtocol } from './kube/translate.js';
export { KubeWorkloadEntries, kubeServicesSelecting, selectedEntryAddresses, withWorkloadEntries } from './kube/workload-entries.js';
export {
  EMPTY_AMBIENT_STATE,
  type AmbientEndpointSlice,
  type AmbientKubeService,
  type AmbientKubeState,
  type AmbientPod,
} from './ambient-model.js';
