import type { Endpoint, RegistrySnapshot, Service, ServicePort } from '../registry/index.js';
import type { Proxy } from './proxy.js';

/** One port of one service that a proxy's workload serves (istiod's ServiceTarget). */
export interface ServiceInstance {
  readonly service: Service;
  readonly servicePort: ServicePort;
  /** The workload's endpoint for that port (its address is one of the proxy's IPs). */
  readonly endpoint: Endpoint;
}

/**
 * The service ports a proxy serves: registry endpoints whose address is one of the proxy's IPs,
 * in service then port order. A proxy whose workload no service selects has none (it still gets
 * outbound config, and inbound passthrough only).
 */
export function proxyServiceInstances(registry: RegistrySnapshot, proxy: Pick<Proxy, 'ipAddresses'>): ServiceInstance[] {
  if (proxy.ipAddresses.length === 0) return [];
  const ips = new Set(proxy.ipAddresses);
  // Registry order (service, then port), whichever of the proxy's addresses serves it.
  const rank = new Map(registry.services.map((s, i) => [s, i]));
  const out = [...ips].flatMap((ip) => registry.instancesAt(ip));
  return ips.size > 1
    ? out.sort((a, b) => (rank.get(a.service) ?? 0) - (rank.get(b.service) ?? 0) || a.servicePort.port - b.servicePort.port)
    : out;
}
