/**
 * istiod's isHealthy for WorkloadEntries with health checks: such an entry is an endpoint of the
 * services selecting it only while its Healthy condition is True, and stays an instance at its
 * address (the VM keeps its inbound config) either way.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { snapshotOf } from '../../test/support/config-fixture.js';
import { buildServiceEntryRegistry } from './service-entry-registry.js';

const entry = (name: string, address: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'WorkloadEntry',
  metadata: { name, namespace: 'shop', annotations: { 'proxy.istio.io/health-checks-enabled': 'true' } },
  spec: { address, labels: { app: 'vm' } },
  ...extra,
});

it('a health-checked WorkloadEntry is served only while Healthy is True, and is an instance either way', () => {
  const registry = buildServiceEntryRegistry(
    snapshotOf([
      {
        apiVersion: 'networking.istio.io/v1',
        kind: 'ServiceEntry',
        metadata: { name: 'vm', namespace: 'shop' },
        spec: {
          hosts: ['vm.shop.svc.cluster.local'],
          resolution: 'STATIC',
          ports: [{ name: 'http', number: 80, protocol: 'HTTP' }],
          workloadSelector: { labels: { app: 'vm' } },
        },
      },
      entry('new', '10.0.0.1'),
      entry('healthy', '10.0.0.2', { status: { conditions: [{ type: 'Healthy', status: 'True' }] } }),
      entry('sick', '10.0.0.3', { status: { conditions: [{ type: 'Healthy', status: 'False', message: 'refused' }] } }),
      { ...entry('unchecked', '10.0.0.4'), metadata: { name: 'unchecked', namespace: 'shop' } },
    ]),
  );
  assert.deepEqual(
    registry.endpoints('vm.shop.svc.cluster.local', 80).map((e) => e.address),
    ['10.0.0.2', '10.0.0.4'],
  );
  assert.equal(
    registry.endpoints('vm.shop.svc.cluster.local', 80),
    registry.endpoints('vm.shop.svc.cluster.local', 80),
    'one list per snapshot',
  );
  for (const ip of ['10.0.0.1', '10.0.0.3'])
    assert.deepEqual(
      registry.instancesAt(ip).map((i) => i.service.hostname),
      ['vm.shop.svc.cluster.local'],
    );
});
