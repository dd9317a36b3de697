/**
 * The Kubernetes side of `meshpilot discovery`: the client config, Istio config from the API
 * server, the Kubernetes service registry and the `istio` mesh ConfigMap, built from the parsed
 * options. Everything here is started and stopped by startDiscovery.
 */
import type { KubeConfig } from '../kube/index.js';
import { GATEWAY_API_KINDS, ISTIO_KINDS, KubeConfigSource, loadKubeConfig } from '../config/sources/kube/index.js';
import { MeshConfigMap } from './mesh-configmap.js';
import { pushRequest, registryKey } from '../model/index.js';
import { type ConfigSnapshot, labelsSubsetOf, type MeshConfigFile } from '../config/index.js';
import { KubeRegistry, type KubeRegistryChange, type WorkloadChange } from '../registry/kube/index.js';
import { MeshError, errorMessage } from '../util/errors.js';
import type { Logger } from '../util/log.js';
import type { DiscoveryServer } from '../xds/index.js';
import type { DiscoveryOptions } from './options.js';
import type { Registry } from 'prom-client';
import { RemoteClusters } from './remote-clusters.js';

export interface ClusterParts {
  readonly kubeConfig: KubeConfig;
  /** Watched only when no --meshConfig file is given. */
  readonly meshConfigMap: MeshConfigMap | undefined;
}

export function connectCluster(opts: DiscoveryOptions, log: Logger): ClusterParts | undefined {
  if (!opts.cluster) return undefined;
  let kubeConfig: KubeConfig;
  try {
    kubeConfig = loadKubeConfig({
      ...(opts.cluster.kubeconfig !== undefined ? { kubeconfig: opts.cluster.kubeconfig } : {}),
      env: process.env,
    });
  } catch (err) {
    throw new MeshError('INVALID_ARGUMENT', `--kubeconfig ${opts.cluster.kubeconfig ?? '(in-cluster)'}: ${errorMessage(err)}`);
  }
  const meshConfigMap =
    opts.meshConfigFile === undefined
      ? new MeshConfigMap({ kubeConfig, logger: log.child('mesh'), namespace: opts.security.namespace, domain: opts.domain })
      : undefined;
  return { kubeConfig, meshConfigMap };
}

/** The config source and registry of a cluster, once the mesh config (discoverySelectors) is known. */
export function clusterWatchers(
  opts: DiscoveryOptions,
  kubeConfig: KubeConfig,
  mesh: MeshConfigFile,
  log: Logger,
): { source: KubeConfigSource; registry: KubeRegistry | undefined } {
  const selectors = mesh.discoverySelectors.length > 0 ? { discoverySelectors: mesh.discoverySelectors } : {};
  // Istio's kinds and Gateway API's (istiod's PILOT_ENABLE_GATEWAY_API default); a kind whose CRD is not installed lists empty.
  const source = new KubeConfigSource({
    kubeConfig,
    logger: log.child('kube'),
    kinds: [...ISTIO_KINDS, ...GATEWAY_API_KINDS],
    ...selectors,
  });
  const registry = opts.registries.includes('Kubernetes')
    ? new KubeRegistry({
        kubeConfig,
        logger: log.child('kube-registry'),
        domainSuffix: opts.domain,
        ambient: opts.ambient,
        ...(opts.cluster ? { clusterId: opts.cluster.clusterId } : {}),
        ...selectors,
      })
    : undefined;
  return { source, registry };
}

/**
 * The remote clusters of `istio/multiCluster` Secrets in the system namespace, each a Kubernetes
 * registry with the local one's domain and discoverySelectors (not ambient's state: ztunnel
 * multicluster is not supported). A cluster added or removed is a full push (istiod's ClusterUpdate).
 */
