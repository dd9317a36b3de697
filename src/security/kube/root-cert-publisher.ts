/**
 * The `istio-ca-root-cert` ConfigMap in every namespace meshpilot sees (istiod's NamespaceController):
 * key `root-cert.pem` = the CA's trust bundle, label `istio.io/config: "true"` on creation. Workloads
 * mount it to verify istiod's serving certificate (istio-agent's default root).
 *
 * Watches, not polling: one reflector on Namespaces, one on ConfigMaps named istio-ca-root-cert in
 * all namespaces (field selector, so RBAC can limit list/watch to that name). A namespace is
 * reconciled when it appears or changes, when its ConfigMap is edited or deleted, and for every
 * namespace when the roots rotate. As istiod: kube-public, kube-node-lease and local-path-storage are
 * skipped (kube-system is served: ztunnel runs there), Terminating namespaces are skipped, a
 * namespace outside discoverySelectors is not written to (an existing ConfigMap there is left
 * alone), an update only rewrites `root-cert.pem` (other keys and labels stay), and a create that
 * races with a deleted namespace is dropped. Failed writes retry with backoff; a forbidden write is
 * logged as an error naming the permission.
 *
 * Runs as a singleton task (the leader only): `(signal) => Promise<void>`, resolving once stopped.
 */
import type { V1ConfigMap, V1Namespace } from '@kubernetes/client-node';
import { kubeClient, type KubeClient, type KubeConfig } from '../../kube/index.js';
import {
  namespaceTarget,
  ReconcileQueue,
  Reflector,
  startUntilAborted,
  statusCodeOf,
  type BackoffOptions,
} from '../../config/sources/kube/index.js';
import { anyLabelSelectorMatches, type LabelSelector } from '../../config/index.js';
import { errorMessage } from '../../util/errors.js';
import type { Logger } from '../../util/log.js';
import { ROOT_CERT_CONFIGMAP } from '../../config/constants.js';

export const ROOT_CERT_KEY = 'root-cert.pem';
export const ROOT_CERT_LABELS: Readonly<Record<string, string>> = { 'istio.io/config': 'true' };
/** istiod's inject.IgnoredNamespaces without kube-system. */
export const ROOT_CERT_IGNORED_NAMESPACES: ReadonlySet<string> = new Set(['kube-public', 'kube-node-lease', 'local-path-storage']);

const configMapsPath = (namespace: string): string => `/api/v1/namespaces/${encodeURIComponent(namespace)}/configmaps`;

export interface RootCertPublisherOptions {
  readonly kubeConfig: KubeConfig;
  readonly logger: Logger;
  /** The CA's trust bundle, PEM. */
  readonly trustBundlePem: () => string;
  /** Subscribes to root changes; returns the unsubscribe. */
  readonly onRootsChange: (listener: () => void) => () => void;
  /** The mesh config's discoverySelectors (empty: every namespace). */
  readonly discoverySelectors?: readonly LabelSelector[];
  readonly backoff?: BackoffOptions;
}

export interface RootCertPublisherStats {
  readonly created: number;
  readonly updated: number;
  readonly failed: number;
}

/** The singleton task: publishes until `signal` aborts. */
export function rootCertPublisherTask(opts: RootCertPublisherOptions): (signal: AbortSignal) => Promise<void> {
  return (signal) => new RootCertPublisher(opts).run(signal);
}

export class RootCertPublisher {
  readonly #opts: RootCertPublisherOptions;
  readonly #log: Logger;
  readonly #core: KubeClient;
  readonly #namespaces: Reflector<V1Namespace>;
  readonly #configMaps: Reflector<V1ConfigMap>;
  readonly #queue: ReconcileQueue;
  #forbiddenLogged = false;
  readonly #stats = { created: 0, updated: 0, failed: 0 };

