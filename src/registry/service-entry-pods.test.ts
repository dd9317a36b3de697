/**
 * ServiceEntry workloadSelectors select Kubernetes Pods beside WorkloadEntries (istiod's
 * ServiceEntry controller merges the kube workload instances): the registry build, the Pod-only
 * update, the PushContext's reuse by identity, and the change set of a selected Pod.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { snapshotOf } from '../../test/support/config-fixture.js';
import { changeSet } from '../model/dependency-tokens.js';
import { defaultMeshConfig } from '../config/mesh/mesh-config.js';
import { PushContext } from '../model/push-context.js';
import { pushRequest } from '../model/push-request.js';
import { registryKey } from '../model/registry-keys.js';
import { KubeRegistrySnapshot } from './kube/kube-snapshot.js';
import { podWorkload } from './kube/translate.js';
import type { WorkloadInstance } from './model.js';
import { buildServiceEntryRegistry, updateSelectedPods } from './service-entry-registry.js';
import { WorkloadInstanceMap } from './workload-instances.js';

interface PodSpec {
  readonly name: string;
  readonly namespace: string;
  readonly ip: string;
  readonly labels: Record<string, string>;
  readonly ready?: boolean;
  readonly serviceAccount?: string;
}

function pod(p: PodSpec): V1Pod {
  return {
    metadata: { name: p.name, namespace: p.namespace, labels: p.labels },
    spec: { containers: [{ name: 'app' }], serviceAccountName: p.serviceAccount ?? 'default' },
    status: { phase: 'Running', podIP: p.ip, conditions: [{ type: 'Ready', status: p.ready === false ? 'False' : 'True' }] },
  };
}

/** The workload instances the kube registry would publish for these pods (unready ones drop out). */
function instances(pods: readonly PodSpec[]): WorkloadInstanceMap {
  const byNamespace = new Map<string, WorkloadInstance[]>();
  for (const p of pods) {
    const w = podWorkload(pod(p), undefined);
    if (!w) continue;
    const list = byNamespace.get(w.namespace) ?? [];
    list.push(w);
    byNamespace.set(
      w.namespace,
      list.sort((a, b) => (a.name < b.name ? -1 : 1)),
    );
  }
  return new WorkloadInstanceMap(byNamespace);
}

const serviceEntry = {
  apiVersion: 'networking.istio.io/v1',
  kind: 'ServiceEntry',
  metadata: { name: 'db', namespace: 'a' },
  spec: {
    hosts: ['db.example.com'],
    location: 'MESH_INTERNAL',
    resolution: 'STATIC',
    ports: [{ number: 5432, name: 'tcp-pg', protocol: 'TCP', targetPort: 15432 }],
    workloadSelector: { labels: { app: 'x' } },
  },
};
const workloadEntry = (name: string, address: string, app: string): Record<string, unknown> => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'WorkloadEntry',
  metadata: { name, namespace: 'a' },
  spec: { address, labels: { app }, serviceAccount: 'vm', locality: 'r1/z1' },
});
const config = snapshotOf([serviceEntry, workloadEntry('vm-1', '10.9.0.1', 'x'), workloadEntry('vm-other', '10.9.0.2', 'y')]);

const PODS: readonly PodSpec[] = [
  { name: 'x-2', namespace: 'a', ip: '10.0.0.2', labels: { app: 'x', version: 'v2' } },
  { name: 'x-1', namespace: 'a', ip: '10.0.0.1', labels: { app: 'x' }, serviceAccount: 'db' },
  { name: 'x-unready', namespace: 'a', ip: '10.0.0.3', labels: { app: 'x' }, ready: false },
  { name: 'y-1', namespace: 'a', ip: '10.0.0.4', labels: { app: 'y' } },
  { name: 'x-elsewhere', namespace: 'b', ip: '10.0.0.5', labels: { app: 'x' } },
];

