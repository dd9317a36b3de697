import type { Endpoint, RegistryInstance, RegistrySnapshot, Service } from './model.js';

/**
 * Several registries seen as one (istiod's aggregate controller): services of every registry, in
 * registry order; where two define the same host in the same namespace, the earlier registry owns
 * it (Kubernetes before ServiceEntries, as istiod orders them) and its endpoints are the host's.
 *
 * Registries of Kubernetes clusters (those naming a `clusterId`) merge instead: a Service with the
 * same hostname in several clusters is one service — the first cluster's, with each cluster's own
 * addresses beside it (`clusterAddresses`, istiod's mergeService adding ClusterVIPs) — whose
 * endpoints are those of every cluster, in registry order (istiod's endpoint shards, one per cluster).
 */
export function aggregateRegistry(registries: readonly RegistrySnapshot[]): RegistrySnapshot {
  if (registries.length === 1 && registries[0]) return registries[0];
  const services: Service[] = [];
  const owners = new Map<string, RegistrySnapshot[]>(); // `<ns>/<host>` → the registries whose endpoints it has
  const parts = new Map<string, Service[]>(); // `<ns>/<host>` → each owner's own Service, in owner order
  for (const r of registries) {
    for (const s of r.services) {
      const key = `${s.namespace}/${s.hostname}`;
      const group = owners.get(key);
      if (!group) {
        owners.set(key, [r]);
        parts.set(key, [s]);
        services.push(s);
      } else if (r.clusterId !== undefined && group.every((o) => o.clusterId !== undefined && o.clusterId !== r.clusterId)) {
        group.push(r);
        parts.get(key)?.push(s);
      }
    }
  }
  const merged = new Map<string, Service>(); // `<ns>/<host>` → the merged service, for hosts in several clusters
  const clustersWithOwnAddresses = new Set<string>();
  for (let i = 0; i < services.length; i++) {
    const first = services[i]!;
    const key = `${first.namespace}/${first.hostname}`;
    const own = parts.get(key)!;
    if (own.length < 2) continue;
    const svc = mergedService(own, owners.get(key)!);
    services[i] = svc;
    merged.set(key, svc);
    for (const [cluster, addresses] of Object.entries(svc.clusterAddresses ?? {}))
      if (!sameList(addresses, svc.addresses)) clustersWithOwnAddresses.add(cluster);
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
        r.instancesAt(address).flatMap((i) => {
          const key = `${i.service.namespace}/${i.service.hostname}`;
          if (owners.get(key)?.includes(r) !== true) return [];
          const svc = merged.get(key);
          return [svc ? { ...i, service: svc } : i];
        }),
      );
    },
    ...(clustersWithOwnAddresses.size > 0 ? { clustersWithOwnAddresses } : {}),
  };
}

/** The merged service of the last aggregation, by its first cluster's Service: the same object while no part changed. */
const mergedByFirst = new WeakMap<Service, { readonly parts: readonly Service[]; readonly clusters: string; readonly merged: Service }>();

/**
 * One Service of several clusters: the first's, with every cluster's addresses by cluster id (a
 * cluster's first Service of the host counts, as istiod keeps the addresses it saw first).
 */
function mergedService(parts: readonly Service[], owners: readonly RegistrySnapshot[]): Service {
  const first = parts[0]!;
  const clusters = owners.map((o) => o.clusterId ?? '').join(',');
  const memo = mergedByFirst.get(first);
  if (memo && memo.clusters === clusters && sameList(memo.parts, parts)) return memo.merged;
  const clusterAddresses: Record<string, readonly string[]> = {};
  parts.forEach((s, i) => {
    const id = owners[i]?.clusterId;
    if (id !== undefined && !(id in clusterAddresses)) clusterAddresses[id] = s.addresses;
  });
  const merged: Service = { ...first, clusterAddresses };
  mergedByFirst.set(first, { parts, clusters, merged });
  return merged;
}

const sameList = <T>(a: readonly T[], b: readonly T[]): boolean => a.length === b.length && a.every((x, i) => x === b[i]);
