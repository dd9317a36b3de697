/**
 * What a cluster says about networks, watched: the `meshNetworks` key of the mesh ConfigMap
 * (`istio` in the system namespace, as istiod's kubemesh.MeshNetworksKey) and the system namespace's
 * `topology.istio.io/network` label (istiod's network of endpoints that name none).
 */
import type { V1ConfigMap, V1Namespace } from '@kubernetes/client-node';
import { NETWORK_LABEL } from '../config/constants.js';
import { namespaceTarget, Reflector } from '../config/sources/kube/index.js';
import type { KubeConfig } from '../kube/index.js';
import type { Logger } from '../util/log.js';
import type { ClusterNetworkSource } from './mesh-networks.js';

export const MESH_NETWORKS_CONFIGMAP_KEY = 'meshNetworks';

export function clusterNetworkSource(opts: {
  readonly kubeConfig: KubeConfig;
  readonly namespace: string;
  readonly logger: Logger;
  /** The mesh ConfigMap (istiod: `istio`, `istio-<revision>`). */
  readonly configMapName?: string;
}): ClusterNetworkSource {
  const name = opts.configMapName ?? 'istio';
  const listeners: (() => void)[] = [];
  let started = false;
  const changed = (): void => {
    if (started) for (const fn of listeners) fn();
  };
  const configMaps = new Reflector<V1ConfigMap>({
    name: `configmaps/${opts.namespace} (meshNetworks)`,
    kubeConfig: opts.kubeConfig,
    targets: [{ path: `/api/v1/namespaces/${opts.namespace}/configmaps` }],
    logger: opts.logger,
    onBatch: changed,
  });
  // Namespaces are few; the system namespace's labels are all that is read.
  const namespaces = new Reflector<V1Namespace>({
    name: 'namespaces (network)',
    kubeConfig: opts.kubeConfig,
    targets: [namespaceTarget()],
    logger: opts.logger,
    onBatch: changed,
  });
  return {
    origin: `ConfigMap ${opts.namespace}/${name} key ${MESH_NETWORKS_CONFIGMAP_KEY}`,
    async start() {
      await Promise.all([configMaps.start(), namespaces.start()]);
      started = true;
    },
    async stop() {
      await Promise.all([configMaps.stop(), namespaces.stop()]);
    },
    meshNetworksText: () => configMaps.get(opts.namespace, name)?.data?.[MESH_NETWORKS_CONFIGMAP_KEY] ?? '',
    systemNamespaceNetwork: () => namespaces.get('', opts.namespace)?.metadata?.labels?.[NETWORK_LABEL] ?? '',
    onChange: (fn) => void listeners.push(fn),
  };
}
