/**
 * Everything `meshpilot discovery` does through the Kubernetes API, behind one seam that
 * startDiscovery loads (a dynamic import) only when a cluster is configured: the client, the
 * reflectors and the controllers built on them, which the file-based mode never uses. The other bootstrap
 * modules import only types from here; src/bootstrap/kube-side.test.ts holds them to it.
 */
import type { KubeConfig } from '../kube/index.js';
import type { MeshConfigMap } from './mesh-configmap.js';

export { clusterWatchers, connectCluster, pushRegistryChanges, remoteClusters } from './cluster.js';
export { gatewayStatusTask } from './gateway-status.js';
export { clusterNetworkSource } from './mesh-networks-kube.js';
export { KubeWorkloadEntryStore } from '../autoregistration/kube-store.js';
export { syncCaSecret } from '../security/kube/index.js';
export { kubeTokenReviewer } from '../security/kube/index.js';
export { rootCertPublisherTask } from '../security/kube/index.js';
export { startLeaderElection } from '../leader/leader-election.js';
export { gatewayDeployerTask } from '../gateway-deploy/controller.js';
export { KubeInjectionInputs } from '../inject/kube-inputs.js';
export { INJECTION_WEBHOOK_SUFFIX, webhookCaBundleTask } from '../webhooks/ca-bundle-patcher.js';
export { dryRunInvalidGatewayProbe } from '../webhooks/fail-close-probe.js';

/** This module's exports, as startDiscovery hands them on. */
export type KubeSide = typeof import('./kube-side.js');

/** A configured cluster: its client config, the mesh ConfigMap (without --meshConfig) and the Kubernetes side. */
export interface KubeCluster {
  readonly kubeConfig: KubeConfig;
  readonly meshConfigMap?: MeshConfigMap | undefined;
  readonly kube: KubeSide;
}
