/**
 * Services of two clusters as proxies of each cluster see them.
 *
 * A Kubernetes Service in both clusters with a different ClusterIP in each, merged into one
 * service: every proxy is given its own cluster's address (istiod's ClusterVIPs and
 * GetAddressForProxy) in its outbound TCP listener, its route domains and its DNS name table; a
 * proxy of a cluster without the Service, or naming none, gets the first cluster's. Proxies of the
 * two clusters are generated interleaved from one PushContext and cache, so a cache key that left
 * the cluster out would hand one the other's config. A headless Service's pod names resolve to the
 * proxy's own cluster's pods where it has them.
 *
 * Cluster-local hosts (the mesh config's serviceSettings over istiod's defaults): a proxy's EDS
 * holds its own cluster's endpoints of them only, Envoy's and proxyless gRPC's alike.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fromBinary } from '@bufbuild/protobuf';
import type { V1Service } from '@kubernetes/client-node';
import { NameTableSchema } from '../gen/dns/proto/nds_pb.js';
import { defaultMeshConfig } from '../config/mesh/mesh-config.js';
import { parseMeshConfig } from '../config/mesh/mesh-config-file.js';
import { ClusterLoadAssignmentSchema } from '../gen/envoy/config/endpoint/v3/endpoint_pb.js';
import { snapshotOf } from '../../test/support/config-fixture.js';
import { generateFor, proxyFor } from '../../test/support/scenario.js';
import { PushContext } from '../model/push-context.js';
import { pushRequest } from '../model/push-request.js';
import type { Endpoint } from '../registry/model.js';
import { KubeRegistrySnapshot, type KubeServiceEntry } from '../registry/kube/kube-snapshot.js';
import { convertService } from '../registry/kube/translate.js';
import { silentLogger } from '../util/log.js';
import { GeneratorRegistry } from '../xds/generator.js';
import { TypeUrl } from '../xds/type-urls.js';
import { ndsGenerator } from './dns/nds-generator.js';
import { registerEnvoyGenerators } from './envoy-generators.js';
import { configCredentials } from './gateway/config-credentials.js';
import { registerGrpcGenerators } from './grpc/grpc-generators.js';

const service = (name: string, clusterIP: string, port: { name: string; port: number }, namespace = 'shop'): V1Service => ({
  metadata: { name, namespace },
  spec: { clusterIP, selector: { app: name }, ports: [{ ...port, targetPort: 8080 }] },
});

const endpoint = (address: string, servicePort: number, clusterId: string): Endpoint => ({
  address,
  port: 8080,
  servicePort,
  labels: {},
  locality: { region: '', zone: '', subzone: '' },
  weight: 1,
  serviceAccount: '',
  network: '',
  source: { kind: 'Pod' as never, namespace: '', name: address },
  clusterId,
});

/**
 * One cluster's registry: `db` (TCP 5432) and `web` (HTTP 80) with the given ClusterIPs, and
 * `ledger` (TCP 7000) in `shop` and `dns` (TCP 53) in `kube-system`, each with one endpoint at `podIp`.
 */
function cluster(id: string, ips: { db: string; web: string }, podIp: string): KubeRegistrySnapshot {
  const entry = (svc: V1Service): [string, KubeServiceEntry] => {
    const s = convertService(svc, 'cluster.local');
    const port = s.ports[0]!.port;
    return [s.hostname, { service: s, endpoints: new Map([[port, [endpoint(podIp, port, id)]]]) }];
  };
  const entries = new Map([
    entry(service('db', ips.db, { name: 'tcp-db', port: 5432 })),
    entry(service('web', ips.web, { name: 'http', port: 80 })),
    entry(service('ledger', '', { name: 'tcp', port: 7000 })),
    entry(service('dns', '', { name: 'tcp-dns', port: 53 }, 'kube-system')),
  ]);
  // `cache`, headless, its pod `cache-0` (subdomain cache) in each cluster.
  const cache = convertService(service('cache', 'None', { name: 'tcp-cache', port: 6379 }), 'cluster.local');
  const pod = { ...endpoint(podIp.replace(/\.1$/, '.9'), 6379, id), podDns: { hostname: 'cache-0', subdomain: 'cache' } };
  entries.set(cache.hostname, { service: cache, endpoints: new Map([[6379, [pod]]]) });
  return new KubeRegistrySnapshot(entries, undefined, undefined, undefined, id);
}

