import type { Config } from '../config/config.js';
import type { KindName } from '../config/kinds.js';
import { KINDS } from '../config/kinds.js';
import { hostsOverlap, resolveShortName } from '../model/hosts.js';
import { isProxyless } from '../model/proxy.js';
import type { PushContext } from '../model/push-context.js';
import type { PushRequest } from '../model/push-request.js';
import type { WatchedResource } from './watched-resource.js';
import { parseClusterName } from '../networking/cluster-name.js';
import type { Connection } from './connection.js';
import { TypeUrl } from './type-urls.js';

/** The hosts a push may change, or 'all' when it cannot be scoped. */
export type PushScope = ReadonlySet<string> | 'all';

function parseKey(key: string): { kind: KindName; namespace: string; name: string } | undefined {
  const [kind, namespace, name] = key.split('/');
  if (kind === undefined || namespace === undefined || name === undefined || !(kind in KINDS)) return undefined;
  return { kind: kind as KindName, namespace, name };
}

function labelsMatch(selector: Readonly<Record<string, string>>, labels: Readonly<Record<string, string>>): boolean {
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}

function hostsOf(c: Config, push: PushContext, domain: string): string[] | 'all' {
  switch (c.meta.kind) {
    case 'VirtualService':
    case 'ServiceEntry':
      return (c as Config<'VirtualService' | 'ServiceEntry'>).spec.hosts.map((h) => resolveShortName(h, c.meta.namespace, domain));
    case 'DestinationRule':
      return [resolveShortName((c as Config<'DestinationRule'>).spec.host, c.meta.namespace, domain)];
    case 'WorkloadEntry': {
      const we = c as Config<'WorkloadEntry'>;
      const labels = { ...we.meta.labels, ...we.spec.labels };
      const out: string[] = [];
      for (const se of push.config.list('ServiceEntry', we.meta.namespace)) {
        const sel = se.spec.workloadSelector?.labels;
        if (sel && labelsMatch(sel, labels)) out.push(...se.spec.hosts);
      }
      return out;
    }
    default:
      return 'all';
  }
}

/**
 * Which hosts a request touches, judged on both the old and the new snapshot (a VirtualService
 * that moved from host a to host b touches both).
 */
export function pushScope(req: PushRequest, oldPush: PushContext | undefined, newPush: PushContext): PushScope {
  if (req.configsUpdated.size === 0 || !oldPush) return 'all';
  const hosts = new Set<string>();
  for (const key of req.configsUpdated) {
    const k = parseKey(key);
    if (!k) return 'all';
    for (const push of [oldPush, newPush]) {
      const c = push.config.get(k.kind, k.namespace, k.name);
      if (!c) continue;
      const hs = hostsOf(c, push, push.mesh.domain);
      if (hs === 'all') return 'all';
      for (const h of hs) hosts.add(h);
    }
  }
  return hosts;
}

/** The hosts a connection's subscriptions depend on, or 'all' for wildcard watches. */
export function connectionHosts(conn: Connection): ReadonlySet<string> | 'all' {
  const hosts = new Set<string>();
  for (const w of conn.watchedTypes()) {
    if (w.wildcard) return 'all';
    for (const name of w.names) {
      // Clusters, endpoints and proxyless routes are named `outbound|<port>|<subset>|<host>`.
      const c = parseClusterName(name);
      if (c) {
        hosts.add(c.host);
      } else if (w.typeUrl === TypeUrl.Listener || w.typeUrl === TypeUrl.RouteConfiguration) {
        const colon = name.lastIndexOf(':');
        hosts.add((colon > 0 ? name.slice(0, colon) : name).toLowerCase());
      } else {
        return 'all';
      }
    }
  }
  return hosts;
}

/** Hosts split for lookups: exact names in a set, wildcard patterns (`*.example.com`) apart. */
interface HostIndex {
  readonly exact: ReadonlySet<string>;
  readonly wildcards: readonly string[];
}

function hostIndex(hosts: Iterable<string>): HostIndex {
  const exact = new Set<string>();
  const wildcards: string[] = [];
  for (const h of hosts) {
    if (h.startsWith('*')) wildcards.push(h);
    else exact.add(h);
  }
  return { exact, wildcards };
}

/** Whether a changed host (exact or wildcard) overlaps any host of the index. */
function touches(changed: string, hosts: HostIndex): boolean {
  if (changed.startsWith('*')) return [...hosts.exact, ...hosts.wildcards].some((h) => hostsOverlap(changed, h));
  return hosts.exact.has(changed) || hosts.wildcards.some((w) => hostsOverlap(changed, w));
}

/**
 * Does the change touch what an Envoy sidecar's wildcard config is built from, in one snapshot:
 * the services its Sidecar scope admits (one index per scope, shared by its proxies) and the
 * services of its own workload (inbound)?
 */
function touchesSidecar(conn: Connection, push: PushContext, scope: ReadonlySet<string>): boolean {
  const sidecarScope = push.sidecarScope(conn.proxy);
  const visible = push.derive(`scope-hosts|${sidecarScope.key}`, () => hostIndex(sidecarScope.services.map((s) => s.hostname)));
  const own = hostIndex(push.serviceInstances(conn.proxy).map((i) => i.service.hostname));
  for (const changed of scope) if (touches(changed, visible) || touches(changed, own)) return true;
  return false;
}

/**
 * istiod's ProxyNeedsPush, by host: does anything this proxy watches depend on what changed?
 * Named subscriptions (proxyless) are judged by their names; an Envoy sidecar's wildcard
 * subscriptions by what its Sidecar scope sees in the snapshots before and after the change
 * (a service leaving or entering the scope counts), so a change in a namespace it does not import
 * does not push to it. Routers (gateways) are always pushed.
 */
export function proxyNeedsPush(conn: Connection, scope: PushScope, snapshots: readonly PushContext[] = []): boolean {
  if (scope === 'all') return true;
  const deps = connectionHosts(conn);
  if (deps === 'all') {
    if (conn.proxy.type !== 'sidecar' || isProxyless(conn.proxy) || snapshots.length === 0) return true;
    return snapshots.some((p) => touchesSidecar(conn, p, scope));
  }
  for (const changed of scope) for (const dep of deps) if (hostsOverlap(changed, dep)) return true;
  return false;
}

/**
 * Who an EDS-only change reaches: a proxy whose own address serves a changed instance needs a
 * full push (its inbound config); one watching a changed host's endpoints gets EDS; others nothing.
 */
export function endpointPushNeeds(conn: Connection, hosts: ReadonlySet<string>, instanceIps: ReadonlySet<string>): 'none' | 'eds' | 'full' {
  if (conn.proxy.ipAddresses.some((ip) => instanceIps.has(ip))) return 'full';
  const w = conn.watched(TypeUrl.ClusterLoadAssignment);
  if (!w) return 'none';
  if (w.wildcard) return 'eds';
  for (const name of w.names) {
    const host = parseClusterName(name)?.host;
    if (host !== undefined && hosts.has(host)) return 'eds';
  }
  return 'none';
}

/** For an EDS-only request, the watched ClusterLoadAssignments of the changed hosts; else undefined (all). */
export function edsOnlyNames(w: WatchedResource, req: PushRequest): ReadonlySet<string> | undefined {
  if (req.full || w.typeUrl !== TypeUrl.ClusterLoadAssignment || !req.edsHosts) return undefined;
  const out = new Set<string>();
  for (const name of w.names) {
    const host = parseClusterName(name)?.host;
    if (host !== undefined && req.edsHosts.has(host)) out.add(name);
  }
  return out;
}
