import type { RegistrySnapshot, WorkloadInstance, WorkloadInstances } from './model.js';

/** Workload instances in a namespace → list (name order); the list objects are never changed. */
export class WorkloadInstanceMap implements WorkloadInstances {
  static readonly EMPTY = new WorkloadInstanceMap(new Map());

  constructor(readonly byNamespace: ReadonlyMap<string, readonly WorkloadInstance[]>) {}

  inNamespace(namespace: string): readonly WorkloadInstance[] {
    return this.byNamespace.get(namespace) ?? [];
  }
}

/**
 * The workload instances of several registries as one: the single registry's own object when only
 * one has them (so identity still tells whether they changed), a concatenation otherwise.
 */
export function workloadInstancesOf(registries: readonly RegistrySnapshot[]): WorkloadInstances | undefined {
  const sets = registries.flatMap((r) => (r.workloadInstances ? [r.workloadInstances] : []));
  if (sets.length <= 1) return sets[0];
  return { inNamespace: (namespace) => sets.flatMap((s) => s.inNamespace(namespace)) };
}