const registries = [
  cluster('c1', { db: '10.96.0.70', web: '10.96.0.50' }, '10.1.0.1'),
  cluster('c2', { db: '10.96.1.70', web: '10.96.1.50' }, '10.2.0.1'),
];

const push = new PushContext({
  version: '1',
  mesh: defaultMeshConfig(),
  config: snapshotOf([]),
  clusterId: 'c1',
  registries,
});
const generators = registerGrpcGenerators(
  registerEnvoyGenerators(new GeneratorRegistry(), {
    logger: silentLogger,
    credentials: (p) => configCredentials(p.config, silentLogger),
  }),
);

interface View {
  readonly tcpListeners: string[];
  readonly webDomains: string[];
  readonly dns: Record<string, string[]>;
}

function view(ip: string, clusterId: string | undefined): View {
  const proxy = proxyFor({
    id: `sidecar~${ip}~client.shop~shop.svc.cluster.local`,
    labels: { app: 'client' },
    metadata: clusterId !== undefined ? { CLUSTER_ID: clusterId } : {},
  });
  const g = generateFor(push, generators, proxy);
  const nds = ndsGenerator.generate(
    proxy,
    { typeUrl: TypeUrl.NameTable, names: new Set(), wildcard: true },
    push,
    pushRequest({ full: true, start: 0 }),
  );
  const table = fromBinary(NameTableSchema, [...nds][0]!.value).table;
  return {
    tcpListeners: g.listeners.map((l) => l.name).filter((n) => n.endsWith('_5432')),
    webDomains: g.routes
      .filter((r) => r.name === '80')
      .flatMap((r) => r.virtualHosts.filter((vh) => vh.name === 'web.shop.svc.cluster.local:80').flatMap((vh) => vh.domains))
      .filter((d) => /^\d/.test(d)),
    dns: Object.fromEntries(Object.entries(table).map(([host, info]) => [host, info.ips])),
  };
}

const expected = (ips: { db: string; web: string }, cachePod: string[]): View => ({
  tcpListeners: [`${ips.db}_5432`],
  webDomains: [ips.web],
  dns: {
    'db.shop.svc.cluster.local': [ips.db],
    'web.shop.svc.cluster.local': [ips.web],
    // Headless: every cluster's pods; a pod name the proxy's own cluster has is its cluster's alone (istiod).
    'cache.shop.svc.cluster.local': ['10.1.0.9', '10.2.0.9'],
    'cache-0.cache.shop.svc.cluster.local': cachePod,
  },
});

describe("a Service of two clusters: each proxy gets its own cluster's ClusterIP", () => {
  it('outbound TCP listener, route domains and name table, interleaved over one cache', () => {
    const c1 = { db: '10.96.0.70', web: '10.96.0.50' };
    const c2 = { db: '10.96.1.70', web: '10.96.1.50' };
    // Twice each, interleaved: the second round is served from the cache.
    for (let round = 0; round < 2; round++) {
      assert.deepEqual(view('10.1.9.1', 'c1'), expected(c1, ['10.1.0.9']), `round ${round}: cluster 1's proxy`);
      assert.deepEqual(view('10.2.9.1', 'c2'), expected(c2, ['10.2.0.9']), `round ${round}: cluster 2's proxy`);
      assert.deepEqual(
        view('10.3.9.1', 'c3'),
        expected(c1, ['10.1.0.9', '10.2.0.9']),
        `round ${round}: a cluster without the Services: the first cluster's addresses, every cluster's pods`,
      );
      assert.deepEqual(
        view('10.1.9.2', undefined),
        expected(c1, ['10.1.0.9', '10.2.0.9']),
        `round ${round}: no CLUSTER_ID: meshpilot's own cluster's addresses (c1); for pod names in every cluster (istiod's InCluster)`,
      );
    }
  });

  it('the endpoints are still those of both clusters, whatever the proxy', () => {
    assert.deepEqual(
      push.endpoints('db.shop.svc.cluster.local', 5432).map((e) => `${e.address}@${e.clusterId ?? ''}`),
      ['10.1.0.1@c1', '10.2.0.1@c2'],
    );
  });

  it('only proxies of a cluster whose addresses differ are keyed by it', () => {
    const key = (clusterId: string): string =>
      push.clusterAddressKey(proxyFor({ id: 'sidecar~10.0.0.1~a.shop~shop.svc.cluster.local', metadata: { CLUSTER_ID: clusterId } }));
    assert.deepEqual(['c1', 'c2', 'c3'].map(key), ['', 'c2', '']);
  });
});

