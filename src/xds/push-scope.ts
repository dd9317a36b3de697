import {
  gammaParentHosts,
  type RouteKind,
  isProxyless,
  type Proxy,
  parseRegistryKey,
  type PushContext,
  type PushRequest,
  buildClusterName,
  inboundVipClusterName,
  parseClusterName,
  sniDnatClusterName,
} from '../model/index.js';
import { type Config, type KindName, KINDS, hostsOverlap, resolveShortName, labelsSubsetOf, workloadEntryLabels } from '../config/index.js';
import type { WatchedResource } from './watched-resource.js';
import type { Connection } from './connection.js';
import { TypeUrl } from './type-urls.js';

function parseKey(key: string): { kind: KindName; namespace: string; name: string } | undefined {
  const [kind, namespace, name] = key.split('/');
  if (kind === undefined || namespace === undefined || name === undefined || !(kind in KINDS)) return undefined;
  return { kind: kind as KindName, namespace, name };
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
      const labels = workloadEntryLabels(we);
      const out: string[] = [];
      for (const se of push.snapshot.list('ServiceEntry', we.meta.namespace)) {
        const sel = se.spec.workloadSelector?.labels;
        if (sel && labelsSubsetOf(sel, labels)) out.push(...se.spec.hosts);
      }
      // Kubernetes Services select WorkloadEntries of their namespace too.
      out.push(...push.kubeServicesSelecting(we.meta.namespace, labels));
      return out;
    }
    // A route's mesh side is its Service parents' hosts (GAMMA); its Gateway side reaches routers, pushed anyway.
    case 'HTTPRoute':
    case 'GRPCRoute':
      return gammaParentHosts(c as Config<RouteKind>, domain);
    default:
      return 'all';
  }
}

/**
 * What a push may change: hosts (VirtualService, DestinationRule, ServiceEntry, WorkloadEntry,
 * registry services and endpoints),
 * namespaces whose workloads' own config changes (a Sidecar, or a policy of that namespace: their
 * inbound listeners), namespaces whose services' client config changes (a PeerAuthentication there
 * changes auto-mTLS towards them). Gateway-only config (Gateway, Secret) adds nothing: routers
 * are pushed for every change. 'all' when the request cannot be narrowed (no keys, unknown kinds, the mesh root namespace).
 */
export interface ChangeScope {
  readonly hosts: ReadonlySet<string>;
  readonly workloadNamespaces: ReadonlySet<string>;
  readonly serviceNamespaces: ReadonlySet<string>;
  /**
   * Workloads a selector-scoped change touches, by namespace (a Telemetry with a workload selector
   * before and after: only the proxies its old or new selector matches).
   */
  readonly selectedWorkloads?: ReadonlyMap<string, readonly Readonly<Record<string, string>>[]>;
  /** Whether the change touches what ambient's workload discovery reads (ztunnels are pushed only then). */
  readonly ambient: boolean;
}

type Labels = Readonly<Record<string, string>>;

/**
 * The selectors of a Telemetry's old and new versions when each selects workloads by label (or
 * only Gateway API gateways by targetRefs, which are routers, pushed anyway); undefined when a
 * version is namespace-wide.
 */
function telemetrySelectors(pushes: readonly PushContext[], namespace: string, name: string): Labels[] | undefined {
  const out: Labels[] = [];
  for (const push of pushes) {
    const t = push.snapshot.get('Telemetry', namespace, name)?.spec;
    if (!t) continue;
    if (t.targetRefs.length > 0 || t.targetRef) continue;
    const labels = t.selector?.matchLabels ?? {};
    if (Object.keys(labels).length === 0) return undefined;
    out.push(labels);
  }
  return out;
}

const selectedBy = (scope: ChangeScope, proxy: Proxy): boolean =>
  scope.selectedWorkloads?.get(proxy.namespace)?.some((s) => labelsSubsetOf(s, proxy.labels)) ?? false;

export type PushScope = ChangeScope | 'all';

// Gateway API Gateways, classes and L4 routes only shape gateways (meshpilot has no mesh TCPRoute/TLSRoute).
const ROUTER_KINDS = new Set<KindName>(['Gateway', 'Secret', 'KubernetesGateway', 'GatewayClass', 'TCPRoute', 'TLSRoute']);
const WORKLOAD_KINDS = new Set<KindName>([
  'Sidecar',
  'AuthorizationPolicy',
  'RequestAuthentication',
  'PeerAuthentication',
  'WasmPlugin',
  'EnvoyFilter',
  'Telemetry',
]);

/** Config kinds the ambient index and ztunnel's policies are built from. */
const AMBIENT_KINDS = new Set<KindName>([
  'ServiceEntry',
  'WorkloadEntry',
  'KubernetesGateway',
  'GatewayClass',
  'AuthorizationPolicy',
  'PeerAuthentication',
]);

