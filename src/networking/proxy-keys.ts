import { isIP } from 'node:net';
import type { Proxy, PushContext } from '../model/index.js';

/**
 * What outbound clusters and endpoints depend on besides the visible services: the namespace
 * (DestinationRule visibility), labels, locality, network and cluster (locality failover and
 * failoverPriority), the network, the networks it asked to see and its IP families (split-horizon
 * EDS picks the gateways of its family; DNS clusters resolve IPv6 only for IPv6-only proxies).
 * Envoy's and proxyless clients' EDS key on it alike.
 */
export function topologyKey(push: PushContext, proxy: Proxy): string {
  return keysOf(push, proxy).topology;
}

/** Outbound clusters also depend on what the proxy can load (metadata exchange as an upstream filter). */
export const clusterKey = (push: PushContext, proxy: Proxy): string => keysOf(push, proxy).cluster;

/** clusterKey without the namespace: one service's clusters are keyed by the DestinationRule that applies instead. */
export const serviceClusterKey = (push: PushContext, proxy: Proxy): string => keysOf(push, proxy).serviceCluster;

interface ProxyKeys {
  readonly topology: string;
  readonly cluster: string;
  readonly serviceCluster: string;
}

/** A proxy's keys with the snapshot's view keys they were spelled with: spelled again only when those change. */
const proxyKeys = new WeakMap<Proxy, { readonly view: string; readonly serviceView: string; readonly keys: ProxyKeys }>();

/** The part of the keys that is the proxy's own (immutable): spelled once per proxy, not per snapshot. */
const whereByProxy = new WeakMap<Proxy, string>();

function whereOf(proxy: Proxy): string {
  let where = whereByProxy.get(proxy);
  if (where === undefined) {
    const l = proxy.locality;
    const m = proxy.metadata;
    // The families of its addresses (none, 4, 6 or both): what ipFamilies and proxyIpFamily read.
    const families = [...new Set(proxy.ipAddresses.map((a) => isIP(a)))].sort().join('');
    where = `${l.region}/${l.zone}/${l.subzone}|${m.network}|${m.requestedNetworkView.join(',')}|${m.clusterId ?? ''}|${families}`;
    whereByProxy.set(proxy, where);
  }
  return where;
}

function keysOf(push: PushContext, proxy: Proxy): ProxyKeys {
  const view = push.clusterViewKey(proxy);
  const serviceView = push.serviceClusterViewKey(proxy);
  const known = proxyKeys.get(proxy);
  if (known && known.view === view && known.serviceView === serviceView) return known.keys;
  const where = whereOf(proxy);
  const topology = `${proxy.type}|${view}|${where}`;
  const keys = {
    topology,
    cluster: `${topology}|${proxy.extensions.key}`,
    serviceCluster: `${proxy.type}|${serviceView}|${where}|${proxy.extensions.key}`,
  };
  proxyKeys.set(proxy, { view, serviceView, keys });
  return keys;
}