  constructor(opts: RootCertPublisherOptions) {
    this.#opts = opts;
    this.#log = opts.logger;
    this.#core = kubeClient(opts.kubeConfig);
    this.#queue = new ReconcileQueue((ns) => this.#reconcile(ns), { initialMs: 100, maxMs: 60_000, ...opts.backoff });
    const fieldSelector = `metadata.name=${ROOT_CERT_CONFIGMAP}`;
    this.#namespaces = new Reflector<V1Namespace>({
      name: 'namespaces (root cert publisher)',
      kubeConfig: opts.kubeConfig,
      targets: [namespaceTarget()],
      logger: opts.logger,
      onBatch: (events) => events.forEach((e) => this.#enqueue(e.object.metadata?.name)),
      ...(opts.backoff ? { backoff: opts.backoff } : {}),
    });
    this.#configMaps = new Reflector<V1ConfigMap>({
      name: `configmaps/${ROOT_CERT_CONFIGMAP}`,
      kubeConfig: opts.kubeConfig,
      targets: [{ path: `/api/v1/configmaps?fieldSelector=${encodeURIComponent(fieldSelector)}` }],
      logger: opts.logger,
      onBatch: (events) => events.forEach((e) => this.#enqueue(e.object.metadata?.namespace)),
      ...(opts.backoff ? { backoff: opts.backoff } : {}),
    });
  }

  stats(): RootCertPublisherStats {
    return { ...this.#stats };
  }

  async run(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return;
    const unsubscribe = this.#opts.onRootsChange(() => {
      this.#log.info('trust bundle changed: updating istio-ca-root-cert in every namespace');
      for (const ns of this.#namespaces.list()) this.#enqueue(ns.metadata?.name);
    });
    try {
      // As istiod's WaitForCacheSync: no write before both caches hold what exists.
      await startUntilAborted([this.#namespaces, this.#configMaps], signal);
      if (signal.aborted) return;
      for (const ns of this.#namespaces.list()) this.#enqueue(ns.metadata?.name);
      this.#log.info('publishing istio-ca-root-cert', { namespaces: this.#namespaces.list().length });
      await this.#queue.run(signal);
    } finally {
      unsubscribe();
      await Promise.all([this.#namespaces.stop(), this.#configMaps.stop()]);
    }
  }

  #enqueue(namespace: string | undefined): void {
    this.#queue.add(namespace);
  }

  /** Brings one namespace's ConfigMap in line; false: try again later. */
  async #reconcile(namespace: string): Promise<boolean> {
    const ns = this.#namespaces.get('', namespace);
    if (!ns || ns.status?.phase === 'Terminating' || ROOT_CERT_IGNORED_NAMESPACES.has(namespace)) return true;
    const selectors = this.#opts.discoverySelectors ?? [];
    if (selectors.length > 0 && !anyLabelSelectorMatches(selectors, ns.metadata?.labels ?? {})) return true;
    const pem = this.#opts.trustBundlePem();
    const existing = this.#configMaps.get(namespace, ROOT_CERT_CONFIGMAP);
    try {
      if (!existing) {
        await this.#core.create(configMapsPath(namespace), {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: ROOT_CERT_CONFIGMAP, namespace, labels: { ...ROOT_CERT_LABELS } },
          data: { [ROOT_CERT_KEY]: pem },
        });
        this.#stats.created++;
        this.#log.info('created istio-ca-root-cert', { namespace });
        return true;
      }
      if (existing.data?.[ROOT_CERT_KEY] === pem) return true;
      await this.#core.update(`${configMapsPath(namespace)}/${ROOT_CERT_CONFIGMAP}`, {
        ...existing,
        apiVersion: 'v1',
        kind: 'ConfigMap',
        data: { ...existing.data, [ROOT_CERT_KEY]: pem },
      });
      this.#stats.updated++;
      this.#log.info('updated istio-ca-root-cert', { namespace });
      return true;
    } catch (err) {
      return this.#writeFailed(namespace, existing ? 'update' : 'create', err);
    }
  }

  #writeFailed(namespace: string, verb: 'create' | 'update', err: unknown): boolean {
    const status = statusCodeOf(err);
    const text = errorMessage(err);
    // The namespace went away or is being deleted: nothing to publish (istiod drops these too).
    if (verb === 'create' && (status === 404 || (status === 403 && /being terminated/i.test(text)))) return true;
    // A create that lost a race with another writer, or an update from a stale cache: the watch
    // brings the current object; look again.
    if (status === 409) return false;
    this.#stats.failed++;
    if (status === 403) {
      const fields = { namespace, status, error: text };
      const msg = `forbidden to ${verb} ConfigMap ${ROOT_CERT_CONFIGMAP}: meshpilot's service account needs create, update on configmaps (see manifests/rbac)`;
      if (this.#forbiddenLogged) this.#log.debug(msg, fields);
      else this.#log.error(msg, fields);
      this.#forbiddenLogged = true;
      return false;
    }
    this.#log.warn(`could not ${verb} istio-ca-root-cert; retrying`, { namespace, status, error: text });
    return false;
  }
}
