/**
 * Split-horizon EDS, as istiod's EndpointsByNetworkFilter (pilot/pkg/xds/endpoints/ep_filters.go):
 * once some network has a gateway, a proxy gets the endpoints of its own network as they are and,
 * in place of the endpoints of another network, that network's gateways — each weighted by the
 * endpoints it stands for. Only mTLS endpoints are reached through a gateway (it routes by the SNI
 * of Istio mTLS: AUTO_PASSTHROUGH). Endpoints of a network without any gateway stay as they are (istiod
 * keeps that long-standing sidecar behaviour; they are reachable only if the networks route to each
 * other). Every weight is scaled by the least common multiple of the gateway counts, so an
 * endpoint's weight divides evenly among its network's gateways.
 */
import { isIP } from 'node:net';
import type { NetworkGateway, Proxy, PushContext } from '../../model/index.js';
import { compareGateways } from '../../model/index.js';
import type { Endpoint, Service } from '../../registry/index.js';
import {
  hasMtlsMetadata,
  topologyLabels,
  TRANSPORT_SOCKET_MATCH_KEY,
  type LbEndpointInit,
  type LocalityGroup,
  type WrappedEndpoint,
} from './istio-endpoint.js';

const MAX_UINT32 = 0xffffffff;
const NO_LOCALITY = { region: '', zone: '', subzone: '' } as const;

/** istiod's Proxy.InNetwork: the same network, or either side has none. */
export const inNetwork = (proxy: Proxy, network: string): boolean =>
  network === '' || proxy.metadata.network === '' || network === proxy.metadata.network;

/** istiod's ProxyView: with ISTIO_META_REQUESTED_NETWORK_VIEW, only those networks (and endpoints without one). */
export function visibleToProxy(proxy: Proxy, network: string): boolean {
  const view = proxy.metadata.requestedNetworkView;
  return view.length === 0 || network === '' || view.includes(network);
}

/** istiod's scaleEndpointLBWeight: an unset or zero weight counts as 1; clipped at the uint32 maximum. */
function scaledWeight(weight: number | undefined, scale: number): number {
  if (weight === undefined || weight === 0) return scale;
  return weight < Math.floor(MAX_UINT32 / scale) ? weight * scale : MAX_UINT32;
}

/** The proxy's one IP family (4 or 6); undefined when it has none known or both (dual stack). */
export function proxyIpFamily(proxy: Proxy): number | undefined {
  const families = new Set(proxy.ipAddresses.map((a) => isIP(a)).filter((f) => f !== 0));
  return families.size === 1 ? [...families][0] : undefined;
}

/** The gateways a proxy of this IP family can reach (istiod's filterGatewaysByIPFamily: unknown or dual stack reach all). */
function reachableByFamily(proxy: Proxy, gateways: readonly NetworkGateway[]): readonly NetworkGateway[] {
  const family = proxyIpFamily(proxy);
  if (family === undefined) return gateways;
  return gateways.filter((g) => {
    const mapped = g.address.toLowerCase().startsWith('::ffff:') && isIP(g.address.slice(7)) === 4;
    return (mapped ? 4 : isIP(g.address)) === family;
  });
}

/** The lb_endpoint standing for a gateway (istiod: mTLS metadata, telemetry label of the gateway's cluster, no health). */
function gatewayEndpoint(service: Service, gw: NetworkGateway, weight: number, servicePort: number): WrappedEndpoint {
  const endpoint: Endpoint = {
    address: gw.address,
    port: gw.port,
    servicePort,
    labels: {},
    locality: NO_LOCALITY,
    weight,
    serviceAccount: '',
    network: gw.network,
    source: service.source,
  };
  const lb: LbEndpointInit = {
    hostIdentifier: {
      case: 'endpoint',
      value: {
        address: {
          address: { case: 'socketAddress', value: { address: gw.address, portSpecifier: { case: 'portValue', value: gw.port } } },
        },
      },
    },
    loadBalancingWeight: weight,
    metadata: { filterMetadata: { [TRANSPORT_SOCKET_MATCH_KEY]: { tlsMode: 'istio' }, istio: { workload: `;;;;${gw.cluster}` } } },
  };
  return { endpoint, network: gw.network, labels: topologyLabels({}, NO_LOCALITY, gw.network, gw.cluster), lb };
}

/**
 * Applies split horizon to locality groups built for `proxy` (after grouping, before the SNI-DNAT
 * mTLS filter and locality LB, as istiod). Returns the groups unchanged while no network has a gateway.
 */
export function filterByNetwork(
  push: PushContext,
  proxy: Proxy,
  service: Service,
  servicePort: number,
  groups: LocalityGroup[],
): LocalityGroup[] {
  const gateways = push.networkGateways;
  if (!gateways.multiNetwork) return groups;
  const scale = gateways.scaleFactor || 1;
  const cluster = push.networkSettings.clusterId;
  const sidecar = proxy.type === 'sidecar';
  return groups.map((g) => {
    const endpoints: WrappedEndpoint[] = [];
    const viaGateway = new Map<string, { gw: NetworkGateway; weight: number }>();
    for (const w of g.endpoints) {
      // Sidecars cannot use an HBONE-only gateway (no mTLS port).
      const all = gateways.forNetwork(w.network, cluster).filter((gw) => !sidecar || gw.port !== 0);
      const reachable = reachableByFamily(proxy, all);
      const weight = scaledWeight(w.lb.loadBalancingWeight, scale);
      const lb = weight === w.lb.loadBalancingWeight ? w.lb : { ...w.lb, loadBalancingWeight: weight };
      // A proxy without a network still goes through the gateway of an endpoint's network.
      const forceGateway = proxy.metadata.network === '' && w.network !== '' && all.length > 0;
      if (!forceGateway && (inNetwork(proxy, w.network) || all.length === 0)) {
        // Reached directly: an endpoint without an address cannot be (istiod drops it here too).
        if (w.endpoint.address !== '') endpoints.push(lb === w.lb ? w : { ...w, lb });
        continue;
      }
      if (reachable.length === 0 || !hasMtlsMetadata(w)) continue;
      const share = Math.floor(weight / reachable.length);
      for (const gw of reachable) {
        const key = `${gw.network}|${gw.cluster}|${gw.address}|${gw.port}|${gw.hbonePort}`;
        const entry = viaGateway.get(key);
        if (entry) entry.weight += share;
        else viaGateway.set(key, { gw, weight: share });
      }
    }
    for (const { gw, weight } of [...viaGateway.values()].sort((a, b) => compareGateways(a.gw, b.gw)))
      endpoints.push(gatewayEndpoint(service, gw, weight === 0 ? 1 : weight, servicePort));
    const total = endpoints.reduce((s, e) => s + (e.lb.loadBalancingWeight ?? 0), 0);
    return { ...g, endpoints, weight: endpoints.length === 0 ? undefined : total };
  });
}
