/**
 * The ambient index (istiod's AmbientIndexes over pilot/pkg/serviceregistry/ambient): every
 * workload and service of the mesh as the workload API's Address, named as ztunnel knows them
 * (a workload by its uid, a service by `namespace/hostname`).
 *
 * Kept like the other PushContext indexes: the next one is built from the previous one, and only
 * the objects that changed (found by identity: the config store and the Kubernetes registry keep
 * unchanged objects identical) are derived again, plus the workloads of a namespace whose services
 * changed (a service's selector decides which of them join it). A change to what binds everything
 * (waypoint Gateways, policies, namespace labels, the mesh's trust domain) rebuilds it whole. An
 * Address whose content did not change stays the same object, so its encoding is reused.
 */
import { clone, equals } from '@bufbuild/protobuf';
import {
  changedIdsBetween,
  serviceEntryVisibilityFor,
  type Config,
  type ConfigSnapshot,
  type KindName,
  type ServiceEntryVisibility,
} from '../../config/index.js';
import { AddressSchema, GatewayAddressSchema, Service_Visibility, type Address, type Workload } from '../../gen/workloadapi/workload_pb.js';
import { ipAddressText } from '../../util/ip.js';
import type { AmbientEndpointSlice, AmbientKubeState } from '../../registry/index.js';
import { kubeServiceInfo, serviceEntryInfos, type ServiceContext, type ServiceInfo } from './services.js';
import { Waypoints, type Waypoint } from './waypoints.js';
import {
  endpointSliceWorkloads,
  podWorkload,
  serviceEntryWorkloads,
  workloadEntryWorkload,
  type WorkloadAddress,
  type WorkloadContext,
} from './workloads.js';

type Labels = Readonly<Record<string, string>>;

export interface AmbientInputs {
  readonly config: ConfigSnapshot;
  readonly kube: AmbientKubeState;
  readonly domain: string;
  readonly trustDomain: string;
  /** The mesh root namespace (mesh-wide policies live there). */
  readonly rootNamespace: string;
  readonly clusterId: string;
  /** The network of this cluster's addresses ('' unless configured). */
  readonly network: string;
  /** MeshConfig.serviceEntryVisibility (absent: every ServiceEntry is public). */
  readonly serviceEntryVisibility?: ServiceEntryVisibility;
}

/** Workload.authorization_policies of a workload (namespace, labels). */
export type PolicyLookup = (namespace: string, labels: Labels) => string[];

/** One resource of the Address type. */
export interface AmbientAddress {
  readonly name: string;
  readonly address: Address;
}

/** What a build derived (for logs and tests): everything, or how many sources. */
export interface AmbientRebuild {
  readonly full: boolean;
  readonly services: number;
  readonly workloads: number;
}

/** Kinds whose change rebinds every workload and service (waypoints, policies). */
const BINDING_KINDS: readonly KindName[] = ['KubernetesGateway', 'GatewayClass', 'AuthorizationPolicy', 'PeerAuthentication'];
const NO_LABELS: Labels = Object.freeze({});
const NO_SLICES: ReadonlyMap<string, AmbientEndpointSlice> = new Map();

const split = (key: string): [string, string] => {
  const slash = key.indexOf('/');
  return [key.slice(0, slash), key.slice(slash + 1)];
};

/** Keys whose entry differs (by identity) between two maps. */
function changedKeys<T>(before: ReadonlyMap<string, T>, after: ReadonlyMap<string, T>): Set<string> {
  if (before === after) return new Set();
  const out = new Set<string>();
  for (const [k, v] of after) if (before.get(k) !== v) out.add(k);
  for (const k of before.keys()) if (!after.has(k)) out.add(k);
  return out;
}

function changedConfig(before: ConfigSnapshot, after: ConfigSnapshot, kind: 'ServiceEntry' | 'WorkloadEntry'): Set<string> {
  const a = before.byKind(kind);
  const b = after.byKind(kind);
  if (a === b) return new Set();
  const candidates = changedIdsBetween(a, b);
  if (!candidates) return changedKeys(a, b);
  return new Set([...candidates].filter((id) => a.get(id) !== b.get(id)));
}

/**
 * `next`, with each entry that equals the one `prev` had under its name replaced by that one: the
 * same Address and, for a service, the same selector and port names (which join workloads to it
 * but are not in the Address).
 */
function keepIdentical<T extends { readonly name: string; readonly address: Address }>(
  next: readonly T[],
  prev: readonly T[] | undefined,
  sameBesidesAddress: (a: T, b: T) => boolean = () => true,
): T[] {
  if (!prev || prev.length === 0) return [...next];
  const old = new Map(prev.map((p) => [p.name, p]));
  return next.map((n) => {
    const o = old.get(n.name);
    return o && (o.address === n.address || equals(AddressSchema, o.address, n.address)) && sameBesidesAddress(o, n) ? o : n;
  });
}