describe('ServiceEntry workloadSelector selects Pods', () => {
  const registry = buildServiceEntryRegistry(config, instances(PODS));

  it('gives the WorkloadEntries, then the ready matching Pods of its namespace (name order), as endpoints', () => {
    const eps = registry.endpoints('db.example.com', 5432);
    assert.deepEqual(
      eps.map((e) => e.address),
      ['10.9.0.1', '10.0.0.1', '10.0.0.2'],
    );
    const podEp = eps[1];
    assert.ok(podEp);
    assert.equal(podEp.port, 15432, 'the ServiceEntry target port');
    assert.equal(podEp.serviceAccount, 'db');
    assert.deepEqual(podEp.source, { kind: 'Pod', namespace: 'a', name: 'x-1' });
    assert.deepEqual(eps[2]?.labels, { app: 'x', version: 'v2' });
    assert.equal(eps[0]?.serviceAccount, 'vm');
  });

  it('leaves out unready Pods, Pods of other labels and Pods of other namespaces', () => {
    const addresses = new Set(registry.endpoints('db.example.com', 5432).map((e) => e.address));
    for (const ip of ['10.0.0.3', '10.0.0.4', '10.0.0.5', '10.9.0.2']) assert.ok(!addresses.has(ip), ip);
  });

  it('makes a selected Pod an instance of the ServiceEntry (its inbound side)', () => {
    assert.deepEqual(
      registry.instancesAt('10.0.0.2').map((i) => `${i.service.hostname}:${i.endpoint.port}`),
      ['db.example.com:15432'],
    );
    assert.deepEqual(registry.instancesAt('10.0.0.4'), []);
  });

  it('has only WorkloadEntries without pods', () => {
    assert.deepEqual(
      buildServiceEntryRegistry(config)
        .endpoints('db.example.com', 5432)
        .map((e) => e.address),
      ['10.9.0.1'],
    );
  });

  it('updates for Pod changes alone as a full build would', () => {
    const next = instances([
      ...PODS.filter((p) => p.name !== 'x-2'),
      { name: 'x-3', namespace: 'a', ip: '10.0.0.6', labels: { app: 'x' } },
    ]);
    const updated = updateSelectedPods(registry, config, next);
    assert.deepEqual(updated.endpoints('db.example.com', 5432), buildServiceEntryRegistry(config, next).endpoints('db.example.com', 5432));
    assert.deepEqual(
      updated.endpoints('db.example.com', 5432).map((e) => e.address),
      ['10.9.0.1', '10.0.0.1', '10.0.0.6'],
    );
    assert.equal(updated.services, registry.services, 'services are shared');
  });
});

describe('PushContext with Pods selected by a ServiceEntry', () => {
  const mesh = defaultMeshConfig();
  const kube = (pods: WorkloadInstanceMap): KubeRegistrySnapshot => new KubeRegistrySnapshot(new Map(), undefined, pods);
  const pods1 = instances(PODS);
  const first = new PushContext({ version: '1', mesh, config, registries: [kube(pods1)] });

  it('serves the selected Pods through the aggregated registry', () => {
    assert.deepEqual(
      first.endpoints('db.example.com', 5432).map((e) => e.address),
      ['10.9.0.1', '10.0.0.1', '10.0.0.2'],
    );
  });

  it('reuses the ServiceEntry index while the Pods are the same object', () => {
    const next = new PushContext({ version: '2', mesh, config, cache: first.cache, previous: first, registries: [kube(pods1)] });
    assert.ok(next.rebuild.reused.includes('serviceEntries'));
    assert.deepEqual(
      next.endpoints('db.example.com', 5432).map((e) => e.address),
      ['10.9.0.1', '10.0.0.1', '10.0.0.2'],
    );
  });

  it('recomputes it when the Pods changed', () => {
    const pods2 = instances(PODS.filter((p) => p.name !== 'x-1'));
    const next = new PushContext({ version: '2', mesh, config, cache: first.cache, previous: first, registries: [kube(pods2)] });
    assert.ok(next.rebuild.rebuilt.includes('serviceEntries'));
    assert.deepEqual(
      next.endpoints('db.example.com', 5432).map((e) => e.address),
      ['10.9.0.1', '10.0.0.2'],
    );
  });

  it('reuses it when the Pods changed but no ServiceEntry selects workloads', () => {
    const plain = snapshotOf([workloadEntry('vm-1', '10.9.0.1', 'x')]);
    const base = new PushContext({ version: '1', mesh, config: plain, registries: [kube(pods1)] });
    const next = new PushContext({
      version: '2',
      mesh,
      config: plain,
      cache: base.cache,
      previous: base,
      registries: [kube(instances([]))],
    });
    assert.ok(next.rebuild.reused.includes('serviceEntries'));
  });

  it("invalidates the host's endpoints and the Pod addresses on an Endpoints key of a ServiceEntry host", () => {
    const added = instances([...PODS, { name: 'x-3', namespace: 'a', ip: '10.0.0.6', labels: { app: 'x' } }]);
    const req = pushRequest({
      full: false,
      configsUpdated: [registryKey('Endpoints', 'a', 'db.example.com')],
      reason: 'endpoint',
      start: 0,
    });
    const changes = changeSet(req, config, config, mesh.domain, mesh.rootNamespace, { before: first.registry, after: [kube(added)] });
    assert.notEqual(changes, 'all');
    if (changes === 'all') return;
    assert.deepEqual([...(changes.endpointHosts === 'all' ? [] : changes.endpointHosts)], ['db.example.com']);
    assert.ok(changes.tokens.has('endpoints@db.example.com'));
    assert.deepEqual([...changes.instanceIps].sort(), ['10.0.0.1', '10.0.0.2', '10.0.0.6', '10.9.0.1']);
  });
});
