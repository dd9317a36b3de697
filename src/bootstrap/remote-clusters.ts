/**
 * Remote clusters from Secrets, as istiod's multicluster secret controller
 * (pkg/kube/multicluster/secretcontroller.go) and its Kubernetes registries
 * (pilot/pkg/serviceregistry/kube/controller/multicluster.go): every Secret of the system namespace
 * labelled `istio/multiCluster=true` holds one kubeconfig per data key, the key being the cluster's
 * id. Each becomes a Kubernetes registry (Services, EndpointSlices, Pods, Nodes) of that cluster,
 * added, restarted (its kubeconfig text changed) and removed while meshpilot runs.
 *
 * Start-up waits for the clusters present then, each until it synced or PILOT_REMOTE_CLUSTER_TIMEOUT
 * passed (then it reads `timeout` and keeps trying in the background); a cluster that cannot be
 * reached never holds up the others.
 */
import { createHash } from 'node:crypto';
import type { KubeConfig } from '../kube/index.js';
import { Counter, Gauge, type Registry } from 'prom-client';
import { objectKey, rawListTarget, Reflector, type BackoffOptions, type ReflectorEvent } from '../config/sources/kube/index.js';
import type { KubeRegistry } from '../registry/kube/index.js';
import { errorMessage } from '../util/errors.js';
import type { Logger } from '../util/log.js';
import { kubeConfigFromText } from './remote-kube-client.js';

/** istiod's label of remote-cluster Secrets. */
export const MULTI_CLUSTER_SECRET_LABEL = 'istio/multiCluster';

/** istiod's cluster sync states (SyncStatusSynced…). */
export type SyncStatus = 'synced' | 'syncing' | 'timeout' | 'closed';
const SYNC_STATUSES: readonly SyncStatus[] = ['synced', 'syncing', 'timeout', 'closed'];

/** One row of /debug/clusterz (istiod's cluster.DebugInfo). */
export interface ClusterDebugInfo {
  readonly id: string;
  readonly secretName: string;
  readonly syncStatus: SyncStatus;
}

interface RemoteSecret {
  readonly metadata?: { name?: string; namespace?: string; resourceVersion?: string };
  readonly data?: Readonly<Record<string, string>>;
}

export interface RemoteClustersOptions {
  /** The local cluster's client config: the Secrets are read there. */
  readonly kubeConfig: KubeConfig;
  /** The system namespace (istio-system) whose Secrets are read. */
  readonly namespace: string;
  /** This cluster's id: a Secret key naming it is ignored (it would replace the config cluster). */
  readonly localClusterId: string;
  /** PILOT_REMOTE_CLUSTER_TIMEOUT in ms; 0 waits for every cluster's first sync. */
  readonly syncTimeoutMs: number;
  /** A registry for one remote cluster (not started). */
  readonly buildRegistry: (clusterId: string, kubeConfig: KubeConfig) => KubeRegistry;
  /** Wires a registry's changes into pushes; returns the unsubscribe. */
  readonly attach: (registry: KubeRegistry) => () => void;
  /** The set of clusters (or one's first sync) changed: every proxy needs a full push (istiod's ClusterUpdate). */
  readonly onClustersChanged: () => void;
  readonly metrics?: Registry;
  readonly logger: Logger;
  readonly backoff?: BackoffOptions;
}

class RemoteCluster {
  status: SyncStatus = 'syncing';
  readonly initialWait: Promise<void>;
  #resolveWait: () => void = () => undefined;
  #timer: NodeJS.Timeout | undefined;
  #unsubscribe: (() => void) | undefined;

