import type { Proxy, PushContext } from '../model/index.js';
import { proxyIpFamily } from './endpoint/network-filter.js';

/**
 * What outbound clusters and endpoints depend on besides the visible services: the namespace
 * (DestinationRule visibility), labels, locality, network and cluster (locality failover and
 * failoverPriority), the network, the networks it asked to see and its IP family (split-horizon
 * EDS picks the gateways of that family). Envoy's and proxyless clients' EDS key on it alike.
 */
export function topologyKey(push: PushContext, proxy: Proxy): string {
  return keysOf(push, proxy).topology;
}

/** Outbound clusters also depend on what the proxy can load (metadata exchange as an upstream filter). */
export const clusterKey = (push: PushContext, proxy: Proxy): string => keysOf(push, proxy).cluster;

interface ProxyKeys {
  readonly topology: string;
  readonly cluster: string;
}

/** Proxies' keys per snapshot, spelled once (a push asks for each proxy's CDS and EDS); gone with the snapshot. */
const proxyKeys = new WeakMap<PushContext, WeakMap<Proxy, ProxyKeys>>();

function keysOf(push: PushContext, proxy: Proxy): ProxyKeys {
  let byProxy = proxyKeys.get(push);
  if (!byProxy) proxyKeys.set(push, (byProxy = new WeakMap()));
  let keys = byProxy.get(proxy);
  if (!keys) {
    const l = proxy.locality;
    const m = proxy.metadata;
    const topology = `${proxy.type}|${push.clusterViewKey(proxy)}|${l.region}/${l.zone}/${l.subzone}|${m.network}|${m.requestedNetworkView.join(',')}|${m.clusterId ?? ''}|${proxyIpFamily(proxy) ?? ''}`;
    byProxy.set(proxy, (keys = { topology, cluster: `${topology}|${proxy.extensions.key}` }));
  }
  return keys;
}
