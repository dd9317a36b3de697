import {
  conditionOf,
  type Config,
  type ConfigKey,
  type ConfigSnapshot,
  inCreationOrder,
  labelsSubsetOf,
  workloadEntryLabels,
} from '../config/index.js';
import { HEALTH_CHECKS_ENABLED_ANNOTATION, HEALTHY_CONDITION } from '../config/constants.js';
import { parseGoBool } from '../util/env.js';
import { ServiceEntry_Location, ServiceEntry_Resolution } from '../gen/networking/v1alpha3/service_entry_pb.js';
import type { WorkloadEntry } from '../gen/networking/v1alpha3/workload_entry_pb.js';
import { autoAllocateAddresses } from './auto-allocate.js';
import type {
  Endpoint,
  Locality,
  Protocol,
  RegistryInstance,
  RegistrySnapshot,
  Resolution,
  Service,
  ServicePort,
  WorkloadInstances,
} from './model.js';

const PROTOCOLS = new Set<Protocol>(['HTTP', 'HTTP2', 'HTTPS', 'GRPC', 'GRPC-WEB', 'TCP', 'TLS', 'MONGO', 'REDIS', 'MYSQL', 'UDP']);

/** Istio protocol from a ServiceEntry port's `protocol` (case-insensitive; unknown → UNSUPPORTED). */
export function parseProtocol(p: string): Protocol {
  const up = p.toUpperCase() as Protocol;
  return PROTOCOLS.has(up) ? up : 'UNSUPPORTED';
}

const RESOLUTIONS: Record<ServiceEntry_Resolution, Resolution> = {
  [ServiceEntry_Resolution.NONE]: 'NONE',
  [ServiceEntry_Resolution.STATIC]: 'STATIC',
  [ServiceEntry_Resolution.DNS]: 'DNS',
  [ServiceEntry_Resolution.DNS_ROUND_ROBIN]: 'DNS_ROUND_ROBIN',
  [ServiceEntry_Resolution.DYNAMIC_DNS]: 'DYNAMIC_DNS',
};

export function parseLocality(s: string): Locality {
  const [region = '', zone = '', subzone = ''] = s.split('/');
  return { region, zone, subzone };
}

/**
 * One endpoint of a workload for a service port. A workload without an address (validation allows
 * it only with a network) is kept, as istiod keeps it: proxies of other networks reach it through
 * its network's gateway, and no proxy is sent its empty address (src/networking/endpoint).
 */
function endpointsFor(svcPort: ServicePort, w: SelectedWorkload): Endpoint | undefined {
  return {
    address: w.address,
    port: w.ports[svcPort.name] ?? svcPort.targetPort ?? svcPort.port,
    servicePort: svcPort.port,
    labels: w.labels,
    locality: w.locality,
    weight: w.weight,
    serviceAccount: w.serviceAccount,
    network: w.network,
    source: w.source,
    ...(w.unhealthy ? { unhealthy: true } : {}),
  };
}

/** One address a ServiceEntry's endpoints come from: an inline endpoint, a WorkloadEntry or a Pod IP. */
interface SelectedWorkload {
  readonly address: string;
  /** Port name → workload port (WorkloadEntry `ports`); the ServiceEntry's target port otherwise. */
  readonly ports: Readonly<Record<string, number>>;
  readonly labels: Readonly<Record<string, string>>;
  readonly locality: Locality;
  readonly weight: number;
  readonly serviceAccount: string;
  readonly network: string;
  readonly source: ConfigKey;
  /** A health-checked WorkloadEntry that is not healthy: an instance at its address, but no endpoint to send to. */
  readonly unhealthy?: true;
}

function fromWorkloadEntry(
  we: WorkloadEntry,
  labels: Readonly<Record<string, string>>,
  source: ConfigKey,
  healthy = true,
): SelectedWorkload {
  return {
    ...(healthy ? {} : { unhealthy: true as const }),
    address: we.address,
    ports: we.ports,
    labels,
    locality: parseLocality(we.locality),
    weight: we.weight > 0 ? we.weight : 1,
    serviceAccount: we.serviceAccount,
    network: we.network,
    source,
  };
}

/**
 * istiod's isHealthy: an entry with health checks on (annotation `true`) serves only while its
 * Healthy condition is True — a new entry is unhealthy until its first probe passes. Others are
 * always healthy. Unhealthy endpoints are left out, as istiod's default
 * PILOT_SEND_UNHEALTHY_ENDPOINTS=false leaves them out of EDS.
 */
