import { type Config, hostsOverlap, isWildcard, resolveShortName } from '../../config/index.js';
import type { Server } from '../../gen/networking/v1alpha3/gateway_pb.js';

/** istiod's host.Name.SubsetOf: every host `n` matches is also matched by `o`. */
export function subsetOf(n: string, o: string): boolean {
  if (isWildcard(n)) return isWildcard(o) && n.length >= o.length && n.slice(1).endsWith(o.slice(1));
  if (isWildcard(o)) return n.endsWith(o.slice(1));
  return n === o;
}

/** istiod's host.NamesForNamespace: server hosts a VirtualService of `namespace` may bind, namespaces stripped. */
export function serverHostsFor(server: Server, namespace: string): string[] {
  const out: string[] = [];
  for (const h of server.hosts) {
    const slash = h.indexOf('/');
    if (slash < 0) out.push(h);
    else if (h.slice(0, slash) === namespace || h.slice(0, slash) === '*') out.push(h.slice(slash + 1));
  }
  return out;
}

/** istiod's host.Names.Intersection: for each overlapping pair, the narrower host, first-seen order, unique. */
export function intersectHosts(a: readonly string[], b: readonly string[]): string[] {
  const out: string[] = [];
  for (const x of a) {
    for (const y of b) {
      const pick = subsetOf(x, y) ? x : subsetOf(y, x) ? y : undefined;
      if (pick !== undefined && !out.includes(pick)) out.push(pick);
    }
  }
  return out;
}

/** A VirtualService's hosts as FQDNs (istiod resolves them when indexing). */
export function virtualServiceHosts(vs: Config<'VirtualService'>, domain: string): string[] {
  return vs.spec.hosts.map((h) => resolveShortName(h, vs.meta.namespace, domain));
}

/**
 * Whether some host of the VirtualService matches a server host (istiod's pickMatchingGatewayHosts,
 * for TCP/TLS servers): `ns/host` server hosts only admit VirtualServices of `ns`.
 */
export function bindsHosts(server: Server, vs: Config<'VirtualService'>, domain: string): boolean {
  const vsHosts = virtualServiceHosts(vs, domain);
  return server.hosts.some((gh) => {
    const slash = gh.indexOf('/');
    if (slash >= 0 && gh.slice(0, slash) !== vs.meta.namespace) return false;
    const host = slash >= 0 ? gh.slice(slash + 1) : gh;
    return vsHosts.some((vh) => hostsOverlap(host, vh));
  });
}
