import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { snapshotOf } from '../../test/support/config-fixture.js';
import { aggregateRegistry } from './aggregate.js';
import { buildServiceEntryRegistry } from './service-entry-registry.js';
import { addressesInCluster, type RegistrySnapshot } from './model.js';

/** A registry as the Kubernetes registry of cluster `clusterId` presents it. */
const inCluster = (r: RegistrySnapshot, clusterId: string): RegistrySnapshot => ({
  services: r.services,
  serviceByHost: (h, ns) => r.serviceByHost(h, ns),
  endpoints: (h, port, ns) => r.endpoints(h, port, ns),
  instancesAt: (a) => r.instancesAt(a),
  clusterId,
});

const se = (name: string, host: string, ns: string, address: string): Record<string, unknown>[] => [
  {
    apiVersion: 'networking.istio.io/v1',
    kind: 'ServiceEntry',
    metadata: { name, namespace: ns },
    spec: {
      hosts: [host],
      location: 'MESH_INTERNAL',
      resolution: 'STATIC',
      ports: [{ number: 80, name: 'http', protocol: 'HTTP' }],
      endpoints: [{ address }],
    },
  },
];

describe('aggregateRegistry', () => {
  const first = buildServiceEntryRegistry(
    snapshotOf([...se('a', 'a.example.com', 'x', '10.0.0.1'), ...se('b', 'b.example.com', 'x', '10.0.0.2')]),
  );
  const second = buildServiceEntryRegistry(
    snapshotOf([
      ...se('a', 'a.example.com', 'x', '10.0.1.1'),
      ...se('a', 'a.example.com', 'y', '10.0.1.2'),
      ...se('c', 'c.example.com', 'x', '10.0.0.2'),
    ]),
  );
  const agg = aggregateRegistry([first, second]);

  it('lists every service once, the earlier registry owning a host of the same namespace', () => {
    assert.deepEqual(
      agg.services.map((s) => `${s.namespace}/${s.hostname}`),
      ['x/a.example.com', 'x/b.example.com', 'x/c.example.com', 'y/a.example.com'],
    );
    assert.deepEqual(
      agg.endpoints('a.example.com', 80, 'x').map((e) => e.address),
      ['10.0.0.1'],
    );
    assert.deepEqual(
      agg.endpoints('a.example.com', 80, 'y').map((e) => e.address),
      ['10.0.1.2'],
      "another namespace's definition stays",
    );
  });

  it('finds instances by address in every registry, only for the services each owns', () => {
    assert.deepEqual(
      agg.instancesAt('10.0.0.2').map((i) => i.service.hostname),
      ['b.example.com', 'c.example.com'],
    );
    assert.deepEqual(agg.instancesAt('10.0.1.1'), [], 'the shadowed definition serves nothing');
  });

  it('is the registry itself when there is one', () => {
    assert.equal(aggregateRegistry([first]), first);
  });

  it('merges the registries of several clusters: one service per hostname, endpoints of every cluster in registry order', () => {
    const c1 = inCluster(first, 'c1');
    const c2 = inCluster(second, 'c2');
    const mc = aggregateRegistry([c1, c2, buildServiceEntryRegistry(snapshotOf(se('a', 'a.example.com', 'x', '10.9.9.9')))]);
    assert.deepEqual(
      mc.services.map((s) => `${s.namespace}/${s.hostname}`),
      ['x/a.example.com', 'x/b.example.com', 'x/c.example.com', 'y/a.example.com'],
    );
    const own = first.serviceByHost('a.example.com', 'x');
    assert.deepEqual(
      mc.serviceByHost('a.example.com', 'x'),
      { ...own, clusterAddresses: { c1: [], c2: [] } },
      "the first cluster's service",
    );
    assert.deepEqual(
      mc.endpoints('a.example.com', 80, 'x').map((e) => e.address),
      ['10.0.0.1', '10.0.1.1'],
      'both clusters; the ServiceEntry of a clustered host adds none',
    );
    assert.deepEqual(
      mc.instancesAt('10.0.1.1').map((i) => i.service.hostname),
      ['a.example.com'],
      "the second cluster's endpoint serves the merged host",
    );
    const same = aggregateRegistry([c1, inCluster(second, 'c1')]);
    assert.deepEqual(
      same.endpoints('a.example.com', 80, 'x').map((e) => e.address),
      ['10.0.0.1'],
      'the same cluster id twice does not merge',
    );
  });

  it("keeps each cluster's addresses of a merged service; a proxy of a cluster reads its own (istiod's ClusterVIPs)", () => {
    const withVip = (address: string, vip: string): RegistrySnapshot =>
      buildServiceEntryRegistry(
        snapshotOf(se('a', 'a.example.com', 'x', address).map((o) => ({ ...o, spec: { ...(o.spec as object), addresses: [vip] } }))),
      );
    const c1 = inCluster(withVip('10.0.0.1', '10.96.0.10'), 'c1');
    const c2 = inCluster(withVip('10.0.1.1', '10.96.1.10'), 'c2');
    const c3 = inCluster(withVip('10.0.2.1', '10.96.0.10'), 'c3');
    const c4 = inCluster(buildServiceEntryRegistry(snapshotOf(se('b', 'b.example.com', 'x', '10.0.3.1'))), 'c4');
    const mc = aggregateRegistry([c1, c2, c3, c4]);
    const svc = mc.serviceByHost('a.example.com', 'x');
    assert.ok(svc);
    assert.deepEqual(svc.addresses, ['10.96.0.10'], "the default is the first cluster's (istiod's DefaultAddress)");
    assert.deepEqual(svc.clusterAddresses, { c1: ['10.96.0.10'], c2: ['10.96.1.10'], c3: ['10.96.0.10'] });
    assert.deepEqual(addressesInCluster(svc, 'c2'), ['10.96.1.10']);
    assert.deepEqual(addressesInCluster(svc, 'c1'), ['10.96.0.10']);
    assert.deepEqual(addressesInCluster(svc, 'c9'), ['10.96.0.10'], "a cluster without the service: the first cluster's");
    assert.deepEqual([...(mc.clustersWithOwnAddresses ?? [])], ['c2'], "only c2's proxies see other addresses than the default");
    assert.equal(mc.services[0], svc, 'the listed service is the merged one');
    assert.equal(mc.instancesAt('10.0.1.1')[0]?.service, svc, 'an endpoint of cluster 2 serves the merged service');
    assert.equal(
      aggregateRegistry([c1, c2, c3, c4]).serviceByHost('a.example.com', 'x'),
      svc,
      'the same object while no cluster changed it',
    );
    assert.equal(aggregateRegistry([c1, c3]).clustersWithOwnAddresses, undefined, 'the same addresses everywhere: nothing per cluster');
  });
});
