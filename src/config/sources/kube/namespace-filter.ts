/**
 * Which namespaces meshpilot looks at (istiod's `discoverySelectors`): a watch on Namespaces and
 * the set whose labels match any selector. Without selectors every namespace is selected, and
 * the watch still serves namespace labels.
 */
import type { V1Namespace } from '@kubernetes/client-node';
import type { KubeConfig } from '../../../kube/index.js';
import type { Logger } from '../../../util/log.js';
import type { BackoffOptions } from './backoff.js';
import { namespaceTarget } from './kube-client.js';
import { anyLabelSelectorMatches, type LabelSelector } from '../../labels.js';
import { Reflector, type ReflectorEvent } from './reflector.js';

export interface NamespaceFilterOptions {
  readonly kubeConfig: KubeConfig;
  readonly logger: Logger;
  readonly selectors?: readonly LabelSelector[];
  readonly backoff?: BackoffOptions;
}

/** Namespaces that entered or left the selection in one batch. */
export interface NamespaceSelectionChange {
  readonly added: ReadonlySet<string>;
  readonly removed: ReadonlySet<string>;
  /** Namespaces whose labels changed (added and deleted ones included), selected or not. */
  readonly labelsChanged: ReadonlySet<string>;
}

export class NamespaceFilter {
  readonly #selectors: readonly LabelSelector[];
  readonly #reflector: Reflector<V1Namespace>;
  readonly #selected = new Set<string>();
  readonly #listeners = new Set<(c: NamespaceSelectionChange) => void>();

  constructor(opts: NamespaceFilterOptions) {
    this.#selectors = opts.selectors ?? [];
    this.#reflector = new Reflector<V1Namespace>({
      name: 'namespaces',
      kubeConfig: opts.kubeConfig,
      targets: [namespaceTarget()],
      logger: opts.logger,
      onBatch: (events) => this.#onBatch(events),
      ...(opts.backoff ? { backoff: opts.backoff } : {}),
    });
  }

  start(): Promise<void> {
    return this.#reflector.start();
  }

  stop(): Promise<void> {
    return this.#reflector.stop();
  }

  /** Whether objects of this namespace count. With selectors, an unknown namespace does not. */
  selects(namespace: string): boolean {
    return this.#selectors.length === 0 || this.#selected.has(namespace);
  }

  labels(namespace: string): Readonly<Record<string, string>> | undefined {
    const ns = this.#reflector.get('', namespace);
    return ns ? (ns.metadata?.labels ?? {}) : undefined;
  }

  /** Called after each batch that changed the selection or a namespace's labels; returns the unsubscribe. */
  onChange(fn: (c: NamespaceSelectionChange) => void): () => void {
    const entry = (c: NamespaceSelectionChange): void => fn(c);
    this.#listeners.add(entry);
    return () => void this.#listeners.delete(entry);
  }

  #onBatch(events: readonly ReflectorEvent<V1Namespace>[]): void {
    const added = new Set<string>();
    const removed = new Set<string>();
    const labelsChanged = new Set<string>();
    for (const e of events) {
      const name = e.object.metadata?.name ?? '';
      const labels = e.object.metadata?.labels ?? {};
      if (e.type !== 'update' || !sameLabels(e.old.metadata?.labels ?? {}, labels)) labelsChanged.add(name);
      if (this.#selectors.length === 0) continue; // everything is selected, always
      const was = this.#selected.has(name);
      const now = e.type !== 'delete' && anyLabelSelectorMatches(this.#selectors, labels);
      if (now) this.#selected.add(name);
      else this.#selected.delete(name);
      if (now && !was) added.add(name);
      if (!now && was) removed.add(name);
    }
    // An add then delete in one batch nets out.
    for (const n of added) if (!this.#selected.has(n)) added.delete(n);
    for (const n of removed) if (this.#selected.has(n)) removed.delete(n);
    if (added.size + removed.size + labelsChanged.size === 0) return;
    const change: NamespaceSelectionChange = { added, removed, labelsChanged };
    for (const fn of [...this.#listeners]) fn(change);
  }
}

function sameLabels(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean {
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => b[k] === a[k]);
}
