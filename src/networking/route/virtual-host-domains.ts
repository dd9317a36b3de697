import type { Proxy } from '../../model/proxy.js';

/**
 * The virtual-host domains istiod generates for a service port: the FQDN with and without a
 * trailing dot, and for Kubernetes-style hosts `<name>.<ns>.svc` and `<name>.<ns>` (plus `<name>` for
 * callers in the same namespace), each with and without the port.
 */
export function virtualHostDomains(host: string, port: number, proxy: Proxy, domain: string): string[] {
  const names = [host, `${host}.`];
  const suffix = `.svc.${domain}`;
  if (host.endsWith(suffix)) {
    const [name, ns, ...rest] = host.slice(0, -suffix.length).split('.');
    if (name && ns && rest.length === 0) {
      if (ns === proxy.namespace) names.push(name);
      names.push(`${name}.${ns}.svc`, `${name}.${ns}`);
    }
  }
  return names.flatMap((n) => [n, `${n}:${port}`]);
}