export function isHealthyWorkloadEntry(we: Config<'WorkloadEntry'>): boolean {
  if (parseGoBool(we.meta.annotations[HEALTH_CHECKS_ENABLED_ANNOTATION] ?? '') !== true) return true;
  return conditionOf(we, HEALTHY_CONDITION)?.status === 'True';
}

/** The served endpoints of a list: the same array when all are healthy, else one filtered copy per list (stable identity). */
const served = new WeakMap<readonly Endpoint[], readonly Endpoint[]>();
function servedEndpoints(all: readonly Endpoint[]): readonly Endpoint[] {
  if (!all.some((e) => e.unhealthy)) return all;
  let out = served.get(all);
  if (!out) served.set(all, (out = Object.freeze(all.filter((e) => !e.unhealthy))));
  return out;
}

/** A WorkloadEntry with its effective labels (workloadEntryLabels: spec labels, overridden by metadata labels). */
interface LabelledWorkload {
  readonly config: Config<'WorkloadEntry'>;
  readonly labels: Readonly<Record<string, string>>;
}

/** WorkloadEntries by namespace, in list order (built once per registry build). */
type WorkloadsByNamespace = ReadonlyMap<string, readonly LabelledWorkload[]>;

function workloadsByNamespace(workloads: readonly Config<'WorkloadEntry'>[]): WorkloadsByNamespace {
  const out = new Map<string, LabelledWorkload[]>();
  for (const w of workloads) {
    let list = out.get(w.meta.namespace);
    if (!list) out.set(w.meta.namespace, (list = []));
    list.push({ config: w, labels: workloadEntryLabels(w) });
  }
  return out;
}

/**
 * The workloads of one ServiceEntry: its inline endpoints, or what its selector picks in its
 * namespace — the WorkloadEntries (list order), then the Pods (name order; one per IP), as istiod's
 * ServiceEntry controller merges the Kubernetes workload instances with the WorkloadEntries.
 */
function selectedWorkloads(
  workloads: WorkloadsByNamespace,
  pods: WorkloadInstances | undefined,
  se: Config<'ServiceEntry'>,
): SelectedWorkload[] {
  const selector = se.spec.workloadSelector?.labels;
  if (!selector) return se.spec.endpoints.map((we) => fromWorkloadEntry(we, we.labels, keyOf(se)));
  const out: SelectedWorkload[] = [];
  for (const { config, labels } of workloads.get(se.meta.namespace) ?? []) {
    if (labelsSubsetOf(selector, labels)) out.push(fromWorkloadEntry(config.spec, labels, keyOf(config), isHealthyWorkloadEntry(config)));
  }
  for (const pod of pods?.inNamespace(se.meta.namespace) ?? []) {
    if (!labelsSubsetOf(selector, pod.labels)) continue;
    for (const address of pod.addresses) {
      out.push({
        address,
        ports: {},
        labels: pod.labels,
        locality: pod.locality,
        weight: 1,
        serviceAccount: pod.serviceAccount,
        network: pod.network,
        source: pod.source,
      });
    }
  }
  return out;
}

function keyOf(c: Config): ConfigKey {
  return { kind: c.meta.kind, namespace: c.meta.namespace, name: c.meta.name };
}

/** The endpoints of every port of a service owned by `se`, keyed as the registry stores them. */
function serviceEndpoints(svc: Service, selected: readonly SelectedWorkload[]): Array<[string, readonly Endpoint[]]> {
  return svc.ports.map((port) => {
    const eps: Endpoint[] = [];
    for (const s of selected) {
      const ep = endpointsFor(port, s);
      if (ep) eps.push(ep);
    }
    return [endpointKey(svc.hostname, svc.namespace, port.port), eps];
  });
}

/** One host's service of a ServiceEntry, with its endpoints by registry key. */
interface HostService {
  readonly svc: Service;
  readonly endpoints: ReadonlyArray<readonly [string, readonly Endpoint[]]>;
}

/**
 * What a ServiceEntry without a workloadSelector yields per host depends on it alone: kept by its
 * (immutable) config object, so a change to one entry neither rebuilds the others' services nor
 * gives them new identities (which every cache keyed by service would then miss).
 */
const inlineServices = new WeakMap<Config<'ServiceEntry'>, readonly HostService[]>();

