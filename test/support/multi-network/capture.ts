/**
 * The multi-network scenarios: `one-cluster` (testdata/multi-network/cluster/) and `two-clusters`
 * (testdata/multi-network/two-clusters/: multi-primary multi-network, a primary and a remote cluster
 * from a Secret), the proxies that connect to a control plane serving each, and what is read from
 * each proxy — every ClusterLoadAssignment of the clusters its CDS names, whole, as proto3 JSON.
 * Used by scripts/capture-multi-network-golden.ts (against istiod) and
 * test/e2e/multi-network-golden.test.ts (against meshpilot), so both read the same way.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fromBinary, toJson, type JsonObject, type JsonValue } from '@bufbuild/protobuf';
import { capture, captureNamed, toOpaqueJson } from '../../../scripts/istiod-capture.js';
import { xdsJsonRegistry } from '../../../src/model/json-registry.js';
import { REPO_ROOT } from '../paths.js';
import type { NodeSpec } from '../scenario.js';
import { SCHEMA_BY_TYPE, TYPE } from '../xds-resources.js';

export const MULTI_NETWORK_DIR = join(REPO_ROOT, 'testdata', 'multi-network');
export const MULTI_NETWORK_CLUSTER_DIR = join(MULTI_NETWORK_DIR, 'cluster');
export const MULTI_NETWORK_GOLDEN = join(MULTI_NETWORK_DIR, 'istiod', 'eds.json');

const sidecar = (pod: string, ip: string, network: string | undefined, cluster?: string): NodeSpec => ({
  id: `sidecar~${ip}~${pod}.mn~mn.svc.cluster.local`,
  labels: { app: 'echo', 'security.istio.io/tlsMode': 'istio', ...(network ? { 'topology.istio.io/network': network } : {}) },
  metadata: { ...(network ? { NETWORK: network } : {}), ...(cluster ? { CLUSTER_ID: cluster } : {}) },
});

/**
 * The proxies, by the name the golden files them under: sidecars in a network with a gateway
 * (network1, network2), in one without (network5), in none; the east-west gateway of network1 (the
 * gateway chart's networkGateway values: ISTIO_META_NETWORK and ISTIO_META_REQUESTED_NETWORK_VIEW);
 * an ingress gateway that asks to see network1 and network2 only.
 */
export const PROXIES: Readonly<Record<string, NodeSpec>> = {
  'sidecar-network1': sidecar('echo-n1-a', '10.10.0.1', 'network1'),
  'sidecar-network2': sidecar('echo-n2-a', '10.20.0.1', 'network2'),
  'sidecar-network5': sidecar('echo-n5-a', '10.50.0.1', 'network5'),
  'sidecar-no-network': sidecar('echo-nonet', '10.99.0.1', undefined),
  'eastwest-network1': {
    id: 'router~10.10.5.5~istio-eastwestgateway-6d9f7c8b5-abcde.istio-system~istio-system.svc.cluster.local',
    labels: { istio: 'eastwestgateway', app: 'istio-eastwestgateway', 'topology.istio.io/network': 'network1' },
    metadata: { NETWORK: 'network1', REQUESTED_NETWORK_VIEW: 'network1' },
  },
  'ingress-network1-view-1-2': {
    id: 'router~10.10.6.6~istio-ingressgateway-5c8d9f7b6-fghij.istio-system~istio-system.svc.cluster.local',
    labels: { istio: 'ingressgateway', app: 'istio-ingressgateway' },
    metadata: { NETWORK: 'network1', REQUESTED_NETWORK_VIEW: 'network1,network2' },
  },
};

/** A proxyless gRPC client (`GENERATOR: grpc`) and the EDS clusters it asks for by name (gRPC never asks for a wildcard). */
export interface ProxylessClient {
  readonly node: NodeSpec;
  readonly clusters: readonly string[];
}

const grpcClient = (pod: string, ip: string, network: string | undefined): ProxylessClient => ({
  node: {
    id: `sidecar~${ip}~${pod}.mn~mn.svc.cluster.local`,
    labels: { app: 'grpc-client' },
    metadata: { GENERATOR: 'grpc', ...(network ? { NETWORK: network } : {}) },
  },
  clusters: ['outbound|80||echo.mn.svc.cluster.local', 'outbound|80||vm.example.com'],
});

/**
 * Proxyless gRPC clients in a network with a gateway (network1), in one without (network5), in none:
 * istiod serves them the EDS generator its sidecars get, split horizon included.
 */
export const PROXYLESS_CLIENTS: Readonly<Record<string, ProxylessClient>> = {
  'grpc-network1': grpcClient('grpc-n1', '10.10.0.7', 'network1'),
  'grpc-network5': grpcClient('grpc-n5', '10.50.0.7', 'network5'),
  'grpc-no-network': grpcClient('grpc-nonet', '10.99.0.7', undefined),
};