export function remoteClusters(
  opts: DiscoveryOptions,
  kubeConfig: KubeConfig,
  mesh: MeshConfigFile,
  xds: DiscoveryServer,
  config: () => ConfigSnapshot,
  metrics: Registry,
  log: Logger,
): RemoteClusters {
  const selectors = mesh.discoverySelectors.length > 0 ? { discoverySelectors: mesh.discoverySelectors } : {};
  return new RemoteClusters({
    kubeConfig,
    namespace: opts.security.namespace,
    localClusterId: opts.cluster?.clusterId ?? 'Kubernetes',
    syncTimeoutMs: opts.cluster?.remoteClusterTimeoutMs ?? 30_000,
    buildRegistry: (clusterId, remote) =>
      new KubeRegistry({
        kubeConfig: remote,
        logger: log.child('kube-registry').child(clusterId),
        domainSuffix: opts.domain,
        clusterId,
        systemNamespace: opts.security.namespace,
        ...selectors,
      }),
    attach: (registry) => pushRegistryChanges(registry, xds, config),
    onClustersChanged: () =>
      xds.configUpdate(pushRequest({ full: true, forced: true, reason: 'cluster', start: performance.timeOrigin + performance.now() })),
    metrics,
    logger: log.child('multicluster'),
  });
}

/**
 * The `Endpoints` keys of the ServiceEntry hosts whose workloadSelector picks a changed pod, before
 * or after the change (istiod's ServiceEntry controller turns workload instance events into
 * endpoint updates of the selecting ServiceEntries).
 */
export function selectedPodKeys(config: ConfigSnapshot, workloads: readonly WorkloadChange[]): Set<string> {
  const keys = new Set<string>();
  for (const w of workloads) {
    for (const se of config.list('ServiceEntry', w.namespace)) {
      const selector = se.spec.workloadSelector?.labels;
      if (!selector) continue;
      if ([w.before, w.after].some((p) => p !== undefined && labelsSubsetOf(selector, p.labels))) {
        for (const host of se.spec.hosts) keys.add(registryKey('Endpoints', se.meta.namespace, host));
      }
    }
  }
  return keys;
}

/**
 * Registry changes as pushes: a changed Service is a full push scoped to its host (istiod's
 * ServiceUpdate); endpoints alone take the EDS-only path (EndpointUpdate), and so do pods that
 * ServiceEntries select (`config` is the config store's current snapshot).
 */
export function pushRegistryChanges(registry: KubeRegistry, xds: DiscoveryServer, config: () => ConfigSnapshot): () => void {
  return registry.onChange((change: KubeRegistryChange, snapshot) => {
    const keys: string[] = [];
    const namespaceOf = (host: string): string => snapshot.serviceByHost(host)?.namespace ?? host.split('.')[1] ?? '';
    for (const host of change.services) keys.push(registryKey('Service', namespaceOf(host), host));
    for (const host of change.endpoints) if (!change.services.has(host)) keys.push(registryKey('Endpoints', namespaceOf(host), host));
    if (change.workloads.length > 0) keys.push(...selectedPodKeys(config(), change.workloads));
    // What ambient's workload discovery reads (pods ready or not, Services, namespace labels): ztunnels only.
    if (change.ambient) {
      for (const key of [...change.ambient.pods, ...change.ambient.services, ...change.ambient.slices]) {
        const slash = key.indexOf('/');
        keys.push(registryKey('Ambient', key.slice(0, slash), key.slice(slash + 1)));
      }
      for (const ns of change.ambient.namespaces) keys.push(registryKey('Ambient', ns, ns));
    }
    // A remote cluster's network moved (its system namespace label): every proxy's EDS, as a local label change.
    if (change.network) {
      xds.configUpdate(pushRequest({ full: true, forced: true, reason: 'networks', start: performance.timeOrigin + performance.now() }));
      return;
    }
    // Pods no ServiceEntry selects and no Service endpoints: nothing to push (no keys = a full push).
    if (keys.length === 0) return;
    const full = change.services.size > 0;
    xds.configUpdate(
      pushRequest({ full, configsUpdated: keys, reason: full ? 'service' : 'endpoint', start: performance.timeOrigin + performance.now() }),
    );
  });
}
