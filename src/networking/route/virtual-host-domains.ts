import type { Proxy } from '../../model/index.js';

/**
 * The virtual-host names istiod generates for a service, in its order: the FQDN with and without a
 * trailing dot, then for Kubernetes-style hosts `<name>`, `<name>.<ns>.svc`, `<name>.<ns>` (callers
 * in the same namespace) or `<name>.<ns>`, `<name>.<ns>.svc` (others).
 */
export function virtualHostNames(host: string, proxy: Proxy, domain: string): string[] {
  const names = [host, `${host}.`];
  const suffix = `.svc.${domain}`;
  if (host.endsWith(suffix)) {
    const [name, ns, ...rest] = host.slice(0, -suffix.length).split('.');
    if (name && ns && rest.length === 0) {
      if (ns === proxy.namespace) names.push(name, `${name}.${ns}.svc`, `${name}.${ns}`);
      else names.push(`${name}.${ns}`, `${name}.${ns}.svc`);
    }
  }
  return names;
}

/**
 * The names each with and without `:<port>`: for proxyless gRPC, which matches domains against its
 * dial target with the port (Envoy sidecars use ignore_port_in_host_matching instead).
 */
export function virtualHostDomains(host: string, port: number, proxy: Proxy, domain: string): string[] {
  return virtualHostNames(host, proxy, domain).flatMap((n) => [n, `${n}:${port}`]);
}