const sameJoin = (a: ServiceInfo, b: ServiceInfo): boolean =>
  JSON.stringify([a.selector, a.ports, a.sourceKind]) === JSON.stringify([b.selector, b.ports, b.sourceKind]);

/** What a build derives, and what the next build starts from. */
interface IndexState {
  readonly inputs: AmbientInputs;
  /** Service sources (`Service/ns/name`, `ServiceEntry/ns/name`) → their services. */
  readonly services: ReadonlyMap<string, readonly ServiceInfo[]>;
  /** Workload sources (`Pod/…`, `WorkloadEntry/…`, `ServiceEntry/…` for inline endpoints) → their workloads. */
  readonly workloads: ReadonlyMap<string, readonly WorkloadAddress[]>;
}

/** The services of each namespace in name order: a workload's services map is encoded in this order (its version must not depend on history). */
function servicesByNamespace(services: IndexState['services']): Map<string, ServiceInfo[]> {
  const m = new Map<string, ServiceInfo[]>();
  for (const list of services.values())
    for (const s of list) {
      const l = m.get(s.namespace);
      if (l) l.push(s);
      else m.set(s.namespace, [s]);
    }
  for (const list of m.values()) list.sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0));
  return m;
}

/**
 * The ServiceEntry services that are canonical for their host (istiod's selectWorkloadServices):
 * when no Kubernetes Service has the host, the oldest ServiceEntry service of it (ties: name order)
 * that is not of namespace visibility.
 */
function canonicalServiceEntries(services: IndexState['services']): Set<ServiceInfo> {
  const byHost = new Map<string, ServiceInfo[]>();
  for (const list of services.values())
    for (const s of list) {
      const l = byHost.get(s.hostname);
      if (l) l.push(s);
      else byHost.set(s.hostname, [s]);
    }
  const out = new Set<ServiceInfo>();
  for (const list of byHost.values()) {
    if (list.some((s) => s.sourceKind === 'Service')) continue;
    // A ServiceEntry seen only in its namespace cannot stand for the host mesh-wide.
    const candidates = list.filter(
      (s) => s.address.type.case !== 'service' || s.address.type.value.visibility !== Service_Visibility.NAMESPACE,
    );
    if (candidates.length === 0) continue;
    out.add(candidates.reduce((a, b) => (b.created < a.created || (b.created === a.created && b.name < a.name) ? b : a)));
  }
  return out;
}

/** A ServiceEntry service marked canonical: one copy per Address object, so its encoding is reused while it stands. */
const canonicalCopies = new WeakMap<Address, Address>();
function canonicalCopy(a: Address): Address {
  let c = canonicalCopies.get(a);
  if (!c) {
    c = clone(AddressSchema, a);
    if (c.type.case === 'service') c.type.value.canonical = true;
    canonicalCopies.set(a, c);
  }
  return c;
}

export class AmbientIndex {
  readonly #state: IndexState;
  #byNamespace: Map<string, ServiceInfo[]> | undefined;
  #all: readonly AmbientAddress[] | undefined;
  #byName: Map<string, AmbientAddress> | undefined;
  #waypoints: Waypoints | undefined;
  #workloadsByIp: Map<string, Workload> | undefined;

  private constructor(
    state: IndexState,
    readonly rebuild: AmbientRebuild,
  ) {
    this.#state = state;
  }

  get inputs(): AmbientInputs {
    return this.#state.inputs;
  }

