import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { snapshotOf } from '../../test/support/config-fixture.js';
import { aggregateRegistry } from './aggregate.js';
import { buildServiceEntryRegistry } from './service-entry-registry.js';
import type { RegistrySnapshot } from './model.js';

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
    assert.equal(mc.serviceByHost('a.example.com', 'x'), first.serviceByHost('a.example.com', 'x'), "the first cluster's service");
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
});
