/**
 * The mesh config from the cluster, as istiod reads it: ConfigMap `istio` (or `istio-<revision>`)
 * in the system namespace, key `mesh`, watched. A missing ConfigMap or key means istiod's
 * defaults; an invalid one is reported and the last valid config stays in force.
 */
import type { V1ConfigMap } from '@kubernetes/client-node';
import type { KubeConfig } from '../kube/index.js';
import { parseMeshConfig, type MeshConfigFile } from '../config/index.js';
import { errorMessage } from '../util/errors.js';
import type { Logger } from '../util/log.js';
import { type BackoffOptions, Reflector } from '../config/sources/kube/index.js';

export interface MeshConfigMapOptions {
  readonly kubeConfig: KubeConfig;
  readonly logger: Logger;
  /** The system namespace (POD_NAMESPACE, default istio-system). */
  readonly namespace: string;
  /** ConfigMap name (istiod: `istio`, `istio-<revision>` for a revision). */
  readonly name?: string;
  /** --domain: MeshConfig does not carry it. */
  readonly domain: string;
  readonly backoff?: BackoffOptions;
}

export const MESH_CONFIGMAP_KEY = 'mesh';

export class MeshConfigMap {
  readonly #opts: MeshConfigMapOptions;
  readonly #name: string;
  readonly #reflector: Reflector<V1ConfigMap>;
  readonly #listeners = new Set<(c: MeshConfigFile) => void>();
  #current: MeshConfigFile;
  #lastText: string | undefined;

  constructor(opts: MeshConfigMapOptions) {
    this.#opts = opts;
    this.#name = opts.name ?? 'istio';
    this.#current = parseMeshConfig('', 'defaults', opts.domain);
    this.#reflector = new Reflector<V1ConfigMap>({
      name: `configmaps/${opts.namespace}`,
      kubeConfig: opts.kubeConfig,
      // The system namespace's ConfigMaps are few: watch them all, pick ours.
      targets: [{ path: `/api/v1/namespaces/${opts.namespace}/configmaps` }],
      logger: opts.logger,
      onBatch: () => this.#reload(false),
      ...(opts.backoff ? { backoff: opts.backoff } : {}),
    });
  }

  /** Resolves once the namespace was listed and the first config read. */
  async start(): Promise<void> {
    await this.#reflector.start();
    this.#reload(true);
  }

  stop(): Promise<void> {
    return this.#reflector.stop();
  }

  current(): MeshConfigFile {
    return this.#current;
  }

  /** Called with each new valid config; returns the unsubscribe. */
  onChange(fn: (c: MeshConfigFile) => void): () => void {
    const entry = (c: MeshConfigFile): void => fn(c);
    this.#listeners.add(entry);
    return () => void this.#listeners.delete(entry);
  }

  #reload(initial: boolean): void {
    const cm = this.#reflector.get(this.#opts.namespace, this.#name);
    const text = cm?.data?.[MESH_CONFIGMAP_KEY] ?? '';
    if (text === this.#lastText) return;
    this.#lastText = text;
    const origin = `ConfigMap ${this.#opts.namespace}/${this.#name} key ${MESH_CONFIGMAP_KEY}`;
    let parsed: MeshConfigFile;
    try {
      parsed = parseMeshConfig(text, origin, this.#opts.domain);
    } catch (err) {
      this.#opts.logger.error('invalid mesh config; keeping the previous one', { error: errorMessage(err) });
      return;
    }
    this.#current = parsed;
    this.#opts.logger.info('mesh config loaded', { from: cm ? origin : 'defaults (no ConfigMap)', ignoredFields: parsed.ignoredFields });
    if (initial) return;
    for (const fn of [...this.#listeners]) fn(parsed);
  }
}