  /**
   * The index of `inputs`, derived from `previous` when only objects changed. `policies` is called
   * during the build only (the index keeps no reference to it).
   */
  static build(inputs: AmbientInputs, policies: PolicyLookup, previous?: AmbientIndex): AmbientIndex {
    const p = previous?.inputs;
    const incremental =
      previous !== undefined &&
      p !== undefined &&
      p.domain === inputs.domain &&
      p.trustDomain === inputs.trustDomain &&
      p.rootNamespace === inputs.rootNamespace &&
      p.clusterId === inputs.clusterId &&
      p.network === inputs.network &&
      p.serviceEntryVisibility === inputs.serviceEntryVisibility &&
      p.kube.namespaces === inputs.kube.namespaces &&
      BINDING_KINDS.every((k) => p.config.byKind(k) === inputs.config.byKind(k));
    const { state, rebuild } = new Builder(inputs, policies, incremental ? previous.#state : undefined).build();
    return new AmbientIndex(state, rebuild);
  }

  /** The services of one namespace (any source), in name order, for selectors. */
  servicesIn(namespace: string): readonly ServiceInfo[] {
    this.#byNamespace ??= servicesByNamespace(this.#state.services);
    return this.#byNamespace.get(namespace) ?? [];
  }

  /**
   * Every Address in name order. On a name clash the first source wins (a Kubernetes Service
   * before a ServiceEntry of the same host, as istiod prefers).
   */
  addresses(): readonly AmbientAddress[] {
    if (!this.#all) {
      const byName = new Map<string, AmbientAddress>();
      const { services, workloads } = this.#state;
      const canonical = canonicalServiceEntries(services);
      for (const key of [...services.keys()].sort())
        for (const s of services.get(key) ?? [])
          if (!byName.has(s.name)) byName.set(s.name, canonical.has(s) ? { name: s.name, address: canonicalCopy(s.address) } : s);
      for (const key of [...workloads.keys()].sort())
        for (const w of workloads.get(key) ?? []) if (!byName.has(w.name)) byName.set(w.name, w);
      this.#byName = byName;
      this.#all = Object.freeze([...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)));
    }
    return this.#all;
  }

  byName(name: string): AmbientAddress | undefined {
    this.addresses();
    return this.#byName?.get(name);
  }

  /** The workload with this IP on this cluster's network (first by name on a clash). */
  workloadAt(ip: string): Workload | undefined {
    if (!this.#workloadsByIp) {
      const m = new Map<string, Workload>();
      for (const a of this.addresses())
        if (a.address.type.case === 'workload')
          for (const b of a.address.type.value.addresses) {
            const text = ipAddressText(b);
            if (text !== undefined && !m.has(text)) m.set(text, a.address.type.value);
          }
      this.#workloadsByIp = m;
    }
    return this.#workloadsByIp.get(ip);
  }

  /** The waypoint Gateway `namespace/name` of this snapshot, as services and workloads are bound to it. */
  waypoint(namespace: string, name: string): Waypoint | undefined {
    this.#waypoints ??= new Waypoints(this.#state.inputs.config, this.#state.inputs.domain);
    return this.#waypoints.get(namespace, name);
  }

  /**
   * What is bound to `waypoint` (istiod's ServicesForWaypoint and WorkloadsForWaypoint): the
   * services and workloads whose Address names it, each source in key order. The binding is the
   * one ztunnel is sent, so the waypoint serves exactly what ztunnel sends to it.
   */
  boundTo(waypoint: Waypoint): { readonly services: readonly ServiceInfo[]; readonly workloads: readonly WorkloadAddress[] } {
    const names = (a: Address): boolean => {
      const w = a.type.case === 'service' || a.type.case === 'workload' ? a.type.value.waypoint : undefined;
      return w !== undefined && equals(GatewayAddressSchema, w, waypoint.address);
    };
    const { services, workloads } = this.#state;
    return {
      services: [...services.keys()].sort().flatMap((k) => (services.get(k) ?? []).filter((s) => names(s.address))),
      workloads: [...workloads.keys()].sort().flatMap((k) => (workloads.get(k) ?? []).filter((w) => names(w.address))),
    };
  }
}

/** One build: the services first (workloads join them by selector), then the workloads. */
class Builder {
  readonly #waypoints: Waypoints;
  readonly #serviceCtx: ServiceContext;

  constructor(
    private readonly inputs: AmbientInputs,
    private readonly policies: PolicyLookup,
    private readonly previous: IndexState | undefined,
  ) {
    this.#waypoints = new Waypoints(inputs.config, inputs.domain);
    const namespaceLabels = (ns: string): Labels => inputs.kube.namespaces.get(ns) ?? NO_LABELS;
    this.#serviceCtx = {
      domain: inputs.domain,
      network: inputs.network,
      waypoints: this.#waypoints,
      namespaceLabels,
      serviceEntryVisibility: (ns) => serviceEntryVisibilityFor(inputs.serviceEntryVisibility, namespaceLabels(ns)),
    };
  }

  #serviceSource(key: string): ServiceInfo[] {
    const [kind, id] = [key.slice(0, key.indexOf('/')), key.slice(key.indexOf('/') + 1)];
    if (kind === 'Service') {
      const svc = this.inputs.kube.services.get(id);
      const info = svc ? kubeServiceInfo(svc, this.#serviceCtx) : undefined;
      return info ? [info] : [];
    }
    const [ns, name] = split(id);
    const se = this.inputs.config.get('ServiceEntry', ns, name);
    return se ? serviceEntryInfos(se, this.#serviceCtx) : [];
  }

  #workloadSource(key: string, ctx: WorkloadContext, services: ReadonlyMap<string, readonly ServiceInfo[]>): WorkloadAddress[] {
    const [kind, id] = [key.slice(0, key.indexOf('/')), key.slice(key.indexOf('/') + 1)];
    const [ns, name] = split(id);
    if (kind === 'Pod') {
      const pod = this.inputs.kube.pods.get(id);
      const w = pod ? podWorkload(pod, ctx) : undefined;
      return w ? [w] : [];
    }
    if (kind === 'WorkloadEntry') {
      const we = this.inputs.config.get('WorkloadEntry', ns, name);
      return we ? [workloadEntryWorkload(we, ctx)] : [];
    }
    if (kind === 'EndpointSlice') {
      const slice = this.inputs.kube.endpointSlices?.get(id);
      if (!slice) return [];
      const service = services.get(`Service/${ns}/${slice.serviceName}`)?.[0];
      return endpointSliceWorkloads(slice, service, ctx);
    }
    const se: Config<'ServiceEntry'> | undefined = this.inputs.config.get('ServiceEntry', ns, name);
    return se ? serviceEntryWorkloads(se, services.get(key) ?? [], ctx) : [];
  }

