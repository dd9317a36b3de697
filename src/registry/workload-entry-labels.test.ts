/**
 * A WorkloadEntry's labels where both its metadata and its spec set them: the metadata wins, as in
 * istiod (serviceentry.ConvertWorkloadEntry), for ServiceEntry selection, the endpoint's labels and
 * push scoping alike.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { snapshotOf } from '../../test/support/config-fixture.js';
import { workloadEntryLabels, type Config } from '../config/index.js';
import { selectingServiceEntries } from '../model/dependency-tokens.js';
import { buildServiceEntryRegistry } from './service-entry-registry.js';

const serviceEntry = (name: string, app: string): Record<string, unknown> => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'ServiceEntry',
  metadata: { name, namespace: 'a' },
  spec: {
    hosts: [`${name}.example.com`],
    location: 'MESH_INTERNAL',
    resolution: 'STATIC',
    ports: [{ number: 80, name: 'http', protocol: 'HTTP' }],
    workloadSelector: { labels: { app } },
  },
});
const entry = {
  apiVersion: 'networking.istio.io/v1',
  kind: 'WorkloadEntry',
  metadata: { name: 'vm-1', namespace: 'a', labels: { app: 'new', owner: 'meta' } },
  spec: { address: '10.9.0.1', labels: { app: 'old', version: 'v1' } },
};
const config = snapshotOf([serviceEntry('by-meta', 'new'), serviceEntry('by-spec', 'old'), entry]);

describe('WorkloadEntry labels: metadata over spec', () => {
  it('merged, the metadata value winning a key both set', () => {
    const we = config.get('WorkloadEntry', 'a', 'vm-1') as Config<'WorkloadEntry'>;
    assert.deepEqual(workloadEntryLabels(we), { app: 'new', owner: 'meta', version: 'v1' });
    assert.equal(workloadEntryLabels(we), workloadEntryLabels(we), 'computed once per object');
  });

  it('a ServiceEntry selects it by the metadata value; its endpoint carries the merged labels', () => {
    const registry = buildServiceEntryRegistry(config);
    const [ep, ...rest] = registry.endpoints('by-meta.example.com', 80);
    assert.ok(ep && rest.length === 0);
    assert.deepEqual({ ...ep.labels }, { app: 'new', owner: 'meta', version: 'v1' });
    assert.deepEqual(registry.endpoints('by-spec.example.com', 80), []);
  });

  it('push scoping finds the same ServiceEntry', () => {
    const we = config.get('WorkloadEntry', 'a', 'vm-1') as Config<'WorkloadEntry'>;
    assert.deepEqual(
      selectingServiceEntries(config, we).map((se) => se.meta.name),
      ['by-meta'],
    );
  });
});