/** A cluster of a scenario: its id and the folder of its state (testdata/…/*.yaml). */
export interface ScenarioCluster {
  readonly id: string;
  readonly dir: string;
}

/** A multi-network scenario: the clusters (the primary, which the control plane runs against, first), its proxies, its golden. */
export interface MultiNetworkScenario {
  readonly name: string;
  readonly clusters: readonly [ScenarioCluster, ...ScenarioCluster[]];
  readonly proxies: Readonly<Record<string, NodeSpec>>;
  readonly golden: string;
  /** The proxies whose listeners and routes are captured too (captureListeners), and where. */
  readonly listeners?: { readonly proxies: readonly string[]; readonly golden: string };
  /** Proxyless gRPC clients whose EDS (by name) is captured too (captureProxylessEndpoints), and where. */
  readonly proxyless?: { readonly clients: Readonly<Record<string, ProxylessClient>>; readonly golden: string };
}

const TWO_CLUSTERS_DIR = join(MULTI_NETWORK_DIR, 'two-clusters');

/**
 * Multi-primary multi-network: cluster1 (network1) is the one the control plane reads; cluster2
 * (network2) is a remote cluster named by an istio/multiCluster Secret. Each network's east-west
 * gateway is a Service of its own cluster. Sidecars of each cluster (ISTIO_META_NETWORK and
 * ISTIO_META_CLUSTER_ID), and cluster2's east-west gateway (the chart's requested network view).
 */
export const TWO_CLUSTERS: MultiNetworkScenario = {
  name: 'two-clusters',
  clusters: [
    { id: 'cluster1', dir: join(TWO_CLUSTERS_DIR, 'cluster1') },
    { id: 'cluster2', dir: join(TWO_CLUSTERS_DIR, 'cluster2') },
  ],
  proxies: {
    'sidecar-cluster1': sidecar('echo-c1-a', '10.10.0.1', 'network1', 'cluster1'),
    'sidecar-cluster2': sidecar('echo-c2-a', '10.20.0.1', 'network2', 'cluster2'),
    'eastwest-cluster2': {
      id: 'router~10.20.5.5~istio-eastwestgateway-6d9f7c8b5-vwxyz.istio-system~istio-system.svc.cluster.local',
      labels: { istio: 'eastwestgateway', app: 'istio-eastwestgateway', 'topology.istio.io/network': 'network2' },
      metadata: { NETWORK: 'network2', REQUESTED_NETWORK_VIEW: 'network2', CLUSTER_ID: 'cluster2' },
    },
  },
  golden: join(TWO_CLUSTERS_DIR, 'istiod-eds.json'),
  // Each cluster's sidecar: `echo` and `db` have a ClusterIP of their own in each cluster.
  listeners: { proxies: ['sidecar-cluster1', 'sidecar-cluster2'], golden: join(TWO_CLUSTERS_DIR, 'istiod-lds.json') },
};

export const ONE_CLUSTER: MultiNetworkScenario = {
  name: 'one-cluster',
  clusters: [{ id: 'Kubernetes', dir: MULTI_NETWORK_CLUSTER_DIR }],
  proxies: PROXIES,
  golden: MULTI_NETWORK_GOLDEN,
  proxyless: { clients: PROXYLESS_CLIENTS, golden: join(MULTI_NETWORK_DIR, 'istiod', 'grpc-eds.json') },
};

export const SCENARIOS: Readonly<Record<string, MultiNetworkScenario>> = {
  [ONE_CLUSTER.name]: ONE_CLUSTER,
  [TWO_CLUSTERS.name]: TWO_CLUSTERS,
};

/** The API server's own endpoint: a free loopback port picked per run, whatever the control plane. */
const KUBE_API_CLUSTER = 'outbound|443||kubernetes.default.svc.cluster.local';

function normalise(name: string, json: JsonValue): JsonValue {
  if (name !== KUBE_API_CLUSTER) return json;
  return JSON.parse(JSON.stringify(json).replace(/"portValue":\d+/g, '"portValue":"<kube-apiserver port>"')) as JsonValue;
}