/** Whether one changed key is read by ambient's workload discovery (a registry `Ambient` key or an ambient kind). */
function ambientKey(key: string): boolean {
  const r = parseRegistryKey(key);
  if (r) return r.kind === 'Ambient';
  const k = parseKey(key);
  return k === undefined || AMBIENT_KINDS.has(k.kind);
}

/** Whether a request reaches ztunnels: it names something ambient reads, or names nothing (everything). */
export function touchesAmbient(req: PushRequest): boolean {
  if (req.configsUpdated.size === 0) return true;
  for (const key of req.configsUpdated) if (ambientKey(key)) return true;
  return false;
}

/**
 * Which hosts and namespaces a request touches, judged on both the old and the new snapshot (a
 * VirtualService that moved from host a to host b touches both).
 */
export function pushScope(req: PushRequest, oldPush: PushContext | undefined, newPush: PushContext): PushScope {
  if (req.configsUpdated.size === 0 || !oldPush) return 'all';
  const hosts = new Set<string>();
  const workloadNamespaces = new Set<string>();
  const serviceNamespaces = new Set<string>();
  const selectedWorkloads = new Map<string, Labels[]>();
  const ambient = touchesAmbient(req);
  for (const key of req.configsUpdated) {
    const registryChange = parseRegistryKey(key);
    if (registryChange) {
      if (registryChange.kind !== 'Ambient') hosts.add(registryChange.hostname);
      continue;
    }
    const k = parseKey(key);
    if (!k) return 'all';
    if (ROUTER_KINDS.has(k.kind)) continue;
    if (WORKLOAD_KINDS.has(k.kind)) {
      if (k.namespace === newPush.mesh.rootNamespace) return 'all';
      const selectors = k.kind === 'Telemetry' ? telemetrySelectors([oldPush, newPush], k.namespace, k.name) : undefined;
      if (selectors) {
        selectedWorkloads.set(k.namespace, [...(selectedWorkloads.get(k.namespace) ?? []), ...selectors]);
        continue;
      }
      workloadNamespaces.add(k.namespace);
      if (k.kind === 'PeerAuthentication') serviceNamespaces.add(k.namespace);
      continue;
    }
    for (const push of [oldPush, newPush]) {
      const c = push.snapshot.get(k.kind, k.namespace, k.name);
      if (!c) continue;
      const hs = hostsOf(c, push, push.mesh.domain);
      if (hs === 'all') return 'all';
      for (const h of hs) hosts.add(h);
    }
  }
  return { hosts, workloadNamespaces, serviceNamespaces, ambient, ...(selectedWorkloads.size > 0 ? { selectedWorkloads } : {}) };
}

