import type { Endpoint, RegistryInstance, RegistrySnapshot, Service } from './model.js';

/**
 * Several registries seen as one (istiod's aggregate controller): services of every registry, in
 * registry order; where two define the same host in the same namespace, the earlier registry owns
 * it (Kubernetes before ServiceEntries, as istiod orders them) and its endpoints are the host's.
 *
 * Registries of Kubernetes clusters (those naming a `clusterId`) merge instead: a Service with the
 * same hostname in several clusters is one service — the first cluster's, as istiod keeps the
 * first and adds the others' cluster VIPs — whose endpoints are those of every cluster, in
 * registry order (istiod's endpoint shards, one per cluster).
 */
export function aggregateRegistry(registries: readonly RegistrySnapshot[]): RegistrySnapshot {
  if (registries.length === 1 && registries[0]) return registries[0];
  const services: Service[] = [];
  const owners = new Map<string, RegistrySnapshot[]>(); // `<ns>/<host>` → the registries whose endpoints it has
  for (const r of registries) {
    for (const s of r.services) {
      const key = `${s.namespace}/${s.hostname}`;
      const group = owners.get(key);
      if (!group) {
        owners.set(key, [r]);
        services.push(s);
      } else if (r.clusterId !== undefined && group.every((o) => o.clusterId !== undefined && o.clusterId !== r.clusterId)) {
        group.push(r);
      }
    }
  }
  const byHost = new Map<string, Service[]>();
  for (const s of services) {
    const list = byHost.get(s.hostname);
    if (list) list.push(s);
    else byHost.set(s.hostname, [s]);
  }
  const serviceByHost = (hostname: string, namespace?: string): Service | undefined => {
    const list = byHost.get(hostname);
    if (!list) return undefined;
    return (namespace !== undefined ? list.find((s) => s.namespace === namespace) : undefined) ?? list[0];
  };
  return {
    services,
    serviceByHost,
    endpoints(hostname: string, servicePort: number, namespace?: string): readonly Endpoint[] {
      const svc = serviceByHost(hostname, namespace);
      const group = svc ? owners.get(`${svc.namespace}/${svc.hostname}`) : undefined;
      if (!svc || !group) return [];
      if (group.length === 1) return group[0]?.endpoints(hostname, servicePort, svc.namespace) ?? [];
      return group.flatMap((r) => r.endpoints(hostname, servicePort, svc.namespace));
    },
    instancesAt(address: string): readonly RegistryInstance[] {
      return registries.flatMap((r) =>
        r.instancesAt(address).filter((i) => owners.get(`${i.service.namespace}/${i.service.hostname}`)?.includes(r) === true),
      );
    },
  };
}