/** Every ClusterLoadAssignment one proxy is sent, by cluster name (names sorted). */
export async function captureEndpoints(grpcAddr: string, spec: NodeSpec): Promise<Record<string, JsonValue>> {
  const got = await capture(grpcAddr, spec);
  const cds = got.byType.get(TYPE.CDS);
  const wanted = (cds?.resources ?? [])
    .map((a) => fromBinary(SCHEMA_BY_TYPE[TYPE.CDS], a.value))
    .filter((c) => c.edsClusterConfig)
    .map((c) => c.edsClusterConfig?.serviceName || c.name)
    .sort();
  const byName = new Map<string, JsonValue>();
  for (const a of got.byType.get(TYPE.EDS)?.resources ?? []) {
    const cla = fromBinary(SCHEMA_BY_TYPE[TYPE.EDS], a.value);
    byName.set(cla.clusterName, normalise(cla.clusterName, toJson(SCHEMA_BY_TYPE[TYPE.EDS], cla) as JsonObject));
  }
  const missing = wanted.filter((n) => !byName.has(n));
  if (missing.length > 0) throw new Error(`${spec.id}: no ClusterLoadAssignment for ${missing.join(', ')} in the last EDS response`);
  return Object.fromEntries(wanted.map((n) => [n, byName.get(n)!]));
}

/** The ClusterLoadAssignments a proxyless client is sent for the clusters it names, by cluster name (names sorted). */
export async function captureProxylessEndpoints(grpcAddr: string, client: ProxylessClient): Promise<Record<string, JsonValue>> {
  const resp = await captureNamed(grpcAddr, client.node, TYPE.EDS, client.clusters);
  const byName = new Map<string, JsonValue>();
  for (const a of resp.resources) {
    const cla = fromBinary(SCHEMA_BY_TYPE[TYPE.EDS], a.value);
    byName.set(cla.clusterName, normalise(cla.clusterName, toJson(SCHEMA_BY_TYPE[TYPE.EDS], cla) as JsonObject));
  }
  const missing = client.clusters.filter((n) => !byName.has(n));
  if (missing.length > 0) throw new Error(`${client.node.id}: no ClusterLoadAssignment for ${missing.join(', ')} in the EDS response`);
  return Object.fromEntries([...client.clusters].sort().map((n) => [n, byName.get(n)!]));
}

/** Every proxyless client's endpoints, by client name. */
export async function captureAllProxyless(
  grpcAddr: string,
  clients: Readonly<Record<string, ProxylessClient>>,
): Promise<Record<string, Record<string, JsonValue>>> {
  const out: Record<string, Record<string, JsonValue>> = {};
  for (const [name, client] of Object.entries(clients)) out[name] = await captureProxylessEndpoints(grpcAddr, client);
  return out;
}

const jsonRegistry = xdsJsonRegistry();

/** Every Listener and RouteConfiguration one proxy is sent (LDS wildcard, RDS of the names its listeners use), by `<type> <name>`, proto3 JSON. */
export async function captureListeners(grpcAddr: string, spec: NodeSpec): Promise<Record<string, JsonValue>> {
  const got = await capture(grpcAddr, spec);
  const out: [string, JsonValue][] = [];
  for (const [type, label] of [
    [TYPE.LDS, 'listener'],
    [TYPE.RDS, 'route'],
  ] as const) {
    for (const a of got.byType.get(type)?.resources ?? []) {
      const msg = fromBinary(SCHEMA_BY_TYPE[type], a.value);
      out.push([`${label} ${msg.name}`, toOpaqueJson(SCHEMA_BY_TYPE[type], msg as never, jsonRegistry, new Set())]);
    }
  }
  return Object.fromEntries(out.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** Every proxy's endpoints, by proxy name. */
export async function captureAll(
  grpcAddr: string,
  proxies: MultiNetworkScenario['proxies'] = PROXIES,
): Promise<Record<string, Record<string, JsonValue>>> {
  const out: Record<string, Record<string, JsonValue>> = {};
  for (const [name, spec] of Object.entries(proxies)) out[name] = await captureEndpoints(grpcAddr, spec);
  return out;
}

/**
 * sha256 of the state files and the proxies: the golden records it, so a stale capture is told apart
 * from a regression. A remote cluster's files are named with its id (the one-cluster digest stays as it was).
 */
export function scenarioDigest(scenario: MultiNetworkScenario = ONE_CLUSTER): string {
  const h = createHash('sha256');
  scenario.clusters.forEach(({ id, dir }, i) => {
    for (const f of readdirSync(dir)
      .filter((n) => /\.ya?ml$/.test(n))
      .sort())
      h.update(`${i === 0 ? '' : `${id}/`}${f}\0${readFileSync(join(dir, f), 'utf8')}\0`);
  });
  h.update(JSON.stringify(scenario.proxies));
  return h.digest('hex');
}

/** sha256 of the scenario (scenarioDigest) and its proxyless clients: the proxyless golden records it. */
export function proxylessDigest(scenario: MultiNetworkScenario): string {
  return createHash('sha256')
    .update(`${scenarioDigest(scenario)}\0${JSON.stringify(scenario.proxyless?.clients ?? {})}`)
    .digest('hex');
}
