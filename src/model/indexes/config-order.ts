import type { Config } from '../../config/config.js';
import { compareIds } from '../../util/order.js';

/**
 * The order in which config of one kind takes precedence when istiod would use creation time:
 * file objects have none, so namespace, then name, compared as Go compares strings (code points).
 */
export const byNamespaceName = (a: Config, b: Config): number => compareIds(a.meta.namespace, b.meta.namespace) || compareIds(a.meta.name, b.meta.name);
