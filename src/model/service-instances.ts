import type { Endpoint, RegistrySnapshot, Service, ServicePort } from '../registry/model.js';
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
  const out: ServiceInstance[] = [];
  for (const service of registry.services) {
    for (const servicePort of service.ports) {
      for (const endpoint of registry.endpoints(service.hostname, servicePort.port, service.namespace)) {
        if (ips.has(endpoint.address)) out.push({ service, servicePort, endpoint });
      }
    }
  }
  return out;
}
