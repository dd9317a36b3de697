/**
 * "The oldest wins": the order istiod gives config of one kind wherever precedence between objects
 * matters (PeerAuthentication, Sidecar, ProxyConfig, Telemetry, DestinationRule, VirtualService,
 * Gateway, Gateway API routes). One home, so that every place orders alike.
 *
 * metadata.creationTimestamp (ms) comes first. Objects from a config directory usually have none:
 * they count as created at time 0, older than any API object, and among themselves fall back to
 * the name order istiod uses for equal creation times (Kubernetes stores seconds, so equal times
 * are common there too).
 */
import type { Config } from './config.js';
import { compareIds } from '../util/order.js';

const created = (c: Config): number => c.meta.creationTimestamp ?? 0;

/** istiod's configCompareByCreationTime (pilot/pkg/model/config.go): creation time, then name, then namespace. */
export const byCreationTime = (a: Config, b: Config): number =>
  created(a) - created(b) || compareIds(a.meta.name, b.meta.name) || compareIds(a.meta.namespace, b.meta.namespace);

/**
 * The Gateway API controller's variant (pilot/pkg/config/kube/gateway/conversion.go
 * sortConfigByCreationTime, sortRoutesByCreationTime): creation time, then namespace, then name.
 */
export const byCreationTimeGatewayApi = (a: Config, b: Config): number =>
  created(a) - created(b) || compareIds(a.meta.namespace, b.meta.namespace) || compareIds(a.meta.name, b.meta.name);

// Store lists are immutable and cached per snapshot, so their creation-ordered copies are too:
// per-proxy lookups (a workload's Sidecar, its PeerAuthentications) sort nothing.
const ordered = new WeakMap<readonly Config[], readonly Config[]>();

/** `list` oldest first (byCreationTime); computed once per list object. */
export function inCreationOrder<C extends Config>(list: readonly C[]): readonly C[] {
  if (list.length < 2) return list;
  let out = ordered.get(list);
  if (!out) {
    out = Object.freeze([...list].sort(byCreationTime));
    ordered.set(list, out);
  }
  return out as readonly C[];
}

/** The oldest of `configs` (byCreationTime), or undefined when there is none. */
export function oldestConfig<C extends Config>(configs: Iterable<C>): C | undefined {
  let oldest: C | undefined;
  for (const c of configs) if (oldest === undefined || byCreationTime(c, oldest) < 0) oldest = c;
  return oldest;
}
