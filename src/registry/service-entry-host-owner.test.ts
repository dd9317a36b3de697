/** Two ServiceEntries of one namespace naming the same host: the oldest owns it (istiod's initServiceRegistry). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { snapshotOf } from '../../test/support/config-fixture.js';
import { buildServiceEntryRegistry } from './service-entry-registry.js';

const entry = (name: string, port: number, creationTimestamp?: string, namespace = 'a'): Record<string, unknown> => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'ServiceEntry',
  metadata: { name, namespace, ...(creationTimestamp ? { creationTimestamp } : {}) },
  spec: {
    hosts: ['db.example.com'],
    location: 'MESH_EXTERNAL',
    resolution: 'DNS',
    ports: [{ number: port, name: 'tcp', protocol: 'TCP' }],
  },
});
const ports = (objects: Record<string, unknown>[], namespace = 'a'): number[] | undefined =>
  buildServiceEntryRegistry(snapshotOf(objects))
    .serviceByHost('db.example.com', namespace)
    ?.ports.map((p) => p.port);

describe('ServiceEntry host clash in one namespace', () => {
  it('the oldest by creation time owns the host, not the first by name', () => {
    assert.deepEqual(ports([entry('a-new', 1111, '2024-03-01T00:00:00Z'), entry('z-old', 2222, '2024-01-01T00:00:00Z')]), [2222]);
  });

  it('a file object (no creation time) is oldest; equal times go by name; other namespaces keep their own', () => {
    assert.deepEqual(ports([entry('a-api', 1111, '2024-01-01T00:00:00Z'), entry('z-file', 2222)]), [2222]);
    assert.deepEqual(ports([entry('b', 1111), entry('a', 2222)]), [2222]);
    const both = [
      entry('a-new', 1111, '2024-03-01T00:00:00Z'),
      entry('z-old', 2222, '2024-01-01T00:00:00Z'),
      entry('x', 3333, undefined, 'b'),
    ];
    assert.deepEqual(ports(both, 'b'), [3333]);
  });
});
