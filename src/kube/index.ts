/** Public surface of the Kubernetes API client: kubeconfig loading, REST verbs, watch, discovery. */
export {
  KubeConfig,
  fromKubeconfigFiles,
  fromKubeconfigText,
  inClusterKubeConfig,
  kubeconfigContexts,
  loadKubeConfig,
  SERVICE_ACCOUNT_DIR,
  type ExecPlugin,
  type FromKubeconfigTextOptions,
  type KubeAuth,
  type KubeTls,
  type LoadKubeConfigOptions,
} from './kubeconfig.js';
export {
  KubeApiError,
  KubeClient,
  kubeClient,
  PATCH_TYPES,
  statusCodeOf,
  type ListOptions,
  type ListPage,
  type PatchType,
  type Query,
  type WatchEventHandler,
} from './client.js';
export { collectionPath, groupVersionPath, objectPath, type ResourceInfo } from './discovery.js';
export { microTime, type KubeJsonObject, type KubeMetadata, type KubeObject } from './kube-object.js';
