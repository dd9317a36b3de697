/**
 * Dependency tokens: what a cached value read (recorded by the PushContext while it was built) and
 * what a config change touches (computed here). A change invalidates exactly the cached values
 * that share a token with it. Spellings:
 *
 * - `<Kind>@<host>`: config of that kind for one FQDN (VirtualService, DestinationRule, ServiceEntry);
 * - `<Kind>@ns/<namespace>`: policies of one namespace (PeerAuthentication, AuthorizationPolicy,
 *   RequestAuthentication, Telemetry);
 * - `<Kind>@*`: anything of that kind (lists, Sidecars, Gateways, Secrets);
 * - `<Kind>/<namespace>/<name>`: one object;
 * - `endpoints@<host>`: the endpoints of one host; `instances@<ip>`: the service instances at one address.
 *
 * A wildcard host on either side cannot be narrowed: it reads or invalidates the whole kind.
 */
import { GATEWAY_API_MODEL_KINDS } from './gateway-api/gateway-api-model.js';
import {
  configKeyString,
  type Config,
  type ConfigKey,
  specJson,
  KINDS,
  type KindName,
  type ConfigSnapshot,
  isWildcard,
  resolveShortName,
  labelsSubsetOf,
  workloadEntryLabels,
} from '../config/index.js';
import type { Invalidation } from './xds-cache.js';
import type { PushRequest } from './push-request.js';
import {
  kubeServicesSelecting,
  type RegistrySnapshot,
  selectedEntryAddresses,
  type WorkloadInstances,
  workloadInstancesOf,
} from '../registry/index.js';
import { hostAddresses, parseRegistryKey } from './registry-keys.js';
import { gammaParentHosts, type RouteKind } from './gateway-api/gamma-routes.js';

export const ENDPOINTS = 'endpoints';
export const INSTANCES = 'instances';

export const anyOf = (kind: string): string => `${kind}@*`;
export const hostDep = (kind: string, host: string): string => (isWildcard(host) ? anyOf(kind) : `${kind}@${host}`);
export const namespaceDep = (kind: KindName, namespace: string): string => `${kind}@ns/${namespace}`;
export const endpointsDep = (host: string): string => hostDep(ENDPOINTS, host);
export const instancesDep = (ip: string): string => `${INSTANCES}@${ip}`;

/** What one push invalidates, plus what the EDS-only path needs to know about it. */
export interface ChangeSet extends Invalidation {
  /** Hosts whose endpoints changed ('all' when a wildcard host changed). */
  readonly endpointHosts: ReadonlySet<string> | 'all';
  /** Workload addresses whose service instances may have changed (their proxies' inbound config). */
  readonly instanceIps: ReadonlySet<string>;
  /** Kinds that changed. */
  readonly changedKinds: ReadonlySet<KindName>;
}

const POLICY_KINDS = new Set<KindName>(['PeerAuthentication', 'AuthorizationPolicy', 'RequestAuthentication', 'Telemetry']);

function parseKey(key: string): { kind: KindName; namespace: string; name: string } | undefined {
  const [kind, namespace, name] = key.split('/');
  if (kind === undefined || namespace === undefined || name === undefined || !(kind in KINDS)) return undefined;
  return { kind: kind as KindName, namespace, name };
}

/** The ServiceEntries (same namespace, matching workloadSelector) that select a WorkloadEntry. */
export function selectingServiceEntries(snapshot: ConfigSnapshot, we: Config<'WorkloadEntry'>): Config<'ServiceEntry'>[] {
  const labels = workloadEntryLabels(we);
  return snapshot.list('ServiceEntry', we.meta.namespace).filter((se) => {
    const sel = se.spec.workloadSelector?.labels;
    return sel !== undefined && labelsSubsetOf(sel, labels);
  });
}