describe("cluster-local hosts: the endpoints of the proxy's own cluster only", () => {
  const clusterLocalPush = (mesh: string): PushContext =>
    new PushContext({
      version: '1',
      mesh: parseMeshConfig(mesh, 'test mesh config', 'cluster.local').mesh,
      config: snapshotOf([]),
      clusterId: 'c1',
      registries,
    });
  /** `host → endpoint addresses` of the EDS a proxy of `clusterId` is sent (Envoy or proxyless gRPC). */
  function endpointsSeen(p: PushContext, clusterId: string, grpc = false): Record<string, string[]> {
    const proxy = proxyFor({
      id: `sidecar~10.9.9.9~client.shop~shop.svc.cluster.local`,
      metadata: { CLUSTER_ID: clusterId, ...(grpc ? { GENERATOR: 'grpc' } : {}) },
    });
    const names = ['outbound|7000||ledger.shop.svc.cluster.local', 'outbound|53||dns.kube-system.svc.cluster.local'];
    const gen = generators.lookup(proxy, TypeUrl.ClusterLoadAssignment)!;
    const out: Record<string, string[]> = {};
    for (const r of gen.generate(
      proxy,
      { typeUrl: TypeUrl.ClusterLoadAssignment, names: new Set(names), wildcard: false },
      p,
      pushRequest({ full: true, start: 0 }),
    )) {
      const cla = fromBinary(ClusterLoadAssignmentSchema, r.value);
      out[cla.clusterName.split('|')[3]!.split('.')[0]!] = cla.endpoints
        .flatMap((g) =>
          g.lbEndpoints.map((e) =>
            e.hostIdentifier.case === 'endpoint' && e.hostIdentifier.value.address?.address.case === 'socketAddress'
              ? e.hostIdentifier.value.address.address.value.address
              : '?',
          ),
        )
        .sort();
    }
    return out;
  }

  it("istiod's defaults: kube-system is cluster-local, other hosts reach both clusters", () => {
    const p = clusterLocalPush('{}');
    assert.deepEqual(endpointsSeen(p, 'c1'), { ledger: ['10.1.0.1', '10.2.0.1'], dns: ['10.1.0.1'] });
    assert.deepEqual(endpointsSeen(p, 'c2'), { ledger: ['10.1.0.1', '10.2.0.1'], dns: ['10.2.0.1'] });
  });

  it('serviceSettings: a host made cluster-local, the kube-system default turned off', () => {
    const p = clusterLocalPush(
      [
        'serviceSettings:',
        '- settings: {clusterLocal: true}',
        '  hosts: ["*.shop.svc.cluster.local"]',
        '- settings: {clusterLocal: false}',
        '  hosts: ["dns.kube-system.svc.cluster.local"]',
      ].join('\n'),
    );
    for (const grpc of [false, true]) {
      const via = grpc ? 'proxyless gRPC' : 'Envoy';
      assert.deepEqual(endpointsSeen(p, 'c1', grpc), { ledger: ['10.1.0.1'], dns: ['10.1.0.1', '10.2.0.1'] }, `${via}, cluster 1`);
      assert.deepEqual(endpointsSeen(p, 'c2', grpc), { ledger: ['10.2.0.1'], dns: ['10.1.0.1', '10.2.0.1'] }, `${via}, cluster 2`);
    }
  });
});
