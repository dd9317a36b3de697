import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { snapshotOf } from '../../test/support/config-fixture.js';
import { aggregateRegistry } from './aggregate.js';
import { buildServiceEntryRegistry } from './service-entry-registry.js';

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
});