/** The hosts a connection's subscriptions depend on, or 'all' for wildcard watches. */
export function connectionHosts(conn: Connection): ReadonlySet<string> | 'all' {
  const watched = conn.watchedTypes();
  // Envoy watches LDS/CDS by wildcard: settle that before parsing hundreds of EDS names.
  if (watched.some((w) => w.wildcard)) return 'all';
  const hosts = new Set<string>();
  for (const w of watched) {
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

/** One snapshot's view of a Sidecar scope for scoping: its hosts and the namespaces of its services. */
interface ScopeIndex {
  readonly hosts: HostIndex;
  readonly namespaces: ReadonlySet<string>;
}

/**
 * What one planning pass works out once and every proxy reuses (a VirtualService edit at 2000
 * sidecars checked the same ten scopes and walked every proxy's instances 4000 times): per
 * snapshot, whether a Sidecar scope sees a changed host, and which addresses serve a changed host.
 */
export class ScopeMemo {
  readonly #scopes = new Map<PushContext, Map<string, boolean>>();
  readonly #addresses = new Map<PushContext, ReadonlySet<string>>();

  /** Does the change touch the services the proxy's Sidecar scope admits, in one snapshot? Judged once per scope. */
  scopeTouched(push: PushContext, proxy: Proxy, scope: ChangeScope): boolean {
    let judged = this.#scopes.get(push);
    if (!judged) this.#scopes.set(push, (judged = new Map()));
    const scopeKey = push.scopeServicesKey(proxy);
    let touched = judged.get(scopeKey);
    if (touched === undefined) {
      const sidecarScope = push.sidecarScope(proxy);
      const visible = push.derive(`scope-index|${scopeKey}`, (): ScopeIndex => ({
        hosts: hostIndex(sidecarScope.services.map((s) => s.hostname)),
        namespaces: new Set(sidecarScope.services.map((s) => s.namespace)),
      }));
      touched =
        [...scope.serviceNamespaces].some((ns) => visible.namespaces.has(ns)) ||
        [...scope.hosts].some((changed) => touches(changed, visible.hosts));
      judged.set(scopeKey, touched);
    }
    return touched;
  }

  /** The addresses of every endpoint of a service whose host overlaps a changed host, in one snapshot. */
  changedHostAddresses(push: PushContext, scope: ChangeScope): ReadonlySet<string> {
    let out = this.#addresses.get(push);
    if (!out) {
      const addresses = new Set<string>();
      const changed = hostIndex(scope.hosts);
      for (const svc of push.registry.services) {
        if (!touches(svc.hostname, changed)) continue;
        for (const port of svc.ports)
          for (const e of push.registry.endpoints(svc.hostname, port.port, svc.namespace)) addresses.add(e.address);
      }
      this.#addresses.set(push, (out = addresses));
    }
    return out;
  }
}

/**
 * Does the change touch what an Envoy sidecar's wildcard config is built from, in one snapshot:
 * the services its Sidecar scope admits (judged once per scope), the services of its own workload
 * (inbound: its address serves a changed host), its namespace's workload policies?
 */
function touchesSidecar(conn: Connection, push: PushContext, scope: ChangeScope, ownInstances: boolean, memo: ScopeMemo): boolean {
  if (scope.workloadNamespaces.has(conn.proxy.namespace) || selectedBy(scope, conn.proxy)) return true;
  if (memo.scopeTouched(push, conn.proxy, scope)) return true;
  if (!ownInstances || scope.hosts.size === 0) return false;
  const addresses = memo.changedHostAddresses(push, scope);
  return conn.proxy.ipAddresses.some((ip) => addresses.has(ip));
}

/** Namespace of a cluster-local host (`name.ns.svc.<domain>`), if it is one. */
function hostNamespace(host: string): string | undefined {
  const parts = host.split('.');
  return parts.length >= 4 && parts[2] === 'svc' ? parts[1] : undefined;
}

/**
 * istiod's ProxyNeedsPush, by host and namespace: does anything this proxy watches depend on what
 * changed? Named subscriptions (proxyless) are judged by their names (and the namespace of their
 * own workload, for XdsServer listeners); an Envoy sidecar's wildcard subscriptions by what its
 * Sidecar scope sees in the snapshots before and after the change (a service leaving or entering
 * the scope counts), so a change in a namespace it does not import does not push to it. Routers
 * (gateways) are pushed for every change; Gateway and Secret changes reach routers only.
 */
export function proxyNeedsPush(
  conn: Connection,
  scope: PushScope,
  snapshots: readonly PushContext[] = [],
  memo: ScopeMemo = new ScopeMemo(),
): boolean {
  if (conn.proxy.type === 'ztunnel') return scope === 'all' || scope.ambient;
  if (scope === 'all' || conn.proxy.type === 'router') return true;
  const deps = connectionHosts(conn);
  if (deps === 'all') {
    if (conn.proxy.type !== 'sidecar' || isProxyless(conn.proxy) || snapshots.length === 0) return true;
    // A proxy's own instances depend on the registry alone: an older snapshot with the same
    // registry says nothing new, and it computes them uncached (it is superseded).
    const newest = snapshots[snapshots.length - 1];
    return snapshots.some((p) => touchesSidecar(conn, p, scope, p === newest || p.registry !== newest?.registry, memo));
  }
  if (scope.workloadNamespaces.has(conn.proxy.namespace) || selectedBy(scope, conn.proxy)) return true;
  for (const dep of deps) {
    const ns = hostNamespace(dep);
    if (ns !== undefined && scope.serviceNamespaces.has(ns)) return true;
  }
  for (const changed of scope.hosts) for (const dep of deps) if (hostsOverlap(changed, dep)) return true;
  return false;
}

/**
 * The ClusterLoadAssignment names a host's endpoints are served under in one push: per service
 * port, the name without subset and one per subset of any DestinationRule that may apply to the
 * host, plus the SNI-DNAT spellings routers use and the `inbound-vip` ones of waypoints. A superset of what any one proxy watches, so an
 * endpoint change is matched against subscriptions by set lookups, never by parsing every
 * watched name of every proxy.
 */
export function edsNamesOfHosts(push: PushContext, hosts: ReadonlySet<string>): Set<string> {
  const out = new Set<string>();
  for (const h of hosts) {
    const names = ['', ...push.subsetNamesOverlapping(h)];
    for (const port of push.registry.serviceByHost(h)?.ports ?? []) {
      for (const subset of names) {
        out.add(buildClusterName('outbound', port.port, subset, h));
        out.add(sniDnatClusterName(port.port, subset, h));
        // A waypoint's clusters for the host (when it is bound to one).
        for (const proto of ['http', 'tcp']) out.add(inboundVipClusterName(port.port, subset ? `${proto}/${subset}` : proto, h));
      }
    }
  }
  return out;
}

/** For an EDS-only request, the watched ClusterLoadAssignments it changed; else undefined (all). */
export function edsOnlyNames(w: WatchedResource, req: PushRequest): ReadonlySet<string> | undefined {
  if (req.full || w.typeUrl !== TypeUrl.ClusterLoadAssignment || !req.edsNames) return undefined;
  if (w.wildcard) return req.edsNames;
  const out = new Set<string>();
  for (const name of req.edsNames) if (w.names.has(name)) out.add(name);
  return out;
}
