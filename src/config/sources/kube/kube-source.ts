/**
 * Istio config from the Kubernetes API: one reflector (list + watch) per Istio kind, each object
 * through the same validation as files. An invalid object is reported (kind, namespace/name,
 * field path) and skipped; if an earlier version of it was valid, that version stays, as with
 * files. Deletes become delete changes; after a broken watch the reflector's relist hands over
 * only the net difference, so the store ends up equal to a fresh list with nothing lost or
 * applied twice. With `discoverySelectors`, objects outside the selected namespaces are left out
 * and come and go as namespaces' labels change.
 */
import type { KubeConfig } from '../../../kube/index.js';
import { configKeyString, type Config, type ConfigError, type ConfigKey } from '../../config.js';
import { boundedErrors, ERROR_BOUNDS, errorsDigest } from '../../error-bounds.js';
import { apiKindOf, KINDS, KIND_NAMES, type KindName } from '../../kinds.js';

import type { ConfigChange, ConfigSink, ConfigSource } from '../../store-types.js';
import { validateObject, type RawObject } from '../../validation/index.js';
import { MeshError } from '../../../util/errors.js';
import type { Logger } from '../../../util/log.js';
import type { BackoffOptions } from './backoff.js';
import { customResourceTargets, type CustomObject } from './kube-client.js';
import type { LabelSelector } from '../../labels.js';
import { NamespaceFilter, type NamespaceSelectionChange } from './namespace-filter.js';
import { Reflector, type ReflectorEvent, type ReflectorStats } from './reflector.js';
import { GATEWAY_API_GROUP } from '../../constants.js';

export interface KubeConfigSourceOptions {
  readonly kubeConfig: KubeConfig;
  readonly logger: Logger;
  /** Name under which errors are reported to the sink (default `kube`). */
  readonly name?: string;
  /** Kinds to watch (default: every Istio kind in KINDS; Secrets are not Istio kinds and are left out). */
  readonly kinds?: readonly KindName[];
  /** istiod's discoverySelectors: only namespaces whose labels match one of these (none: all namespaces). */
  readonly discoverySelectors?: readonly LabelSelector[];
  readonly backoff?: BackoffOptions;
}

export interface KubeKindStats extends ReflectorStats {
  /** The watch path in use (its version is the first one the server serves). */
  readonly path: string;
  readonly synced: boolean;
}

/**
 * Every Istio kind meshpilot serves (KINDS of the *.istio.io groups: not core/v1 Secret, and not
 * yet Gateway API, which is read from files only until its RBAC and status writing land).
 */
export const ISTIO_KINDS: readonly KindName[] = KIND_NAMES.filter((k) => KINDS[k].group.endsWith('.istio.io'));

/** Gateway API kinds: watched when asked for in `kinds` (GAMMA routes from the API server). */
export const GATEWAY_API_KINDS: readonly KindName[] = KIND_NAMES.filter((k) => KINDS[k].group === GATEWAY_API_GROUP);

/** The origin recorded on objects read from the API server (and in their error messages). */
export function kubeOrigin(kind: string, namespace: string, name: string): string {
  return `k8s://${namespace}/${kind}/${name}`;
}

export class KubeConfigSource implements ConfigSource {
  readonly #name: string;
  readonly #log: Logger;
  readonly #reflectors = new Map<KindName, Reflector<CustomObject>>();
  readonly #filter: NamespaceFilter | undefined;
  /** What the sink holds from this source, by configKeyString. */
  readonly #applied = new Map<string, Config>();
  /** Errors of the current version of each rejected object, by configKeyString. */
  readonly #errors = new Map<string, readonly ConfigError[]>();
  #sink: ConfigSink | undefined;
  /** Digest of the error set last reported (errorsDigest). */
  #lastReported: string | undefined;

