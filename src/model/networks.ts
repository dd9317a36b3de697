/**
 * Multi-network, as istiod models it (pilot/pkg/model/network.go and the Kubernetes registry's
 * network manager, serviceregistry/kube/controller/network.go): which network an endpoint is in,
 * and the gateways through which other networks reach each network.
 *
 * An endpoint's network: a WorkloadEntry's or ServiceEntry endpoint's `network` field (nothing else:
 * istiod, seen against its capture, gives those no fallback); for a Kubernetes endpoint, the first
 * that applies of its pod's `topology.istio.io/network` label, the system namespace's label, the
 * meshNetworks network whose `fromRegistry` names this cluster, the one whose `fromCidr` holds the
 * address.
 *
 * Gateways: meshNetworks `gateways[].address` (no cluster); Kubernetes Services labelled
 * `topology.istio.io/network` (port `networking.istio.io/gatewayPort`, default 15443; HBONE on
 * 15008 when the Service has that port); and Services named by a `registryServiceName` of a network
 * whose `fromRegistry` is this cluster. A Service gateway is at each of its external addresses (load
 * balancer ingress, externalIPs, a NodePort gateway's nodes, on the node port); one named by a host
 * name at each address that name resolves to.
 */
import { BlockList, isIP } from 'node:net';
import { type Config, type GatewaySpec, type MeshNetworks, EMPTY_MESH_NETWORKS, specJson } from '../config/index.js';
import { NETWORK_LABEL } from '../config/constants.js';
import type { Endpoint, RegistrySnapshot, Service } from '../registry/index.js';

/** `networking.istio.io/gatewayPort`: the mTLS port of a Service labelled as a network gateway. */
export const GATEWAY_PORT_LABEL = 'networking.istio.io/gatewayPort';
/** istiod's DefaultNetworkGatewayPort (the east-west gateway's AUTO_PASSTHROUGH port) and HBONE port. */
export const DEFAULT_NETWORK_GATEWAY_PORT = 15443;
export const DEFAULT_NETWORK_GATEWAY_HBONE_PORT = 15008;

/** What decides networks beside the registries; a new value of it is a full push. */
export interface NetworkSettings {
  readonly meshNetworks: MeshNetworks;
  /** The system namespace's `topology.istio.io/network` label ('' when none or no cluster). */
  readonly systemNamespaceNetwork: string;
  /** This control plane's cluster (CLUSTER_ID): `fromRegistry` matches it; Service gateways are in it. */
  readonly clusterId: string;
  /** A Kubernetes registry runs: the fallbacks after an endpoint's own network apply. */
  readonly kubernetes: boolean;
  /**
   * The addresses of gateways named by a host name (a meshNetworks `address`, a load balancer's
   * hostname), as the control plane resolved them (RESOLVE_HOSTNAME_GATEWAYS): a name without an
   * entry has no gateway yet.
   */
  readonly gatewayNames?: ReadonlyMap<string, readonly string[]>;
  /** PILOT_MULTI_NETWORK_DISCOVER_GATEWAY_API (default on): Gateway API Gateways labelled with a network are network gateways. */
  readonly gatewayApi?: boolean;
}

export const DEFAULT_NETWORK_SETTINGS: NetworkSettings = Object.freeze({
  meshNetworks: EMPTY_MESH_NETWORKS,
  systemNamespaceNetwork: '',
  clusterId: 'Kubernetes',
  kubernetes: false,
});

/** istiod's NetworkGateway. `port` 0: no mTLS port (an HBONE-only gateway). */
export interface NetworkGateway {
  readonly network: string;
  readonly cluster: string;
  readonly address: string;
  readonly port: number;
  readonly hbonePort: number;
}

/** istiod's SortGateways: by address, then port. */
export function compareGateways(a: NetworkGateway, b: NetworkGateway): number {
  return a.address < b.address ? -1 : a.address > b.address ? 1 : a.port - b.port;
}

export const gatewayKey = (g: NetworkGateway): string => `${g.network}|${g.cluster}|${g.address}|${g.port}|${g.hbonePort}`;