  constructor(
    readonly id: string,
    readonly secretName: string,
    readonly sha: string,
    readonly registry: KubeRegistry,
    readonly kubeConfig: KubeConfig,
  ) {
    this.initialWait = new Promise((resolve) => (this.#resolveWait = resolve));
  }

  start(opts: RemoteClustersOptions, onStatus: (c: RemoteCluster) => void, onTimeout: (c: RemoteCluster) => void): void {
    this.#unsubscribe = opts.attach(this.registry);
    onStatus(this);
    if (opts.syncTimeoutMs > 0) {
      this.#timer = setTimeout(() => {
        if (this.status !== 'syncing') return;
        opts.logger.error('remote cluster failed to sync in time', { cluster: this.id, timeoutMs: opts.syncTimeoutMs });
        this.status = 'timeout';
        onTimeout(this);
        onStatus(this);
        this.#resolveWait();
      }, opts.syncTimeoutMs);
      this.#timer.unref();
    }
    this.registry.start().then(
      () => {
        if (this.status === 'closed') return;
        clearTimeout(this.#timer);
        this.status = 'synced';
        opts.logger.info('remote cluster synced', { cluster: this.id, services: this.registry.snapshot().services.length });
        onStatus(this);
        this.#resolveWait();
        opts.onClustersChanged();
      },
      (err: unknown) => opts.logger.error('remote cluster registry failed', { cluster: this.id, error: errorMessage(err) }),
    );
  }

  async stop(): Promise<void> {
    this.status = 'closed';
    clearTimeout(this.#timer);
    this.#unsubscribe?.();
    this.#resolveWait();
    await this.registry.stop();
  }
}

export class RemoteClusters {
  readonly #opts: RemoteClustersOptions;
  readonly #log: Logger;
  readonly #secrets: Reflector<RemoteSecret>;
  /** Secret `namespace/name` → cluster id → cluster. */
  readonly #bySecret = new Map<string, Map<string, RemoteCluster>>();
  /** A restarted cluster → the one it replaces, which keeps serving until the new one synced (istiod's PendingClusterSwap). */
  readonly #retiring = new Map<RemoteCluster, RemoteCluster>();
  readonly #metrics: ReturnType<typeof createMetrics> | undefined;
  #stopped = false;

  constructor(opts: RemoteClustersOptions) {
    this.#opts = opts;
    this.#log = opts.logger;
    this.#metrics = opts.metrics ? createMetrics(opts.metrics) : undefined;
    this.#metrics?.managed.set({ cluster_type: 'local' }, 1);
    this.#metrics?.managed.set({ cluster_type: 'remote' }, 0);
    const selector = encodeURIComponent(`${MULTI_CLUSTER_SECRET_LABEL}=true`);
    this.#secrets = new Reflector<RemoteSecret>({
      name: 'secrets (istio/multiCluster)',
      kubeConfig: opts.kubeConfig,
      targets: [rawListTarget<RemoteSecret>(opts.kubeConfig, `/api/v1/namespaces/${opts.namespace}/secrets?labelSelector=${selector}`)],
      logger: opts.logger,
      ...(opts.backoff ? { backoff: opts.backoff } : {}),
      // Only what is read: a kubeconfig per key.
      transform: (s) => ({ metadata: { ...pick(s.metadata) }, ...(s.data ? { data: s.data } : {}) }),
      onBatch: (events) => this.#onSecrets(events),
    });
  }