/** Addresses of a ServiceEntry's workloads: inline endpoints, or the WorkloadEntries and Pods it selects. */
function serviceEntryAddresses(snapshot: ConfigSnapshot, se: Config<'ServiceEntry'>, pods: WorkloadInstances | undefined): string[] {
  const sel = se.spec.workloadSelector?.labels;
  if (!sel) return se.spec.endpoints.map((e) => e.address);
  const entries = snapshot
    .list('WorkloadEntry', se.meta.namespace)
    .filter((we) => labelsSubsetOf(sel, workloadEntryLabels(we)))
    .map((we) => we.spec.address);
  const selectedPods = (pods?.inNamespace(se.meta.namespace) ?? [])
    .filter((p) => labelsSubsetOf(sel, p.labels))
    .flatMap((p) => p.addresses);
  return [...entries, ...selectedPods];
}

/** The registries around a push, for registry change keys (registry-keys.ts). */
export interface RegistriesAround {
  /** The previous push's registry (all registries as one). */
  readonly before: RegistrySnapshot;
  /** The registries other than ServiceEntries, as the next push will see them. */
  readonly after: readonly RegistrySnapshot[];
}

/**
 * The tokens a push's changes touch, judged on the snapshots before and after (a VirtualService that
 * moved from host a to host b touches both). 'all' when the request cannot be narrowed (no keys, or
 * a key of an unknown kind, or a registry key without `registries`).
 */