const gcd = (x: number, y: number): number => (y === 0 ? x : gcd(y, x % y));

/** The gateways of every network, indexed as istiod's NetworkGateways. */
export class NetworkGateways {
  readonly all: readonly NetworkGateway[];
  /** istiod's lcm of the gateway counts per network and per network+cluster: every endpoint weight is scaled by it. */
  readonly scaleFactor: number;
  /** One string for the whole set: equal keys, equal gateways. */
  readonly key: string;
  /** Gateway addresses that are host names (resolved through NetworkSettings.gatewayNames). */
  readonly hostnames: ReadonlySet<string>;
  readonly #byNetwork = new Map<string, NetworkGateway[]>();
  readonly #byNetworkAndCluster = new Map<string, NetworkGateway[]>();

  constructor(gateways: readonly NetworkGateway[], hostnames: ReadonlySet<string> = new Set()) {
    this.hostnames = hostnames;
    const unique = new Map(gateways.map((g) => [gatewayKey(g), g]));
    this.all = [...unique.values()].sort(compareGateways);
    for (const g of this.all) {
      push(this.#byNetwork, g.network, g);
      push(this.#byNetworkAndCluster, `${g.network}|${g.cluster}`, g);
    }
    let lcm = 1;
    for (const list of [...this.#byNetwork.values(), ...this.#byNetworkAndCluster.values()])
      lcm = (lcm * list.length) / gcd(lcm, list.length);
    this.scaleFactor = lcm;
    this.key = [...unique.keys()].sort().join(',');
  }

  /** istiod's IsMultiNetworkEnabled: some network has a gateway. */
  get multiNetwork(): boolean {
    return this.all.length > 0;
  }

  /** The gateways of the endpoint's network and cluster, else of its network (istiod's selectNetworkGateways). */
  forNetwork(network: string, cluster: string): readonly NetworkGateway[] {
    const exact = this.#byNetworkAndCluster.get(`${network}|${cluster}`);
    return exact && exact.length > 0 ? exact : (this.#byNetwork.get(network) ?? []);
  }
}

function push<V>(m: Map<string, V[]>, k: string, v: V): void {
  const l = m.get(k);
  if (l) l.push(v);
  else m.set(k, [v]);
}

/** A Service's gateway ports without its addresses: by its network label, else by meshNetworks registryServiceName. */
function serviceGatewayTemplates(
  s: Service,
  byRegistryName: ReadonlyMap<string, readonly { network: string; port: number }[]>,
): { network: string; port: number; hbonePort: number }[] {
  const network = s.labels?.[NETWORK_LABEL];
  if (network !== undefined && network !== '') {
    const label = s.labels?.[GATEWAY_PORT_LABEL];
    // istiod logs an unparsable label and keeps the default.
    const port = label !== undefined && /^\d+$/.test(label) ? Number(label) : DEFAULT_NETWORK_GATEWAY_PORT;
    const mtls = s.ports.some((p) => p.port === port);
    const hbone = s.ports.some((p) => p.port === DEFAULT_NETWORK_GATEWAY_HBONE_PORT);
    if (!mtls && !hbone) return [];
    return [{ network, port: mtls ? port : 0, hbonePort: hbone ? DEFAULT_NETWORK_GATEWAY_HBONE_PORT : 0 }];
  }
  return (byRegistryName.get(s.hostname) ?? []).map((g) => ({ ...g, hbonePort: 0 }));
}

/** The networks whose `fromRegistry` names `clusterId`, in meshNetworks order. */
function registryNetworks(settings: NetworkSettings, clusterId: string): string[] {
  return Object.entries(settings.meshNetworks.networks)
    .filter(([, n]) => n.endpoints.some((e) => e.fromRegistry === clusterId))
    .map(([id]) => id);
}

/** The cluster a registry reads: its own id, else (file mode, config registries) this control plane's. */
const registryCluster = (settings: NetworkSettings, r: RegistrySnapshot): string => r.clusterId ?? settings.clusterId;

/**
 * Every gateway: meshNetworks addresses, then the registries' Kubernetes Services. A gateway named
 * by a host name is at each address it resolved to (istiod's resolveHostnameGateways: none until
 * resolved); NodePort gateways (their node addresses) are left out.
 */
export function networkGateways(
  settings: NetworkSettings,
  registries: readonly RegistrySnapshot[],
  kubernetesGateways: readonly Config<'KubernetesGateway'>[] = [],
): NetworkGateways {
  const out: NetworkGateway[] = [];
  const hostnames = new Set<string>();
  const at = (address: string): readonly string[] => {
    if (isIP(address) !== 0) return [address];
    hostnames.add(address);
    return settings.gatewayNames?.get(address) ?? [];
  };
  for (const [network, n] of Object.entries(settings.meshNetworks.networks)) {
    for (const g of n.gateways) {
      if (g.address === undefined || g.address === '') continue;
      for (const address of at(g.address)) out.push({ network, cluster: '', address, port: g.port, hbonePort: 0 });
    }
  }
  for (const r of registries) {
    // Each cluster's gateways are its own (istiod's per-cluster NetworkGatewaysWatcher): a
    // registryServiceName counts in the clusters a network's fromRegistry names.
    const cluster = registryCluster(settings, r);
    const byRegistryName = new Map<string, { network: string; port: number }[]>();
    for (const network of registryNetworks(settings, cluster)) {
      for (const g of settings.meshNetworks.networks[network]?.gateways ?? [])
        if (g.registryServiceName !== undefined) push(byRegistryName, g.registryServiceName, { network, port: g.port });
    }
    for (const s of r.services) {
      if (s.source.kind !== ('Service' as string) || !s.externalAddresses) continue;
      for (const t of serviceGatewayTemplates(s, byRegistryName)) {
        // A NodePort gateway is reached on the node port of its mTLS port (istiod maps that port only).
        const port = s.nodePorts?.[t.port] ?? t.port;
        for (const external of s.externalAddresses) for (const address of at(external)) out.push({ ...t, port, cluster, address });
      }
    }
  }
  if (settings.gatewayApi !== false) {
    for (const g of kubernetesGateways)
      for (const t of gatewayApiTemplates(g)) for (const address of at(t.address)) out.push({ ...t, cluster: settings.clusterId, address });
  }
  return new NetworkGateways(out, hostnames);
}

/** istiod's ListenerModeOption and its auto-passthrough value. */
const LISTENER_MODE_OPTION = 'gateway.istio.io/listener-protocol';

/**
 * The network gateways of a Gateway API Gateway labelled with a network (istiod's
 * handleGatewayResource): at each IPAddress or Hostname address, on each auto-passthrough listener
 * (TLS with the auto-passthrough option, or on the network gateway port: 15443 or the
 * gatewayPort label), and on each HBONE listener (port and HBONE port alike).
 */
function gatewayApiTemplates(g: Config<'KubernetesGateway'>): NetworkGateway[] {
  const network = g.meta.labels[NETWORK_LABEL];
  if (network === undefined || network === '') return [];
  const spec = specJson<GatewaySpec>(g.spec);
  const expectedPort = g.meta.labels[GATEWAY_PORT_LABEL] ?? String(DEFAULT_NETWORK_GATEWAY_PORT);
  const listeners = spec.listeners ?? [];
  const passthrough = listeners.filter(
    (l) => l.tls !== undefined && (l.tls.options?.[LISTENER_MODE_OPTION] === 'auto-passthrough' || String(l.port) === expectedPort),
  );
  const hbone = listeners.filter((l) => l.protocol === 'HBONE');
  const out: NetworkGateway[] = [];
  for (const a of spec.addresses ?? []) {
    if ((a.type !== 'IPAddress' && a.type !== 'Hostname') || !a.value) continue;
    for (const l of passthrough) out.push({ network, cluster: '', address: a.value, port: l.port, hbonePort: 0 });
    for (const l of hbone) out.push({ network, cluster: '', address: a.value, port: l.port, hbonePort: l.port });
  }
  return out;
}

/** Which network an endpoint is in (see the top of this file). */
export class EndpointNetworks {
  readonly #settings: NetworkSettings;
  /** The remote clusters' system namespace networks (see remoteClusterNetworks). */
  readonly #clusterNetworks: ReadonlyMap<string, string>;
  /** A cluster's network by meshNetworks `fromRegistry` (the first one naming it), computed once per cluster. */
  readonly #fromRegistry = new Map<string, string>();
  /** Shortest prefix first (see #byCidr). */
  readonly #cidrs: readonly { readonly network: string; readonly bits: number; readonly list: BlockList }[];

  constructor(settings: NetworkSettings, clusterNetworks: ReadonlyMap<string, string> = new Map()) {
    this.#settings = settings;
    this.#clusterNetworks = clusterNetworks;
    this.#cidrs = Object.entries(settings.meshNetworks.networks).flatMap(([network, n]) =>
      n.endpoints.flatMap((e) => {
        if (e.fromCidr === undefined) return [];
        const [addr = '', bits] = e.fromCidr.split('/');
        const family = isIP(addr) === 6 ? 'ipv6' : 'ipv4';
        const list = new BlockList();
        if (bits === undefined) list.addAddress(addr, family);
        else list.addSubnet(addr, Number(bits), family);
        return [{ network, bits: bits === undefined ? (family === 'ipv6' ? 128 : 32) : Number(bits), list }];
      }),
    );
    this.#cidrs = [...this.#cidrs].sort((a, b) => a.bits - b.bits);
  }

  networkOf(e: Endpoint): string {
    if (e.network !== '') return e.network;
    // WorkloadEntries and ServiceEntry endpoints name their network or have none: istiod (seen
    // against its capture) applies no label, namespace or meshNetworks fallback to them.
    if (!this.#settings.kubernetes || e.source.kind === 'WorkloadEntry' || e.source.kind === 'ServiceEntry') return '';
    // Every cluster's endpoints fall back on that cluster's system namespace label and fromRegistry
    // (istiod's network of each Kubernetes controller), not on this control plane's.
    const cluster = e.clusterId ?? this.#settings.clusterId;
    const local = cluster === this.#settings.clusterId;
    const namespaceNetwork = local ? this.#settings.systemNamespaceNetwork : (this.#clusterNetworks.get(cluster) ?? '');
    return e.labels[NETWORK_LABEL] || namespaceNetwork || this.#registryNetwork(cluster) || this.#byCidr(e.address);
  }

  /** True when `clusterNetworks` would build this same lookup (the push context keeps it then). */
  sameClusterNetworks(clusterNetworks: ReadonlyMap<string, string>): boolean {
    return sameMap(this.#clusterNetworks, clusterNetworks);
  }

  #registryNetwork(cluster: string): string {
    let network = this.#fromRegistry.get(cluster);
    if (network === undefined) this.#fromRegistry.set(cluster, (network = registryNetworks(this.#settings, cluster)[0] ?? ''));
    return network;
  }

  /**
   * istiod takes the first of cidranger's ContainingNetworks, which walks the prefix trie from its
   * root: the shortest containing prefix (ties: meshNetworks order here, map order there).
   */
  #byCidr(address: string): string {
    const family = isIP(address);
    if (family === 0) return '';
    const type = family === 6 ? 'ipv6' : 'ipv4';
    return this.#cidrs.find((c) => c.list.check(address, type))?.network ?? '';
  }
}

/**
 * The system namespace network of each remote cluster's registry that has one (the local
 * cluster's is NetworkSettings.systemNamespaceNetwork, watched with the meshNetworks).
 */
export function remoteClusterNetworks(settings: NetworkSettings, registries: readonly RegistrySnapshot[]): ReadonlyMap<string, string> {
  const out = new Map<string, string>();
  for (const r of registries)
    if (r.clusterId !== undefined && r.clusterId !== settings.clusterId && r.systemNamespaceNetwork)
      out.set(r.clusterId, r.systemNamespaceNetwork);
  return out;
}

function sameMap(a: ReadonlyMap<string, string>, b: ReadonlyMap<string, string>): boolean {
  return a.size === b.size && [...a].every(([k, v]) => b.get(k) === v);
}
