/**
 * The DNS name table a proxy's agent answers from (istiod's pkg/dns/server/name_table.go): every
 * service the proxy's Sidecar scope sees, by hostname, with the addresses that proxy would use,
 * the registry it came from and, for Kubernetes services, the name and namespace the agent expands
 * into `name`, `name.ns`, `name.ns.svc`. Headless services list their ready endpoints, and each
 * pod with a subdomain gets its own `<hostname>.<subdomain>.<ns>.svc.<domain>` entry.
 */
import { isIP } from 'node:net';
import { create } from '@bufbuild/protobuf';
import { NameTableSchema, type NameTable, type NameTable_NameInfo, NameTable_NameInfoSchema } from '../../gen/dns/proto/nds_pb.js';
import type { Proxy, PushContext } from '../../model/index.js';
import type { Service } from '../../registry/index.js';
import { addressesForProxy, allocatedAddressesFor, consumesAutoAllocated, ownAddressesFor, proxyIpFamilies } from '../service-addresses.js';
import { endpointCluster } from '../endpoint/istio-endpoint.js';

export { consumesAutoAllocated, proxyIpFamilies };

/** istiod's provider IDs, as the table spells them (`registry`). */
export const KUBERNETES_REGISTRY = 'Kubernetes';
export const EXTERNAL_REGISTRY = 'External';
/** Kubernetes Multi-Cluster Services hosts: never expanded to short names (they would clash with the cluster.local ones). */
const CLUSTERSET_SUFFIX = '.svc.clusterset.local';

const isKubernetes = (s: Service): boolean => s.source.kind === ('Service' as string);

/** An address as istiod keeps it: a /32 or /128 CIDR is its IP; other CIDRs are not addresses a name can have. */
function plainAddress(a: string): string | undefined {
  const slash = a.indexOf('/');
  if (slash < 0) return isIP(a) ? a : undefined;
  const ip = a.slice(0, slash);
  const bits = a.slice(slash + 1);
  const family = isIP(ip);
  return (family === 4 && bits === '32') || (family === 6 && bits === '128') ? ip : undefined;
}

/**
 * What the proxy dials for a service (istiod's GetAllAddressesForProxy: its own cluster's addresses
 * of a Service of several clusters); `headless` when it has no address.
 */
function serviceAddresses(
  svc: Service,
  push: PushContext,
  proxy: Proxy,
  families: { v4: boolean; v6: boolean },
): { ips: string[]; headless: boolean } {
  const fits = (ip: string): boolean => (isIP(ip) === 4 ? families.v4 : families.v6);
  const own = ownAddressesFor(svc, push, proxy);
  if (own.length === 0) {
    const ips = allocatedAddressesFor(svc, push, proxy);
    return { ips, headless: ips.length === 0 };
  }
  // A Kubernetes Service's cluster IPs are filtered to the proxy's families; a ServiceEntry's
  // addresses are kept as written (Envoy matches the VIP whatever its family).
  const plain = own.map(plainAddress).filter((a): a is string => a !== undefined);
  return { ips: isKubernetes(svc) ? addressesForProxy(plain.filter(fits), push, proxy) : plain, headless: false };
}

const sameNetwork = (proxy: Proxy, network: string): boolean => {
  const own = String(proxy.metadata.raw.NETWORK ?? '');
  return own === '' || network === '' || own === network;
};

function nameInfo(ips: string[], registry: string, namespace = '', shortname = ''): NameTable_NameInfo {
  return create(NameTable_NameInfoSchema, { ips, registry, namespace, shortname });
}

/**
 * A headless (resolution NONE) service's ready endpoint addresses on the proxy's network, once
 * each, of every cluster (istiod's ENABLE_MULTICLUSTER_HEADLESS default); pods with a subdomain also
 * go into `table` under their own names — a name that pods of the proxy's own cluster have is
 * theirs alone (istiod writes the local cluster's entries, then the others' where none is local).
 */