export function changeSet(
  req: PushRequest,
  before: ConfigSnapshot | undefined,
  after: ConfigSnapshot,
  domain: string,
  rootNamespace: string,
  registries?: RegistriesAround,
): ChangeSet | 'all' {
  if (req.configsUpdated.size === 0 || !before) return 'all';
  const tokens = new Set<string>();
  const kinds = new Set<string>();
  const endpointHosts = new Set<string>();
  let allEndpoints = false;
  const instanceIps = new Set<string>();
  const changedKinds = new Set<KindName>();
  const pods = registries && workloadInstancesOf(registries.after);
  const host = (kind: string, h: string): void => {
    if (isWildcard(h)) kinds.add(kind);
    // Registry hosts keep the spelling of the ServiceEntry; lookups may use either.
    else for (const spelling of new Set([h, h.toLowerCase()])) tokens.add(`${kind}@${spelling}`);
  };
  const endpointsOf = (h: string): void => {
    host(ENDPOINTS, h);
    if (isWildcard(h)) allEndpoints = true;
    else endpointHosts.add(h);
  };
  for (const key of req.configsUpdated) {
    const r = parseRegistryKey(key);
    if (r) {
      // The ambient index is rebuilt per snapshot from what changed (not cached by token).
      if (r.kind === 'Ambient') continue;
      if (!registries) return 'all';
      // A service change reads as a ServiceEntry of that host (its clusters, listeners, the service list).
      if (r.kind === 'Service') {
        host('ServiceEntry', r.hostname);
        tokens.add(anyOf('ServiceEntry'));
      }
      endpointsOf(r.hostname);
      for (const reg of [registries.before, ...registries.after])
        for (const ip of hostAddresses(reg, r.hostname, r.namespace)) instanceIps.add(ip);
      // A Kubernetes Service whose selector now picks WorkloadEntries: their VMs' instances (the
      // next push's registry is not built yet; `before` holds the previously selected ones).
      if (r.kind === 'Service')
        for (const reg of registries.after) {
          const svc = reg.serviceByHost(r.hostname, r.namespace);
          if (svc) for (const ip of selectedEntryAddresses(svc, after)) instanceIps.add(ip);
        }
      // A ServiceEntry host whose selected Pods changed: the workloads it selects now (the next
      // push's ServiceEntry registry is not built yet; `before` holds the previous ones).
      for (const se of after.list('ServiceEntry', r.namespace)) {
        if (se.spec.workloadSelector && se.spec.hosts.includes(r.hostname))
          for (const ip of serviceEntryAddresses(after, se, pods)) instanceIps.add(ip);
      }
      continue;
    }
    const k = parseKey(key);
    if (!k) return 'all';
    changedKinds.add(k.kind);
    tokens.add(configKeyString(k));
    tokens.add(anyOf(k.kind));
    // Gateway API kinds become internal Gateways and gateway-bound VirtualServices (a route only
    // when it names a Gateway parent: a GAMMA route touches its parent hosts, below).
    if (GATEWAY_API_MODEL_KINDS.includes(k.kind) && [before, after].some((snap) => touchesGateways(snap, k))) {
      tokens.add(anyOf('Gateway'));
      tokens.add(anyOf('VirtualService'));
    }
    for (const snap of [before, after]) {
      const c = snap.get(k.kind, k.namespace, k.name);
      if (!c) continue;
      switch (c.meta.kind) {
        case 'VirtualService':
          for (const h of (c as Config<'VirtualService'>).spec.hosts) host(k.kind, resolveShortName(h, k.namespace, domain));
          break;
        case 'DestinationRule':
          host(k.kind, resolveShortName((c as Config<'DestinationRule'>).spec.host, k.namespace, domain));
          break;
        // GAMMA routes are VirtualServices of their parent services' hosts; a grant may change any of them.
        case 'HTTPRoute':
        case 'GRPCRoute':
          for (const h of gammaParentHosts(c as Config<RouteKind>, domain)) host('VirtualService', h);
          break;
        case 'ReferenceGrant':
          for (const route of [...snap.list('HTTPRoute'), ...snap.list('GRPCRoute')])
            for (const h of gammaParentHosts(route, domain)) host('VirtualService', h);
          break;
        case 'ServiceEntry': {
          const se = c as Config<'ServiceEntry'>;
          for (const h of se.spec.hosts) {
            host(k.kind, h);
            endpointsOf(h);
          }
          for (const ip of serviceEntryAddresses(snap, se, pods)) instanceIps.add(ip);
          // The first ServiceEntry of a namespace owns a host: this one taking or giving up a host
          // changes the service instances of the others in its namespace that list it.
          const hosts = new Set(se.spec.hosts);
          for (const other of snap.list('ServiceEntry', k.namespace)) {
            if (other !== se && other.spec.hosts.some((h) => hosts.has(h)))
              for (const ip of serviceEntryAddresses(snap, other, pods)) instanceIps.add(ip);
          }
          break;
        }
        case 'WorkloadEntry': {
          const we = c as Config<'WorkloadEntry'>;
          for (const se of selectingServiceEntries(snap, we)) for (const h of se.spec.hosts) endpointsOf(h);
          // Kubernetes Services select WorkloadEntries of their namespace too.
          for (const reg of registries?.after ?? [])
            for (const h of kubeServicesSelecting(reg, we.meta.namespace, workloadEntryLabels(we))) endpointsOf(h);
          if (we.spec.address !== '') instanceIps.add(we.spec.address);
          break;
        }
        default:
          if (POLICY_KINDS.has(k.kind) && k.namespace !== rootNamespace) tokens.add(namespaceDep(k.kind, k.namespace));
          else kinds.add(k.kind);
      }
    }
  }
  for (const ip of instanceIps) tokens.add(instancesDep(ip));
  return { tokens, kinds, endpointHosts: allEndpoints ? 'all' : endpointHosts, instanceIps, changedKinds };
}

/** Whether a changed Gateway API object can change what gateways serve. */
function touchesGateways(snap: ConfigSnapshot, k: ConfigKey): boolean {
  const c = snap.get(k.kind, k.namespace, k.name);
  if (!c) return false;
  if (k.kind === 'HTTPRoute' || k.kind === 'GRPCRoute') {
    const refs = specJson<{ parentRefs?: readonly { kind?: string }[] }>((c as Config<'HTTPRoute'>).spec).parentRefs ?? [];
    return refs.some((r) => (r.kind ?? 'Gateway') !== 'Service');
  }
  if (k.kind === 'ReferenceGrant') return snap.byKind('KubernetesGateway').size > 0;
  return true;
}