  build(): { state: IndexState; rebuild: AmbientRebuild } {
    const { inputs, previous: prev } = this;
    const prevInputs = prev?.inputs;
    // Service sources to derive: all, or those that changed.
    const serviceKeys = new Set<string>();
    const workloadKeys = new Set<string>();
    const touchedNamespaces = new Set<string>();
    if (prev && prevInputs) {
      for (const k of changedKeys(prevInputs.kube.services, inputs.kube.services)) serviceKeys.add(`Service/${k}`);
      for (const k of changedConfig(prevInputs.config, inputs.config, 'ServiceEntry')) {
        serviceKeys.add(`ServiceEntry/${k}`);
        workloadKeys.add(`ServiceEntry/${k}`);
      }
      for (const k of serviceKeys) touchedNamespaces.add(split(k.slice(k.indexOf('/') + 1))[0]);
      for (const k of changedKeys(prevInputs.kube.pods, inputs.kube.pods)) workloadKeys.add(`Pod/${k}`);
      for (const k of changedConfig(prevInputs.config, inputs.config, 'WorkloadEntry')) workloadKeys.add(`WorkloadEntry/${k}`);
      for (const k of changedKeys(prevInputs.kube.endpointSlices ?? NO_SLICES, inputs.kube.endpointSlices ?? NO_SLICES))
        workloadKeys.add(`EndpointSlice/${k}`);
      // A service change re-joins the workloads of its namespace (selectors).
      for (const ns of touchedNamespaces) {
        for (const k of inputs.kube.pods.keys()) if (split(k)[0] === ns) workloadKeys.add(`Pod/${k}`);
        for (const we of inputs.config.list('WorkloadEntry', ns)) workloadKeys.add(`WorkloadEntry/${ns}/${we.meta.name}`);
        for (const k of inputs.kube.endpointSlices?.keys() ?? []) if (split(k)[0] === ns) workloadKeys.add(`EndpointSlice/${k}`);
      }
    } else {
      for (const k of inputs.kube.services.keys()) serviceKeys.add(`Service/${k}`);
      for (const k of inputs.kube.pods.keys()) workloadKeys.add(`Pod/${k}`);
      for (const k of inputs.kube.endpointSlices?.keys() ?? []) workloadKeys.add(`EndpointSlice/${k}`);
      for (const se of inputs.config.list('ServiceEntry')) {
        serviceKeys.add(`ServiceEntry/${se.meta.namespace}/${se.meta.name}`);
        workloadKeys.add(`ServiceEntry/${se.meta.namespace}/${se.meta.name}`);
      }
      for (const we of inputs.config.list('WorkloadEntry')) workloadKeys.add(`WorkloadEntry/${we.meta.namespace}/${we.meta.name}`);
    }

    const services = new Map(prev?.services ?? []);
    for (const key of serviceKeys) {
      const next = keepIdentical(this.#serviceSource(key), prev?.services.get(key), sameJoin);
      if (next.length === 0) services.delete(key);
      else services.set(key, next);
    }
    // The services of a namespace as this build ends with them (workloads join by selector).
    const byNamespace = servicesByNamespace(services);
    const ctx: WorkloadContext = {
      clusterId: inputs.clusterId,
      trustDomain: inputs.trustDomain,
      network: inputs.network,
      waypoints: this.#waypoints,
      namespaceLabels: this.#serviceCtx.namespaceLabels,
      services: (ns) => byNamespace.get(ns) ?? [],
      policies: this.policies,
    };
    const workloads = new Map(prev?.workloads ?? []);
    for (const key of workloadKeys) {
      const next = keepIdentical(this.#workloadSource(key, ctx, services), prev?.workloads.get(key));
      if (next.length === 0) workloads.delete(key);
      else workloads.set(key, next);
    }
    return { state: { inputs, services, workloads }, rebuild: { full: !prev, services: serviceKeys.size, workloads: workloadKeys.size } };
  }
}
