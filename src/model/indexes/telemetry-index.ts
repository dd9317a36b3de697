/**
 * Telemetry objects by namespace and istiod's resolution for one workload (Telemetries
 * .applicableTelemetries): the root namespace's namespace-wide Telemetry, then the workload
 * namespace's, then every Telemetry of the workload's namespace that selects it (workload selector,
 * or targetRefs to its Gateway API Gateway) — later entries override earlier ones when merged.
 * "Namespace-wide" is the oldest one without selector and targetRefs, and workload ones apply
 * oldest first (creation time, then name, as istiod sorts them).
 */
import { type Config, type ConfigSnapshot, inCreationOrder, type Labels } from '../../config/index.js';
import type { AccessLogging, Metrics, Telemetry, Tracing } from '../../gen/telemetry/v1alpha1/telemetry_pb.js';
import type { XdsCache } from '../xds-cache.js';
import { namespaceDep } from '../dependency-tokens.js';
import { shouldAttach } from './security-index.js';

/** The Telemetry config in scope for one workload, in override order. */
export interface ApplicableTelemetry {
  /** Which Telemetries applied (root, namespace, workload ones): equal keys, equal telemetry config. */
  readonly key: string;
  readonly metrics: readonly Metrics[];
  /** Access logging per Telemetry that has some (istiod merges providers level by level). */
  readonly logging: readonly (readonly AccessLogging[])[];
  readonly tracing: readonly Tracing[];
}

const isNamespaceWide = (t: Telemetry): boolean =>
  Object.keys(t.selector?.matchLabels ?? {}).length === 0 && t.targetRefs.length === 0 && t.targetRef === undefined;

export class TelemetryIndex {
  private readonly byNamespace = new Map<string, Config<'Telemetry'>[]>();

  constructor(
    config: ConfigSnapshot,
    private readonly rootNamespace: string,
  ) {
    for (const c of inCreationOrder(config.list('Telemetry'))) {
      const list = this.byNamespace.get(c.meta.namespace);
      if (list) list.push(c);
      else this.byNamespace.set(c.meta.namespace, [c]);
    }
  }

  /** Whether any Telemetry exists (no Telemetry: every workload gets the mesh defaults). */
  get empty(): boolean {
    return this.byNamespace.size === 0;
  }

  private namespaceWide(namespace: string): Config<'Telemetry'> | undefined {
    return this.byNamespace.get(namespace)?.find((c) => isNamespaceWide(c.spec));
  }

  forWorkload(namespace: string, labels: Labels): ApplicableTelemetry {
    const applied: Config<'Telemetry'>[] = [];
    const root = this.rootNamespace !== '' ? this.namespaceWide(this.rootNamespace) : undefined;
    if (root) applied.push(root);
    const own = namespace !== this.rootNamespace ? this.namespaceWide(namespace) : undefined;
    if (own) applied.push(own);
    for (const c of this.byNamespace.get(namespace) ?? []) {
      if (!isNamespaceWide(c.spec) && shouldAttach(c.meta.namespace, c.spec, namespace, labels)) applied.push(c);
    }
    return {
      key: applied.map((c) => `${c.meta.namespace}/${c.meta.name}`).join(','),
      metrics: applied.flatMap((c) => c.spec.metrics),
      logging: applied.filter((c) => c.spec.accessLogging.length > 0).map((c) => c.spec.accessLogging),
      tracing: applied.flatMap((c) => c.spec.tracing),
    };
  }
}

/** The index as cached builds see it: a workload's telemetry depends on its namespace's and the root namespace's Telemetries. */
export class TrackedTelemetry {
  constructor(
    readonly index: TelemetryIndex,
    private readonly rootNamespace: string,
    private readonly cache: XdsCache,
  ) {}

  forWorkload(namespace: string, labels: Labels): ApplicableTelemetry {
    this.cache.record(namespaceDep('Telemetry', namespace));
    this.cache.record(namespaceDep('Telemetry', this.rootNamespace));
    return this.index.forWorkload(namespace, labels);
  }
}