/** The services (one per host, in host order) and endpoints of one ServiceEntry. */
function hostServices(
  se: Config<'ServiceEntry'>,
  workloads: () => WorkloadsByNamespace,
  pods: WorkloadInstances | undefined,
): readonly HostService[] {
  const inline = se.spec.workloadSelector?.labels === undefined;
  const known = inline ? inlineServices.get(se) : undefined;
  if (known) return known;
  const spec = se.spec;
  const key = keyOf(se);
  const ports: ServicePort[] = spec.ports.map((p) => ({
    name: p.name,
    port: p.number,
    protocol: parseProtocol(p.protocol),
    ...(p.targetPort > 0 ? { targetPort: p.targetPort } : {}),
  }));
  const exportTo = spec.exportTo.length === 0 ? ['*'] : spec.exportTo.map((n) => (n === '.' ? se.meta.namespace : n));
  const selected = selectedWorkloads(inline ? EMPTY_WORKLOADS : workloads(), pods, se);
  const out = spec.hosts.map((hostname): HostService => {
    const svc: Service = {
      hostname,
      namespace: se.meta.namespace,
      ports,
      resolution: RESOLUTIONS[spec.resolution] ?? 'NONE',
      addresses: spec.addresses,
      meshExternal: spec.location !== ServiceEntry_Location.MESH_INTERNAL,
      exportTo,
      source: key,
      labels: se.meta.labels,
    };
    return { svc, endpoints: serviceEndpoints(svc, selected) };
  });
  if (inline) inlineServices.set(se, out);
  return out;
}

const EMPTY_WORKLOADS: WorkloadsByNamespace = new Map();

/** Which ServiceEntry owns each `namespace/host`: the oldest that names it. */
function hostOwners(serviceEntries: readonly Config<'ServiceEntry'>[]): Map<string, Config<'ServiceEntry'>> {
  const owners = new Map<string, Config<'ServiceEntry'>>();
  for (const se of inCreationOrder(serviceEntries)) {
    for (const h of se.spec.hosts) if (!owners.has(`${se.meta.namespace}/${h}`)) owners.set(`${se.meta.namespace}/${h}`, se);
  }
  return owners;
}

/**
 * Builds the ServiceEntry/WorkloadEntry registry from one config snapshot and the other registries'
 * workload instances (Pods, which workloadSelectors select too): a pure function, so the result
 * can be shared by every proxy of one push. Hostname clashes within a namespace: the oldest
 * ServiceEntry (creation time, then name) owns the host, as in istiod's initServiceRegistry; services
 * are listed in namespace/name order.
 */
export function buildServiceEntryRegistry(snapshot: ConfigSnapshot, pods?: WorkloadInstances): RegistrySnapshot {
  const services: Service[] = [];
  const byHost = new Map<string, Service[]>();
  const endpoints = new Map<string, readonly Endpoint[]>();
  let workloads: WorkloadsByNamespace | undefined;
  const workloadsOnce = (): WorkloadsByNamespace => (workloads ??= workloadsByNamespace(snapshot.list('WorkloadEntry')));
  const owners = hostOwners(snapshot.list('ServiceEntry'));

  for (const se of snapshot.list('ServiceEntry')) {
    for (const { svc, endpoints: eps } of hostServices(se, workloadsOnce, pods)) {
      const existing = byHost.get(svc.hostname);
      if (owners.get(`${svc.namespace}/${svc.hostname}`) !== se || existing?.some((s) => s.namespace === svc.namespace)) continue;
      services.push(svc);
      byHost.set(svc.hostname, existing ? [...existing, svc] : [svc]);
      for (const [k, v] of eps) endpoints.set(k, v);
    }
  }
  // Hosts without addresses get allocated ones (seen only by proxies that ask for them).
  const allocated = autoAllocateAddresses(services);
  const allocatedByHost = new Map<string, Service[]>();
  for (const svc of allocated) {
    const list = allocatedByHost.get(svc.hostname);
    if (list) list.push(svc);
    else allocatedByHost.set(svc.hostname, [svc]);
  }
  return new ServiceEntryRegistry(allocated, allocatedByHost, endpoints);
}

/**
 * The registry after WorkloadEntry changes only (the services are the same): the endpoints of the
 * ServiceEntries that select a changed WorkloadEntry, before or after, are recomputed; everything
 * else is shared with `prev`. O(changed), so endpoint churn never rebuilds the whole registry.
 */
