/**
 * The differences from istiod that meshpilot makes on purpose, each with its reason: the one list
 * the whole-resource comparison (istiod-whole.test.ts) accepts. An entry that no longer matches
 * anything fails the test (remove it).
 */
import type { Case } from './corpora.js';
import type { LeafDiff } from './leaves.js';

export interface Deliberate {
  readonly id: string;
  readonly reason: string;
  /** `corpus/scenario proxy` the entry applies to; all when absent. */
  readonly where?: RegExp;
  /** `type name` of the resource. */
  readonly resource?: RegExp;
  /** The leaf path (`''` for a resource present on one side only). */
  readonly path?: RegExp;
  readonly when?: (d: LeafDiff) => boolean;
}

export function explains(k: Deliberate, c: Case, d: LeafDiff): boolean {
  return (k.where?.test(`${c.corpus}/${c.scenario} ${c.proxy}`) ?? true) &&
    (k.resource?.test(`${d.type} ${d.name}`) ?? true) &&
    (k.path?.test(d.path) ?? true) &&
    (k.when?.(d) ?? true);
}

export const DELIBERATE: readonly Deliberate[] = [];