  constructor(opts: KubeConfigSourceOptions) {
    this.#name = opts.name ?? 'kube';
    this.#log = opts.logger;
    const backoff = opts.backoff ? { backoff: opts.backoff } : {};
    if (opts.discoverySelectors && opts.discoverySelectors.length > 0) {
      this.#filter = new NamespaceFilter({
        kubeConfig: opts.kubeConfig,
        logger: opts.logger,
        selectors: opts.discoverySelectors,
        ...backoff,
      });
    }
    for (const kind of opts.kinds ?? ISTIO_KINDS) {
      const info = KINDS[kind];
      if (info.group === '')
        throw new MeshError('INVALID_ARGUMENT', `${kind} is not an Istio kind; the Kubernetes config source watches Istio kinds only`);
      this.#reflectors.set(
        kind,
        new Reflector<CustomObject>({
          name: `${info.plural}.${info.group}`,
          kubeConfig: opts.kubeConfig,
          targets: customResourceTargets(info.group, info.versions, info.plural),
          logger: opts.logger,
          onBatch: (events) => this.#onBatch(kind, events),
          ...backoff,
        }),
      );
    }
  }

  /** Resolves once every kind was listed (a kind whose CRD is missing counts as listed, empty). */
  async start(sink: ConfigSink): Promise<void> {
    if (this.#sink) throw new MeshError('INTERNAL', 'KubeConfigSource started twice');
    this.#sink = sink;
    if (this.#filter) {
      this.#filter.onChange((c) => this.#namespacesChanged(c));
      await this.#filter.start();
    }
    await Promise.all([...this.#reflectors.values()].map((r) => r.start()));
    if (!this.#sink) return; // stopped while starting
    this.#report(true);
    this.#log.info('kubernetes config loaded', { objects: this.#applied.size, rejected: this.#errors.size });
  }

  async stop(): Promise<void> {
    await Promise.all([...this.#reflectors.values()].map((r) => r.stop()));
    await this.#filter?.stop();
    this.#sink = undefined;
  }

  /** Per kind: list/watch counters and the path in use (debug output and tests). */
  stats(): ReadonlyMap<KindName, KubeKindStats> {
    return new Map([...this.#reflectors].map(([k, r]) => [k, { ...r.stats(), path: r.path, synced: r.synced }]));
  }

  #onBatch(kind: KindName, events: readonly ReflectorEvent<CustomObject>[]): void {
    const changes: ConfigChange[] = [];
    for (const e of events) this.#reconcile(kind, e.object, e.type === 'delete', changes);
    this.#commit(changes);
  }

  #namespacesChanged(c: NamespaceSelectionChange): void {
    if (c.added.size + c.removed.size === 0) return; // labels alone select nothing new
    const changes: ConfigChange[] = [];
    for (const [kind, r] of this.#reflectors) {
      for (const obj of r.list()) {
        const ns = obj.metadata?.namespace ?? '';
        if (c.added.has(ns) || c.removed.has(ns)) this.#reconcile(kind, obj, false, changes);
      }
    }
    this.#commit(changes);
  }

  /** Brings one object's state in the sink in line with the API server's version of it. */
  #reconcile(kind: KindName, raw: CustomObject, gone: boolean, changes: ConfigChange[]): void {
    const namespace = raw.metadata?.namespace ?? '';
    const name = raw.metadata?.name ?? '';
    const key: ConfigKey = { kind, namespace, name };
    const ks = configKeyString(key);
    if (gone || (this.#filter && !this.#filter.selects(namespace))) {
      this.#errors.delete(ks);
      if (this.#applied.delete(ks)) changes.push({ type: 'delete', key });
      return;
    }
    // List items carry no kind; Gateway API's Gateway is stored as KubernetesGateway.
    const doc: RawObject = { ...raw, kind: raw.kind ?? apiKindOf(KINDS[kind]) };
    const r = validateObject(doc, { file: kubeOrigin(kind, namespace, name) });
    if (!r.ok) {
      // Kept while the object stays invalid: bounded, and not referencing the object read from the API.
      this.#errors.set(ks, boundedErrors(r.errors, ERROR_BOUNDS.maxErrorsPerUnit));
      return;
    }
    this.#errors.delete(ks);
    if (this.#applied.get(ks)?.meta.resourceVersion === r.value.meta.resourceVersion) return; // status-only change
    this.#applied.set(ks, r.value);
    changes.push({ type: 'upsert', config: r.value });
  }

  #commit(changes: readonly ConfigChange[]): void {
    if (!this.#sink) return;
    if (changes.length > 0) this.#sink.apply(changes);
    this.#report(false);
  }

  #report(force: boolean): void {
    if (!this.#sink) return;
    const errors = [...this.#errors.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).flatMap(([, e]) => e);
    const digest = errorsDigest(errors);
    if (!force && digest === this.#lastReported) return;
    this.#lastReported = digest;
    this.#sink.reportErrors(this.#name, errors);
  }
}
