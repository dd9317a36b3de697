import type { Config } from '../../config/index.js';
import { compareIds } from '../../util/order.js';

/**
 * A stable output order (statuses, conversion loops): namespace, then name, as Go compares strings.
 * Precedence between objects ("the oldest wins") is config/creation-order.ts.
 */
export const byNamespaceName = (a: Config, b: Config): number =>
  compareIds(a.meta.namespace, b.meta.namespace) || compareIds(a.meta.name, b.meta.name);

/** After entries were added to and removed from the lists of `keys`: emptied keys go, the others are put back in `order`. */
export function settleLists<K, V>(map: Map<K, readonly V[]>, keys: Iterable<K>, order: (a: V, b: V) => number): void {
  for (const k of keys) {
    const list = map.get(k);
    if (!list || list.length === 0) map.delete(k);
    else map.set(k, [...list].sort(order));
  }
}
