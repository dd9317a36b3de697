/** Config for the in-process benchmarks: a mesh of ServiceEntries, WorkloadEntries, DestinationRules and VirtualServices. */
import { MemorySource } from '../../src/config/sources/memory-source.js';
import { ConfigStore } from '../../src/config/store.js';
import { silentLogger } from '../../src/util/log.js';

export type Doc = Record<string, unknown>;

export interface MeshShape {
  readonly services: number;
  readonly namespaces: number;
  readonly endpoints: number;
  /** A Sidecar per namespace importing only `./*` and `istio-system/*`. */
  readonly sidecar: boolean;
}

/** Workload address of endpoint `n` (10.200.0.0 onwards). */
export const workloadAddress = (n: number): string => `10.${200 + Math.floor(n / 65536)}.${Math.floor(n / 256) % 256}.${n % 256}`;

/**
 * S services over NS namespaces, each a ServiceEntry (HTTP 8080 + gRPC 9090) selecting E
 * WorkloadEntries, a DestinationRule with two subsets and a VirtualService splitting between them.
 */
export function meshDocs(shape: MeshShape): Doc[] {
  const { services, namespaces: NAMESPACES, endpoints: ENDPOINTS, sidecar: withSidecar } = shape;
  const docs: Doc[] = [];
  for (let i = 0; i < services; i++) {
    const ns = `ns-${i % NAMESPACES}`;
    const name = `svc-${i}`;
    const host = `${name}.${ns}.svc.cluster.local`;
    const vip = `10.${100 + Math.floor(i / 65536)}.${Math.floor(i / 256) % 256}.${i % 256}`;
    docs.push({
      apiVersion: 'networking.istio.io/v1',
      kind: 'ServiceEntry',
      metadata: { name, namespace: ns },
      spec: {
        hosts: [host],
        addresses: [vip],
        location: 'MESH_INTERNAL',
        resolution: 'STATIC',
        ports: [
          { number: 8080, name: 'http', protocol: 'HTTP' },
          { number: 9090, name: 'grpc', protocol: 'GRPC' },
        ],
        workloadSelector: { labels: { app: name } },
      },
    });
    for (let e = 0; e < ENDPOINTS; e++) {
      const n = i * ENDPOINTS + e;
      docs.push({
        apiVersion: 'networking.istio.io/v1',
        kind: 'WorkloadEntry',
        metadata: { name: `${name}-${e}`, namespace: ns },
        spec: {
          address: workloadAddress(n),
          labels: { app: name, version: e % 2 === 0 ? 'v1' : 'v2', 'security.istio.io/tlsMode': 'istio' },
          serviceAccount: name,
          locality: `region-${e % 2}/zone-${e % 3}`,
        },
      });
    }
    docs.push({
      apiVersion: 'networking.istio.io/v1',
      kind: 'DestinationRule',
      metadata: { name, namespace: ns },
      spec: {
        host,
        trafficPolicy: { outlierDetection: { consecutive5xxErrors: 5 } },
        subsets: [
          { name: 'v1', labels: { version: 'v1' } },
          { name: 'v2', labels: { version: 'v2' } },
        ],
      },
    });
    docs.push({
      apiVersion: 'networking.istio.io/v1',
      kind: 'VirtualService',
      metadata: { name, namespace: ns },
      spec: {
        hosts: [host],
        http: [
          { match: [{ headers: { 'end-user': { exact: 'canary' } } }], route: [{ destination: { host, subset: 'v2' } }] },
          {
            route: [
              { destination: { host, subset: 'v1' }, weight: 90 },
              { destination: { host, subset: 'v2' }, weight: 10 },
            ],
            timeout: '5s',
          },
        ],
      },
    });
  }
  if (withSidecar) {
    for (let n = 0; n < NAMESPACES; n++) {
      docs.push({
        apiVersion: 'networking.istio.io/v1',
        kind: 'Sidecar',
        metadata: { name: 'default', namespace: `ns-${n}` },
        spec: { egress: [{ hosts: ['./*', 'istio-system/*'] }] },
      });
    }
  }
  return docs;
}

/** A store holding `docs` and the source that feeds it (valid by construction; throws with the validation errors otherwise). */
export function configStore(docs: readonly Doc[]): ConfigStore {
  return configSource(docs).store;
}

export function configSource(docs: readonly Doc[]): { store: ConfigStore; source: MemorySource } {
  const store = new ConfigStore({ logger: silentLogger });
  const source = new MemorySource();
  for (const d of docs) {
    const r = source.add(d as never);
    if (!r.ok) throw new Error(`bench config invalid: ${JSON.stringify(r.errors)}`);
  }
  void source.start(store);
  return { store, source };
}