function headlessAddresses(push: PushContext, proxy: Proxy, svc: Service, registry: string, table: NameTable['table']): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  const pods = new Map<string, { local: string[]; remote: string[]; shortname: string }>();
  // istiod's InCluster: a proxy that names no cluster is in every one.
  const own = proxy.metadata.clusterId;
  const domain = svc.hostname.slice(svc.hostname.indexOf('.') + 1);
  for (const port of svc.ports) {
    for (const e of push.endpoints(svc.hostname, port.port, svc.namespace)) {
      if (isIP(e.address) === 0 || seen.has(e.address)) continue;
      seen.add(e.address);
      if (!sameNetwork(proxy, e.network)) continue;
      if (e.podDns && svc.hostname.includes('.')) {
        const shortname = `${e.podDns.hostname}.${e.podDns.subdomain}`;
        const host = `${shortname}.${domain}`;
        const entry = pods.get(host) ?? { local: [], remote: [], shortname };
        (own === undefined || endpointCluster(push, e) === own ? entry.local : entry.remote).push(e.address);
        pods.set(host, entry);
      }
      out.push(e.address);
    }
  }
  for (const [host, p] of pods) table[host] = nameInfo(p.local.length > 0 ? p.local : p.remote, registry, svc.namespace, p.shortname);
  return out;
}

/**
 * The namespace whose ServiceEntry names a host several namespaces define: the proxy's own, else
 * the first (istiod's Sidecar scope keeps one service per host; the addresses of one namespace's
 * entries for the host merge, another namespace's are not added).
 */
function hostOwners(services: readonly Service[], proxyNamespace: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const s of services) {
    if (isKubernetes(s)) continue;
    const current = out.get(s.hostname);
    if (current === undefined || (s.namespace === proxyNamespace && current !== proxyNamespace)) out.set(s.hostname, s.namespace);
  }
  return out;
}

/** The name table of one proxy (istiod's BuildNameTable; the scope's services in order). */
export function buildNameTable(push: PushContext, proxy: Proxy): NameTable {
  const table: NameTable['table'] = {};
  // A gateway's scope has no egress listeners in istiod: its table is empty.
  if (proxy.type === 'router') return create(NameTableSchema, { table });
  const families = proxyIpFamilies(proxy);
  const services = push.sidecarScope(proxy).services;
  const owner = hostOwners(services, proxy.namespace);
  for (const svc of services) {
    if (!isKubernetes(svc) && owner.get(svc.hostname) !== svc.namespace) continue;
    const registry = isKubernetes(svc) ? KUBERNETES_REGISTRY : EXTERNAL_REGISTRY;
    const { ips, headless } = serviceAddresses(svc, push, proxy, families);
    // A headless Kubernetes service resolves to its ready endpoints, as Kubernetes DNS does. A
    // ServiceEntry's endpoints carry no health status in istiod (neither healthy nor not), which its
    // name table leaves out: a headless ServiceEntry host, or one of another resolution without an
    // address (not allocated one), has nothing to answer with.
    const addresses = headless
      ? svc.resolution === 'NONE' && svc.ports.length > 0 && isKubernetes(svc)
        ? headlessAddresses(push, proxy, svc, registry, table)
        : []
      : ips;
    if (addresses.length === 0) continue;
    const shortNames = registry === KUBERNETES_REGISTRY && !svc.hostname.endsWith(CLUSTERSET_SUFFIX);
    const existing = table[svc.hostname];
    if (!existing) {
      table[svc.hostname] = shortNames ? nameInfo(addresses, registry, svc.namespace, svc.source.name) : nameInfo(addresses, registry);
    } else if (existing.registry !== KUBERNETES_REGISTRY) {
      // A Kubernetes service takes over the host a ServiceEntry decorates; two ServiceEntries merge their addresses.
      if (registry === KUBERNETES_REGISTRY) {
        table[svc.hostname] = shortNames ? nameInfo(addresses, registry, svc.namespace, svc.source.name) : nameInfo(addresses, registry);
      } else {
        existing.ips.push(...addresses);
      }
    }
  }
  return create(NameTableSchema, { table });
}
