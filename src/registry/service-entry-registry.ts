import type { Config, ConfigKey } from '../config/config.js';
import type { ConfigSnapshot } from '../config/store-types.js';
import { ServiceEntry_Location, ServiceEntry_Resolution } from '../gen/networking/v1alpha3/service_entry_pb.js';
import type { WorkloadEntry } from '../gen/networking/v1alpha3/workload_entry_pb.js';
import type { Endpoint, Locality, Protocol, RegistrySnapshot, Resolution, Service, ServicePort } from './model.js';

const PROTOCOLS = new Set<Protocol>([
  'HTTP', 'HTTP2', 'HTTPS', 'GRPC', 'GRPC-WEB', 'TCP', 'TLS', 'MONGO', 'REDIS', 'MYSQL', 'UDP',
]);

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

function selects(selector: Readonly<Record<string, string>>, labels: Readonly<Record<string, string>>): boolean {
  for (const [k, v] of Object.entries(selector)) if (labels[k] !== v) return false;
  return true;
}

function endpointsFor(
  svcPort: ServicePort,
  we: WorkloadEntry,
  source: ConfigKey,
  labels: Readonly<Record<string, string>>,
): Endpoint | undefined {
  if (we.address === '') return undefined; // network-only entries need a gateway: not served yet
  const mapped = we.ports[svcPort.name];
  return {
    address: we.address,
    port: mapped ?? svcPort.targetPort ?? svcPort.port,
    servicePort: svcPort.port,
    labels,
    locality: parseLocality(we.locality),
    weight: we.weight > 0 ? we.weight : 1,
    serviceAccount: we.serviceAccount,
    network: we.network,
    source,
  };
}

/**
 * Builds the ServiceEntry/WorkloadEntry registry from one config snapshot: a pure function, so
 * the result can be shared by every proxy of one push. Hostname clashes: the first ServiceEntry in
 * namespace/name order owns the host (istiod: oldest wins), which keeps the output deterministic.
 */
export function buildServiceEntryRegistry(snapshot: ConfigSnapshot): RegistrySnapshot {
  const services: Service[] = [];
  const byHost = new Map<string, Service[]>();
  const endpoints = new Map<string, Endpoint[]>();
  const entries = [...snapshot.byKind('ServiceEntry').values()].sort(byNamespaceName);
  const workloads = [...snapshot.byKind('WorkloadEntry').values()].sort(byNamespaceName);

  for (const se of entries) {
    const spec = se.spec;
    const key: ConfigKey = { kind: 'ServiceEntry', namespace: se.meta.namespace, name: se.meta.name };
    const ports: ServicePort[] = spec.ports.map((p) => ({
      name: p.name,
      port: p.number,
      protocol: parseProtocol(p.protocol),
      ...(p.targetPort > 0 ? { targetPort: p.targetPort } : {}),
    }));
    const exportTo = spec.exportTo.length === 0 ? ['*'] : spec.exportTo.map((n) => (n === '.' ? se.meta.namespace : n));
    const selected: Array<{ we: WorkloadEntry; labels: Readonly<Record<string, string>>; source: ConfigKey }> = [];
    const selector = spec.workloadSelector?.labels;
    if (selector) {
      for (const w of workloads) {
        if (w.meta.namespace !== se.meta.namespace) continue;
        const labels = { ...w.meta.labels, ...w.spec.labels };
        if (selects(selector, labels)) {
          selected.push({ we: w.spec, labels, source: { kind: 'WorkloadEntry', namespace: w.meta.namespace, name: w.meta.name } });
        }
      }
    } else {
      for (const we of spec.endpoints) selected.push({ we, labels: we.labels, source: key });
    }
    for (const hostname of spec.hosts) {
      const svc: Service = {
        hostname,
        namespace: se.meta.namespace,
        ports,
        resolution: RESOLUTIONS[spec.resolution] ?? 'NONE',
        addresses: spec.addresses,
        meshExternal: spec.location !== ServiceEntry_Location.MESH_INTERNAL,
        exportTo,
        source: key,
      };
      const existing = byHost.get(hostname);
      if (existing?.some((s) => s.namespace === svc.namespace)) continue; // first in namespace wins
      services.push(svc);
      byHost.set(hostname, [...(existing ?? []), svc]);
      for (const port of ports) {
        const eps: Endpoint[] = [];
        for (const s of selected) {
          const ep = endpointsFor(port, s.we, s.source, s.labels);
          if (ep) eps.push(ep);
        }
        endpoints.set(endpointKey(hostname, svc.namespace, port.port), eps);
      }
    }
  }

  const lookup = (hostname: string, namespace?: string): Service | undefined => {
    const list = byHost.get(hostname);
    if (!list) return undefined;
    return (namespace !== undefined ? list.find((s) => s.namespace === namespace) : undefined) ?? list[0];
  };
  return {
    services,
    serviceByHost: lookup,
    endpoints(hostname, servicePort, namespace) {
      const svc = lookup(hostname, namespace);
      return svc ? endpoints.get(endpointKey(hostname, svc.namespace, servicePort)) ?? [] : [];
    },
  };
}

function endpointKey(host: string, namespace: string, port: number): string {
  return `${namespace}/${host}:${port}`;
}

function byNamespaceName(a: Config, b: Config): number {
  return a.meta.namespace.localeCompare(b.meta.namespace) || a.meta.name.localeCompare(b.meta.name);
}