export function updateWorkloadEntries(
  prev: RegistrySnapshot,
  before: ConfigSnapshot,
  after: ConfigSnapshot,
  changed: readonly ConfigKey[],
  pods?: WorkloadInstances,
): RegistrySnapshot {
  if (!(prev instanceof ServiceEntryRegistry)) return buildServiceEntryRegistry(after, pods);
  const affected = new Map<string, Config<'ServiceEntry'>>();
  for (const k of changed) {
    for (const snap of [before, after]) {
      const we = snap.get('WorkloadEntry', k.namespace, k.name);
      if (!we) continue;
      const labels = workloadEntryLabels(we);
      for (const se of after.list('ServiceEntry', k.namespace)) {
        const sel = se.spec.workloadSelector?.labels;
        if (sel && labelsSubsetOf(sel, labels)) affected.set(`${se.meta.namespace}/${se.meta.name}`, se);
      }
    }
  }
  if (affected.size === 0) return prev;
  const endpoints = new Map(prev.endpointMap);
  const namespaces = new Set(changed.map((k) => k.namespace));
  const workloads = workloadsByNamespace([...namespaces].flatMap((ns) => after.list('WorkloadEntry', ns)));
  for (const se of affected.values()) {
    const selected = selectedWorkloads(workloads, pods, se);
    for (const svc of prev.services) {
      if (svc.source.namespace !== se.meta.namespace || svc.source.name !== se.meta.name) continue;
      for (const [k, v] of serviceEndpoints(svc, selected)) endpoints.set(k, v);
    }
  }
  return new ServiceEntryRegistry(prev.services, prev.hostMap, endpoints);
}

/**
 * The registry after the Pods changed (the config did not): the endpoints of every ServiceEntry
 * with a workloadSelector are recomputed; services and the other endpoints are shared with `prev`.
 */
export function updateSelectedPods(prev: RegistrySnapshot, config: ConfigSnapshot, pods: WorkloadInstances | undefined): RegistrySnapshot {
  if (!(prev instanceof ServiceEntryRegistry)) return buildServiceEntryRegistry(config, pods);
  const selecting = config.list('ServiceEntry').filter((se) => se.spec.workloadSelector?.labels !== undefined);
  if (selecting.length === 0) return prev;
  const endpoints = new Map(prev.endpointMap);
  const namespaces = new Set(selecting.map((se) => se.meta.namespace));
  const workloads = workloadsByNamespace([...namespaces].flatMap((ns) => config.list('WorkloadEntry', ns)));
  const owners = new Map(selecting.map((se) => [`${se.meta.namespace}/${se.meta.name}`, selectedWorkloads(workloads, pods, se)]));
  for (const svc of prev.services) {
    const selected = owners.get(`${svc.source.namespace}/${svc.source.name}`);
    if (!selected || svc.source.kind !== 'ServiceEntry') continue;
    for (const [k, v] of serviceEndpoints(svc, selected)) endpoints.set(k, v);
  }
  return new ServiceEntryRegistry(prev.services, prev.hostMap, endpoints);
}

/** Whether any ServiceEntry selects workloads by label (so Pod changes can change its endpoints). */
export function hasWorkloadSelector(config: ConfigSnapshot): boolean {
  return config.list('ServiceEntry').some((se) => se.spec.workloadSelector?.labels !== undefined);
}

class ServiceEntryRegistry implements RegistrySnapshot {
  private addressIndex: Map<string, RegistryInstance[]> | undefined;

  constructor(
    readonly services: readonly Service[],
    readonly hostMap: ReadonlyMap<string, readonly Service[]>,
    readonly endpointMap: ReadonlyMap<string, readonly Endpoint[]>,
  ) {}

  serviceByHost(hostname: string, namespace?: string): Service | undefined {
    const list = this.hostMap.get(hostname);
    if (!list) return undefined;
    return (namespace !== undefined ? list.find((s) => s.namespace === namespace) : undefined) ?? list[0];
  }

  endpoints(hostname: string, servicePort: number, namespace?: string): readonly Endpoint[] {
    const svc = this.serviceByHost(hostname, namespace);
    return svc ? servedEndpoints(this.endpointMap.get(endpointKey(hostname, svc.namespace, servicePort)) ?? []) : [];
  }

  instancesAt(address: string): readonly RegistryInstance[] {
    if (!this.addressIndex) {
      // Built on first use per snapshot: service then port order, as the registry lists them.
      const index = new Map<string, RegistryInstance[]>();
      for (const service of this.services) {
        for (const servicePort of service.ports) {
          for (const endpoint of this.endpointMap.get(endpointKey(service.hostname, service.namespace, servicePort.port)) ?? []) {
            let list = index.get(endpoint.address);
            if (!list) index.set(endpoint.address, (list = []));
            list.push({ service, servicePort, endpoint });
          }
        }
      }
      this.addressIndex = index;
    }
    return this.addressIndex.get(address) ?? [];
  }
}

function endpointKey(host: string, namespace: string, port: number): string {
  return `${namespace}/${host}:${port}`;
}
