/** The services a host can name: Kubernetes Services from the files and ServiceEntry hosts (istioctl's util.GetDestinationHost). */
import { hostMatches, isVisible, resolveShortName } from '../../config/index.js';
import { configsOf, type Snapshot } from './model.js';

export interface ServiceInfo {
  readonly host: string;
  readonly namespace: string;
  readonly ports: readonly number[];
  readonly exportTo: readonly string[];
  /** Pod labels the service selects (Service selector, ServiceEntry workloadSelector). */
  readonly selector: Readonly<Record<string, string>> | undefined;
  readonly kind: 'Service' | 'ServiceEntry';
}

const cache = new WeakMap<Snapshot, ServiceInfo[]>();

export function serviceIndex(s: Snapshot): ServiceInfo[] {
  const hit = cache.get(s);
  if (hit) return hit;
  const out: ServiceInfo[] = [];
  for (const svc of s.services) {
    out.push({
      host: `${svc.ref.name}.${svc.ref.namespace}.svc.${s.domain}`,
      namespace: svc.ref.namespace,
      ports: svc.ports.map((p) => p.port),
      // A Service's visibility is its networking.istio.io/exportTo annotation (comma-separated).
      exportTo: (svc.annotations['networking.istio.io/exportTo'] ?? '')
        .split(',')
        .map((e) => e.trim())
        .filter((e) => e !== ''),
      selector: svc.selector,
      kind: 'Service',
    });
  }
  for (const se of configsOf(s, 'ServiceEntry')) {
    for (const h of se.spec.hosts) {
      out.push({
        host: h.toLowerCase(),
        namespace: se.meta.namespace,
        ports: se.spec.ports.map((p) => p.number),
        exportTo: se.spec.exportTo,
        selector: se.spec.workloadSelector?.labels,
        kind: 'ServiceEntry',
      });
    }
  }
  cache.set(s, out);
  return out;
}

/**
 * The service `host` (as written in an object of `namespace`) names, exact hosts before wildcards.
 * `scopes` are the namespaces it must be visible in, any one of them (istioctl looks a
 * VirtualService's destinations up in each namespace the VirtualService is exported to; `*`
 * needs a service exported everywhere); by default the object's own namespace.
 */
export function findService(
  s: Snapshot,
  host: string,
  namespace: string,
  scopes: readonly string[] = [namespace],
): ServiceInfo | undefined {
  const fqdn = resolveShortName(host, namespace, s.domain);
  const inScope = (x: ServiceInfo, scope: string): boolean =>
    scope === '*' ? x.exportTo.length === 0 || x.exportTo.includes('*') : isVisible(x.exportTo, x.namespace, scope);
  const visible = serviceIndex(s).filter((x) => scopes.some((scope) => inScope(x, scope)));
  return visible.find((x) => x.host === fqdn) ?? visible.find((x) => x.host.startsWith('*') && hostMatches(x.host, fqdn));
}
