/**
 * The addresses a proxy uses for a service: those of the proxy's own cluster for a Kubernetes
 * Service merged from several clusters (istiod's ClusterVIPs), and the addresses auto-allocated to
 * ServiceEntry hosts that have none (registry/auto-allocate.ts). istiod hands them to a proxy
 * through Service.GetAddressForProxy / GetAllAddressesForProxy, so they appear wherever a
 * service's address does for that proxy: the DNS name table, the outbound listener addresses, the
 * virtual host domains.
 */
import { isIP } from 'node:net';
import type { Proxy, PushContext } from '../model/index.js';
import { addressesInCluster, type Service } from '../registry/index.js';

/** The IP families a proxy can use, from its addresses (none known: IPv4, as istiod assumes). */
export function proxyIpFamilies(proxy: Proxy): { readonly v4: boolean; readonly v6: boolean } {
  const v4 = proxy.ipAddresses.some((a) => isIP(a) === 4);
  const v6 = proxy.ipAddresses.some((a) => isIP(a) === 6);
  return v4 || v6 ? { v4, v6 } : { v4: true, v6: false };
}

/** The wildcard a proxy's listeners bind: `::` for an IPv6-only proxy, else `0.0.0.0` (istiod's actualWildcards[0]). */
export function wildcardAddress(proxy: Proxy): string {
  return proxyIpFamilies(proxy).v4 ? '0.0.0.0' : '::';
}

const truthy = (v: unknown): boolean => v === true || (typeof v === 'string' && v.toLowerCase() === 'true');

/**
 * Whether the proxy is given auto-allocated addresses (istiod's nodeUsesAutoallocatedIPs with its
 * IP-allocation controller off): it captures DNS and asked for them, or it is a waypoint that asked.
 */
export function consumesAutoAllocated(proxy: Proxy): boolean {
  const raw = proxy.metadata.raw;
  return truthy(raw.DNS_AUTO_ALLOCATE) && (truthy(raw.DNS_CAPTURE) || proxy.type === 'waypoint');
}

/** The service's own addresses as the proxy sees them: its cluster's, for a Service of several clusters. */
export function ownAddressesFor(svc: Service, push: PushContext, proxy: Proxy): readonly string[] {
  return svc.clusterAddresses ? addressesInCluster(svc, push.proxyCluster(proxy)) : svc.addresses;
}

/**
 * The allocated addresses of `svc` this proxy uses, IPv4 first, of its IP families; none when the
 * service has addresses of its own, has none allocated, or the proxy does not consume them.
 */
export function allocatedAddressesFor(svc: Service, proxy: Proxy): string[] {
  // Only ServiceEntry hosts are allocated addresses, and they are never merged across clusters.
  if (svc.addresses.length > 0 || !svc.autoAllocated || !consumesAutoAllocated(proxy)) return [];
  const families = proxyIpFamilies(proxy);
  return [...(families.v4 ? [svc.autoAllocated.v4] : []), ...(families.v6 ? [svc.autoAllocated.v6] : [])];
}

/**
 * The part of a cache key that decides the addresses of every service and the wildcard: whether
 * the proxy consumes allocated addresses and of which families, or whether it is IPv6-only ('' for
 * an IPv4 proxy that consumes none), and its cluster when its cluster's addresses of a merged
 * service differ from the default ones (PushContext.clusterAddressKey).
 */
export function addressViewKey(push: PushContext, proxy: Proxy): string {
  const f = proxyIpFamilies(proxy);
  const allocated = !consumesAutoAllocated(proxy) ? (f.v4 ? '' : 'v6only') : `alloc${f.v4 ? '4' : ''}${f.v6 ? '6' : ''}`;
  const cluster = push.clusterAddressKey(proxy);
  return cluster === '' ? allocated : `${allocated}@${cluster}`;
}
