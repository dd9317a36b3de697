/**
 * A WorkloadEntry selected by a Kubernetes Service, through a push: its change invalidates the
 * Service's endpoints (EDS) and its address's instances, reaches the proxies that read the Service
 * (push scope), and the incremental PushContext serves what a full rebuild does. A remote
 * cluster's Service does not select the config cluster's entries.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Service } from '@kubernetes/client-node';
import { ConfigStore } from '../config/store.js';
import { MemorySource } from '../config/sources/memory-source.js';
import { defaultMeshConfig } from '../config/mesh/mesh-config.js';
import { KubeRegistrySnapshot } from '../registry/kube/kube-snapshot.js';
import { convertService } from '../registry/kube/translate.js';
import { pushScope } from '../xds/push-scope.js';
import { changeSet } from './dependency-tokens.js';
import { PushContext } from './push-context.js';
import { pushRequest } from './push-request.js';

const mesh = defaultMeshConfig();
const HOST = 'web.shop.svc.cluster.local';
const k8sService: V1Service = {
  metadata: { name: 'web', namespace: 'shop' },
  spec: { clusterIP: '10.96.0.10', selector: { app: 'vm' }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
};

function kube(clusterId?: string): KubeRegistrySnapshot {
  const service = convertService(k8sService, 'cluster.local');
  return new KubeRegistrySnapshot(new Map([[HOST, { service, endpoints: new Map() }]]), undefined, undefined, undefined, clusterId);
}

const entry = (address: string): Record<string, unknown> => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'WorkloadEntry',
  metadata: { name: 'vm-1', namespace: 'shop' },
  spec: { address, labels: { app: 'vm' } },
});

const served = (push: PushContext): string[] => push.endpoints(HOST, 80).map((e) => `${e.address}:${e.port}`);

describe('a WorkloadEntry selected by a Kubernetes Service, pushed', () => {
  it('an address change invalidates the Service endpoints and both addresses, and equals a full rebuild', () => {
    const store = new ConfigStore();
    const source = new MemorySource();
    void source.start(store);
    source.add(entry('10.0.0.5') as never);
    const registries = [kube()];
    const first = new PushContext({ version: '1', mesh, config: store.snapshot(), registries });
    assert.deepEqual(served(first), ['10.0.0.5:8080']);

    source.upsert(entry('10.0.0.9') as never);
    const req = pushRequest({ configsUpdated: ['WorkloadEntry/shop/vm-1'], start: 0 });
    const changes = changeSet(req, first.snapshot, store.snapshot(), mesh.domain, mesh.rootNamespace, {
      before: first.registry,
      after: registries,
    });
    assert.ok(changes !== 'all');
    assert.ok(changes.tokens.has(`endpoints@${HOST}`), [...changes.tokens].join(' '));
    assert.deepEqual(changes.endpointHosts, new Set([HOST]));
    assert.deepEqual([...changes.instanceIps].sort(), ['10.0.0.5', '10.0.0.9']);

    const next = new PushContext({ version: '2', mesh, config: store.snapshot(), cache: first.cache, previous: first, registries });
    const scope = pushScope(req, first, next);
    assert.ok(scope !== 'all' && scope.hosts.has(HOST), 'proxies reading the Service are pushed');
    const fresh = new PushContext({ version: '2', mesh, config: store.snapshot(), registries });
    assert.deepEqual(served(next), ['10.0.0.9:8080']);
    assert.deepEqual(served(next), served(fresh));
    assert.equal(next.registry.instancesAt('10.0.0.9')[0]?.service.hostname, HOST);
    assert.deepEqual(next.registry.instancesAt('10.0.0.5'), []);

    source.delete({ kind: 'WorkloadEntry', namespace: 'shop', name: 'vm-1' });
    const gone = new PushContext({ version: '3', mesh, config: store.snapshot(), cache: first.cache, previous: next, registries });
    assert.deepEqual(served(gone), []);
  });

  it("only the config cluster's Services select the entries", () => {
    const store = new ConfigStore();
    const source = new MemorySource();
    void source.start(store);
    source.add(entry('10.0.0.5') as never);
    const remote = new PushContext({ version: '1', mesh, config: store.snapshot(), clusterId: 'main', registries: [kube('remote')] });
    assert.deepEqual(served(remote), []);
    const local = new PushContext({ version: '1', mesh, config: store.snapshot(), clusterId: 'main', registries: [kube('main')] });
    assert.deepEqual(served(local), ['10.0.0.5:8080']);
  });
});