  /** Lists the Secrets, then waits for each cluster found to sync or time out. */
  async start(): Promise<void> {
    await this.#secrets.start();
    await Promise.all(this.#clusters().map((c) => c.initialWait));
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#secrets.stop();
    await Promise.all([...this.#clusters(), ...this.#retiring.values()].map((c) => c.stop()));
    this.#bySecret.clear();
    this.#retiring.clear();
  }

  /** The remote clusters' registries, in cluster id order (after the local one, as istiod lists them). */
  snapshots(): ReturnType<KubeRegistry['snapshot']>[] {
    return this.#clusters().map((c) => (c.status === 'syncing' ? (this.#retiring.get(c) ?? c) : c).registry.snapshot());
  }

  /** A remote cluster's client config (the CA reviews its workloads' tokens there). */
  kubeConfigOf(clusterId: string): KubeConfig | undefined {
    return this.#clusters().find((c) => c.id === clusterId)?.kubeConfig;
  }

  /** /debug/clusterz rows of the remote clusters (istiod lists the config cluster first; the caller adds it). */
  debugInfo(): ClusterDebugInfo[] {
    return this.#clusters().map((c) => ({ id: c.id, secretName: c.secretName, syncStatus: c.status }));
  }

  #clusters(): RemoteCluster[] {
    return [...this.#bySecret.values()].flatMap((m) => [...m.values()]).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  #onSecrets(events: readonly ReflectorEvent<RemoteSecret>[]): void {
    if (this.#stopped) return;
    const keys = new Set<string>();
    for (const e of events) {
      this.#metrics?.secretEvents.inc({ event: e.type });
      keys.add(objectKey(e.object));
    }
    let changed = false;
    for (const key of keys) changed = this.#reconcile(key) || changed;
    this.#metrics?.managed.set({ cluster_type: 'remote' }, this.#clusters().length);
    if (changed) this.#opts.onClustersChanged();
  }

  /** Brings the clusters of one Secret in line with its data; true when a cluster was added or removed. */
  #reconcile(secretKey: string): boolean {
    const slash = secretKey.indexOf('/');
    const secret = this.#secrets.get(secretKey.slice(0, slash), secretKey.slice(slash + 1));
    const wanted = new Map(Object.entries(secret?.data ?? {}).map(([id, b64]) => [id, Buffer.from(b64, 'base64').toString('utf8')]));
    const existing = this.#bySecret.get(secretKey) ?? new Map<string, RemoteCluster>();
    let changed = false;
    for (const [id, cluster] of existing) {
      if (wanted.has(id)) continue;
      this.#log.info('removing remote cluster', { cluster: id, secret: secretKey });
      this.#remove(secretKey, cluster);
      changed = true;
    }
    for (const [id, text] of wanted) {
      const log = { cluster: id, secret: secretKey };
      if (id === this.#opts.localClusterId) {
        this.#log.info('ignoring remote cluster: it would replace the config cluster', log);
        continue;
      }
      const sha = createHash('sha256').update(text).digest('hex');
      const prev = existing.get(id);
      if (prev?.sha === sha) continue;
      if (!prev && this.#clusters().some((c) => c.id === id)) {
        this.#log.warn('ignoring remote cluster: already registered by another Secret', log);
        continue;
      }
      let kubeConfig: KubeConfig;
      try {
        kubeConfig = kubeConfigFromText(text, `Secret ${secretKey} key ${JSON.stringify(id)}`);
      } catch (err) {
        this.#log.error(`remote cluster ${id} in Secret ${secretKey}, key ${JSON.stringify(id)}: ${errorMessage(err)}`, log);
        continue;
      }
      const cluster = new RemoteCluster(id, secretKey, sha, this.#opts.buildRegistry(id, kubeConfig), kubeConfig);
      if (prev) {
        // The previous registry serves until the new one synced: no window without the cluster's endpoints.
        this.#log.info('kubeconfig changed: restarting remote cluster', log);
        const serving = this.#retiring.get(prev);
        this.#retiring.delete(prev);
        if (serving) this.#stopCluster(prev); // restarted again before it synced: the older one still serves
        this.#retiring.set(cluster, serving ?? prev);
      } else {
        this.#log.info('adding remote cluster', log);
        changed = true;
      }
      let clusters = this.#bySecret.get(secretKey);
      if (!clusters) this.#bySecret.set(secretKey, (clusters = new Map()));
      clusters.set(id, cluster);
      cluster.start(
        this.#opts,
        (c) => this.#recordStatus(c),
        (c) => this.#metrics?.timeouts.inc({ cluster: c.id }),
      );
    }
    return changed;
  }

  #remove(secretKey: string, cluster: RemoteCluster): void {
    const clusters = this.#bySecret.get(secretKey);
    clusters?.delete(cluster.id);
    if (clusters?.size === 0) this.#bySecret.delete(secretKey);
    for (const status of SYNC_STATUSES) this.#metrics?.syncStatus.set({ cluster: cluster.id, cluster_type: 'remote', status }, 0);
    this.#retire(cluster);
    this.#stopCluster(cluster);
  }

  /** Stops the cluster a restarted one replaced (once the new one left `syncing`, or went away). */
  #retire(cluster: RemoteCluster): void {
    const old = this.#retiring.get(cluster);
    if (!old) return;
    this.#retiring.delete(cluster);
    this.#stopCluster(old);
  }

  #stopCluster(cluster: RemoteCluster): void {
    cluster.stop().catch((err: unknown) => this.#log.warn('stopping remote cluster', { cluster: cluster.id, error: errorMessage(err) }));
  }

  #recordStatus(cluster: RemoteCluster): void {
    if (cluster.status === 'closed') return;
    if (cluster.status !== 'syncing') this.#retire(cluster);
    for (const status of SYNC_STATUSES)
      this.#metrics?.syncStatus.set({ cluster: cluster.id, cluster_type: 'remote', status }, status === cluster.status ? 1 : 0);
  }
}

function pick(m: RemoteSecret['metadata']): RemoteSecret['metadata'] {
  return {
    ...(m?.name !== undefined ? { name: m.name } : {}),
    ...(m?.namespace !== undefined ? { namespace: m.namespace } : {}),
    ...(m?.resourceVersion !== undefined ? { resourceVersion: m.resourceVersion } : {}),
  };
}

/** istiod's multicluster metrics, under its names. */
function createMetrics(registry: Registry) {
  const registers = [registry];
  return {
    managed: new Gauge({
      name: 'istiod_managed_clusters',
      help: 'Number of clusters managed by istiod',
      labelNames: ['cluster_type'],
      registers,
    }),
    syncStatus: new Gauge({
      name: 'istiod_remote_cluster_sync_status',
      help: 'Current synchronization state of remote clusters managed by istiod. One sample per cluster and state; a value of 1 indicates the cluster is in that state.',
      labelNames: ['cluster', 'cluster_type', 'status'],
      registers,
    }),
    timeouts: new Counter({
      name: 'remote_cluster_sync_timeouts_total',
      help: 'Number of times remote clusters took too long to sync, causing slow startup that excludes remote clusters.',
      labelNames: ['cluster'],
      registers,
    }),
    secretEvents: new Counter({
      name: 'remote_cluster_secret_events_total',
      help: 'Number of remote cluster secret events.',
      labelNames: ['event'],
      registers,
    }),
  };
}
