import type { Endpoint, RegistryInstance, RegistrySnapshot, Service } from './model.js';

/**
 * Several registries seen as one (istiod's aggregate controller): services of every registry, in
 * registry order; where two define the same host in the same namespace, the earlier registry owns
 * it (Kubernetes before ServiceEntries, as istiod orders them) and its endpoints are the host's.
 */
export function aggregateRegistry(registries: readonly RegistrySnapshot[]): RegistrySnapshot {
  if (registries.length === 1 && registries[0]) return registries[0];
  const services: Service[] = [];
  const owner = new Map<string, RegistrySnapshot>(); // `<ns>/<host>` → the registry that owns it
  for (const r of registries) {
    for (const s of r.services) {
      const key = `${s.namespace}/${s.hostname}`;
      if (owner.has(key)) continue;
      owner.set(key, r);
      services.push(s);
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
      return svc ? (owner.get(`${svc.namespace}/${svc.hostname}`)?.endpoints(hostname, servicePort, svc.namespace) ?? []) : [];
    },
    instancesAt(address: string): readonly RegistryInstance[] {
      return registries.flatMap((r) =>
        r.instancesAt(address).filter((i) => owner.get(`${i.service.namespace}/${i.service.hostname}`) === r),
      );
    },
  };
}
