import { type ChangeSet, type PushContext, pushRequest, type PushRequest } from '../model/index.js';
import type { Connection } from './connection.js';
import type { ConnectionIndex } from './connection-index.js';
import { TypeUrl } from './type-urls.js';
import { edsNamesOfHosts, proxyNeedsPush, pushScope, ScopeMemo, touchesAmbient } from './push-scope.js';

/** Which connections a debounced change reaches, each with the request its push serves. */
export type PushPlan = [Connection, PushRequest][];

/**
 * Who a debounced change reaches (pure: the connections and snapshots in, the plan out). An
 * endpoint-only change is planned as EDS to its watchers; anything else, or an endpoint change
 * that shows up in other config, as a full push to the proxies whose scope it touches.
 */
export function planPush(
  req: PushRequest,
  old: PushContext | undefined,
  next: PushContext,
  changes: ChangeSet | 'all',
  connections: Iterable<Connection>,
  index: ConnectionIndex,
): PushPlan {
  return !req.full && old && changes !== 'all'
    ? planEndpointPush(req, old, next, changes, connections, index)
    : planFullPush(req, old, next, connections);
}

function planFullPush(req: PushRequest, old: PushContext | undefined, next: PushContext, connections: Iterable<Connection>): PushPlan {
  const full = req.full ? req : { ...req, full: true };
  const scope = pushScope(full, old, next);
  const snapshots = old ? [old, next] : [next];
  const out: PushPlan = [];
  const memo = new ScopeMemo();
  for (const conn of connections) if (proxyNeedsPush(conn, scope, snapshots, memo)) out.push([conn, full]);
  return out;
}

/**
 * EDS-only (istiod's incremental EDS): only proxies that watch a changed host's endpoints get a
 * push, and of EDS only. It becomes a full push when endpoints show up in other config: DNS
 * clusters carry them inline (CDS), and a changed set of service accounts changes client TLS
 * SANs. The workload whose own address changed gets a full push (its inbound config).
 */
function planEndpointPush(
  req: PushRequest,
  old: PushContext,
  next: PushContext,
  changes: ChangeSet,
  connections: Iterable<Connection>,
  index: ConnectionIndex,
): PushPlan {
  const hosts = changes.endpointHosts;
  if (hosts === 'all' || [...hosts].some((h) => endpointsShapeClusters(old, next, h))) return planFullPush(req, old, next, connections);
  const edsNames = edsNamesOfHosts(next, hosts);
  const eds = pushRequest({
    full: false,
    configsUpdated: req.configsUpdated,
    reason: req.reason,
    start: req.start,
    edsNames,
    ...(req.forced ? { forced: true } : {}),
  });
  const full = { ...req, full: true };
  const reach = index.endpointReach(edsNames, changes.instanceIps);
  for (const conn of nameTableReach(next, hosts, connections)) reach.set(conn, 'full');
  const plan: PushPlan = [...reach].map(([conn, need]) => [conn, need === 'full' ? full : eds]);
  // ztunnels watch no EDS: a workload change reaches them through their Address type.
  if (touchesAmbient(req)) for (const conn of connections) if (conn.proxy.type === 'ztunnel') plan.push([conn, full]);
  return plan;
}

/**
 * The proxies holding a DNS name table (NDS) in which a headless host's endpoints are listed:
 * its endpoints are its addresses there (istiod pushes NDS for headless endpoint changes too).
 */
function nameTableReach(next: PushContext, hosts: ReadonlySet<string>, connections: Iterable<Connection>): Connection[] {
  const headless = [...hosts].filter((h) => next.registry.serviceByHost(h)?.resolution === 'NONE');
  if (headless.length === 0) return [];
  const seen = new Map<string, boolean>();
  const out: Connection[] = [];
  for (const conn of connections) {
    if (!conn.watched(TypeUrl.NameTable)) continue;
    const key = next.sidecarScopeKey(conn.proxy);
    let sees = seen.get(key);
    if (sees === undefined) {
      const visible = new Set(next.sidecarScope(conn.proxy).services.map((s) => s.hostname));
      seen.set(key, (sees = headless.some((h) => visible.has(h))));
    }
    if (sees) out.push(conn);
  }
  return out;
}

/** Whether a host's endpoints appear outside EDS: inline in DNS clusters, or as the SAN set of its clients. */
function endpointsShapeClusters(old: PushContext, next: PushContext, host: string): boolean {
  const svc = next.registry.serviceByHost(host) ?? old.registry.serviceByHost(host);
  if (!svc) return false;
  if (svc.resolution === 'DNS' || svc.resolution === 'DNS_ROUND_ROBIN') return true;
  const accounts = (p: PushContext): string => {
    const s = p.registry.serviceByHost(host);
    if (!s) return '';
    const set = new Set<string>();
    for (const port of s.ports) for (const e of p.registry.endpoints(host, port.port, s.namespace)) set.add(e.serviceAccount);
    return [...set].sort().join(',');
  };
  return accounts(old) !== accounts(next);
}
