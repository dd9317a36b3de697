/**
 * The addresses a proxy uses for a service: those of the proxy's own cluster for a Kubernetes
 * Service merged from several clusters (istiod's ClusterVIPs), and the addresses auto-allocated to
 * ServiceEntry hosts that have none (registry/auto-allocate.ts). istiod hands them to a proxy
 * through Service.GetAddressForProxy / GetAllAddressesForProxy, so they appear wherever a
 * service's address does for that proxy: the DNS name table, the outbound listener addresses, the
 * virtual host domains.
 */
import { isIP } from 'node:net';
import { isIPAddress } from '../config/index.js';
import type { Proxy, PushContext } from '../model/index.js';
import { addressesInCluster, type Service } from '../registry/index.js';
import { socketAddress } from './listener/listener-common.js';

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

/** Whether the proxy has addresses of both families (istiod's IP mode Dual). */
export function isDualStack(proxy: Proxy): boolean {
  const f = proxyIpFamilies(proxy);
  return f.v4 && f.v6;
}

/**
 * The wildcards an outbound listener shared by services binds, primary first: a dual-stack proxy's
 * listen on `0.0.0.0` with `::` as an additional address (istiod's actualWildcards, whatever
 * ISTIO_DUAL_STACK says), other proxies' on their one wildcard.
 */
export function wildcardBinds(proxy: Proxy): string[] {
  return isDualStack(proxy) ? ['0.0.0.0', '::'] : [wildcardAddress(proxy)];
}

/**
 * The additional addresses of virtualOutbound and virtualInbound: `::` for a dual-stack proxy when
 * the control plane serves dual stack (istiod gates these two on ISTIO_DUAL_STACK alone).
 */
export function dualStackWildcards(push: PushContext, proxy: Proxy, port: number): { address: ReturnType<typeof socketAddress> }[] {
  return push.dualStack && isDualStack(proxy) ? [{ address: socketAddress('::', port) }] : [];
}

/**
 * istiod's FilterAddressesByIPFamily: the addresses of the families the proxy has; for a
 * dual-stack proxy, those of the first address's family.
 */
function ofProxyFamilies(addresses: readonly string[], proxy: Proxy): string[] {
  const f = proxyIpFamilies(proxy);
  const v4 = addresses.filter((a) => f.v4 && isIP(a) === 4);
  const v6 = addresses.filter((a) => f.v6 && isIP(a) === 6);
  if (f.v4 && f.v6 && addresses.length > 0) return isIP(addresses[0]!) === 6 ? v6 : v4;
  return v4.length > 0 ? v4 : v6;
}

/**
 * The addresses a proxy is given of a service whose addresses are a list (a Kubernetes Service's
 * cluster IPs, the pair allocated to a ServiceEntry host): istiod's GetAllAddressesForProxy. Both
 * families for a dual-stack proxy when the control plane serves dual stack (ISTIO_DUAL_STACK, or
 * ambient, as istiod); else those of the proxy's families, and of one family only — the first
 * address's — for a dual-stack proxy.
 */
export function addressesForProxy(addresses: readonly string[], push: PushContext, proxy: Proxy): string[] {
  if (push.dualStackAddresses && isDualStack(proxy)) return [...addresses];
  return ofProxyFamilies(addresses, proxy);
}

/**
 * The binds of each listener of a TCP, TLS or sniffed service port, primary address first and the
 * additional ones after; none: the port shares the wildcard listener. A Kubernetes Service gets
 * one listener on its addresses for the proxy (its cluster's, of the proxy's families, else its
 * first); a ServiceEntry one per IP address it lists (istiod makes a service of each), else one
 * on the addresses allocated to it that the proxy uses.
 */
export function listenBinds(svc: Service, push: PushContext, proxy: Proxy): string[][] {
  const own = ownAddressesFor(svc, push, proxy).filter((a) => isIPAddress(a));
  if (svc.source.kind === 'ServiceEntry') {
    if (own.length > 0) return own.map((a) => [a]);
    const allocated = allocatedAddressesFor(svc, push, proxy);
    return allocated.length > 0 ? [allocated] : [];
  }
  if (own.length === 0) return [];
  const mine = addressesForProxy(own, push, proxy);
  return [mine.length > 0 ? mine : [own[0]!]];
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
 * The allocated addresses of `svc` this proxy uses, IPv4 first (addressesForProxy: of its IP
 * families, both for a dual-stack proxy only when the control plane serves dual stack); none when
 * the service has addresses of its own, has none allocated, or the proxy does not consume them.
 */
export function allocatedAddressesFor(svc: Service, push: PushContext, proxy: Proxy): string[] {
  // Only ServiceEntry hosts are allocated addresses, and they are never merged across clusters.
  if (svc.addresses.length > 0 || !svc.autoAllocated || !consumesAutoAllocated(proxy)) return [];
  return addressesForProxy([svc.autoAllocated.v4, svc.autoAllocated.v6], push, proxy);
}

/**
 * The part of a cache key that decides the addresses of every service and the wildcard: whether
 * the proxy consumes allocated addresses and of which families, or whether it is IPv6-only ('' for
 * an IPv4 proxy that consumes none), and its cluster when its cluster's addresses of a merged
 * service differ from the default ones (PushContext.clusterAddressKey).
 */
export function addressViewKey(push: PushContext, proxy: Proxy): string {
  const f = proxyIpFamilies(proxy);
  const families = f.v4 ? (f.v6 ? 'dual' : '') : 'v6only';
  const allocated = !consumesAutoAllocated(proxy) ? families : `alloc${f.v4 ? '4' : ''}${f.v6 ? '6' : ''}`;
  const cluster = push.clusterAddressKey(proxy);
  return cluster === '' ? allocated : `${allocated}@${cluster}`;
}
