/**
 * Kubernetes Services selecting WorkloadEntries (istiod's kube controller with the workload
 * instances of WorkloadEntries): the namespace, the selector and the Service's kind decide; the
 * Service's targetPort maps to the entry's port by number or through the entry's `ports` by name;
 * the endpoint carries the entry's labels, locality, network, service account and weight; an
 * unhealthy health-checked entry is an instance but not served.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { snapshotOf } from '../../../test/support/config-fixture.js';
import { ConfigStore } from '../../config/store.js';
import { MemorySource } from '../../config/sources/memory-source.js';
import { KubeRegistrySnapshot } from './kube-snapshot.js';
import { convertService, serviceEndpoints } from './translate.js';
import { KubeWorkloadEntries, kubeServicesSelecting, withWorkloadEntries } from './workload-entries.js';

const service = (name: string, spec: NonNullable<V1Service['spec']>, namespace = 'shop'): V1Service => ({
  metadata: { name, namespace },
  spec,
});

/** A Kubernetes registry of these Services; `web` has one pod endpoint from its EndpointSlice. */
function kube(...services: V1Service[]): KubeRegistrySnapshot {
  const entries = services.map((svc) => {
    const converted = convertService(svc, 'cluster.local');
    const slices: V1EndpointSlice[] =
      svc.metadata?.name === 'web' && svc.metadata.namespace === 'shop'
        ? [
            {
              metadata: { name: 'web-1', namespace: 'shop', labels: { 'kubernetes.io/service-name': 'web' } },
              addressType: 'IPv4',
              endpoints: [{ addresses: ['10.1.0.1'], conditions: { ready: true } }],
              ports: [{ name: 'http', port: 8080 }],
            },
          ]
        : [];
    const endpoints = serviceEndpoints(converted, svc, slices, { podByName: () => undefined, podsByIp: () => [], node: () => undefined });
    return [converted.hostname, { service: converted, endpoints }] as const;
  });
  return new KubeRegistrySnapshot(new Map(entries));
}

const entry = (name: string, spec: Record<string, unknown>, meta: Record<string, unknown> = {}): Record<string, unknown> => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'WorkloadEntry',
  metadata: { name, namespace: 'shop', ...meta },
  spec,
});

const web = service('web', { clusterIP: '10.96.0.10', selector: { app: 'vm' }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] });
const WEB = 'web.shop.svc.cluster.local';
const addresses = (eps: readonly { address: string; port: number }[]): string[] => eps.map((e) => `${e.address}:${e.port}`);

describe('Kubernetes Services select WorkloadEntries', () => {
  it('the entries of its namespace matching its selector follow its EndpointSlice endpoints, with their attributes', () => {
    const config = snapshotOf([
      entry('vm-1', {
        address: '10.0.0.5',
        labels: { app: 'vm', version: 'v1' },
        locality: 'us-east/zone-a/rack-1',
        network: 'vm-net',
        serviceAccount: 'vm-sa',
        weight: 3,
      }),
      entry('other-app', { address: '10.0.0.6', labels: { app: 'other' } }),
      entry('elsewhere', { address: '10.0.0.7', labels: { app: 'vm' } }, { namespace: 'other' }),
      entry('dns-name', { address: 'vm.example.com', labels: { app: 'vm' } }),
    ]);
    const registry = withWorkloadEntries(kube(web), KubeWorkloadEntries.of(config));
    const eps = registry.endpoints(WEB, 80);
    assert.deepEqual(addresses(eps), ['10.1.0.1:8080', '10.0.0.5:8080']);
    const vm = eps[1]!;
    assert.deepEqual(vm.labels, { app: 'vm', version: 'v1' });
    assert.deepEqual(vm.locality, { region: 'us-east', zone: 'zone-a', subzone: 'rack-1' });
    assert.equal(vm.network, 'vm-net');
    assert.equal(vm.serviceAccount, 'vm-sa');
    assert.equal(vm.weight, 3);
    assert.equal(vm.servicePort, 80);
    assert.deepEqual(vm.source, { kind: 'WorkloadEntry', namespace: 'shop', name: 'vm-1' });
    assert.equal(vm.clusterId, undefined);
    // Its proxy's inbound side: the VM's address is an instance of the Service's port.
    assert.deepEqual(
      registry.instancesAt('10.0.0.5').map((i) => `${i.service.hostname}:${i.servicePort.port}->${i.endpoint.port}`),
      [`${WEB}:80->8080`],
    );
    assert.deepEqual(registry.instancesAt('10.0.0.7'), []);
  });

  it('targetPort by number, overridden by the entry port named like the Service port; by name through the entry ports', () => {
    const svc = service('multi', {
      clusterIP: '10.96.0.11',
      selector: { app: 'vm' },
      ports: [
        { name: 'http', port: 80, targetPort: 8080 },
        { name: 'grpc', port: 90, targetPort: 'grpc-port' },
        { name: 'tcp', port: 70, targetPort: 7070 },
      ],
    });
    const config = snapshotOf([
      entry('named', { address: '10.0.0.5', labels: { app: 'vm' }, ports: { http: 9080, 'grpc-port': 9090 } }),
      entry('plain', { address: '10.0.0.6', labels: { app: 'vm' } }),
    ]);
    const registry = withWorkloadEntries(kube(svc), KubeWorkloadEntries.of(config));
    const host = 'multi.shop.svc.cluster.local';
    assert.deepEqual(addresses(registry.endpoints(host, 80)), ['10.0.0.5:9080', '10.0.0.6:8080']);
    // A named targetPort the entry does not list: that entry is no endpoint of the port.
    assert.deepEqual(addresses(registry.endpoints(host, 90)), ['10.0.0.5:9090']);
    assert.deepEqual(addresses(registry.endpoints(host, 70)), ['10.0.0.5:7070', '10.0.0.6:7070']);
  });

  it('only Services with a selector, not headless or ExternalName ones, select entries', () => {
    const config = snapshotOf([entry('vm-1', { address: '10.0.0.5', labels: { app: 'vm' } })]);
    const registry = withWorkloadEntries(
      kube(
        service('none', { clusterIP: '10.96.0.12', ports: [{ name: 'http', port: 80 }] }),
        service('headless', { clusterIP: 'None', selector: { app: 'vm' }, ports: [{ name: 'http', port: 80 }] }),
        service('ext', {
          type: 'ExternalName',
          externalName: 'vm.example.com',
          selector: { app: 'vm' },
          ports: [{ name: 'http', port: 80 }],
        }),
        service('sel', { clusterIP: '10.96.0.13', selector: { app: 'vm' }, ports: [{ name: 'http', port: 80 }] }),
      ),
      KubeWorkloadEntries.of(config),
    );
    for (const name of ['none', 'headless'])
      assert.deepEqual(registry.endpoints(`${name}.shop.svc.cluster.local`, 80), [], `${name} selects no entry`);
    assert.ok(!registry.endpoints('ext.shop.svc.cluster.local', 80).some((e) => e.address === '10.0.0.5'));
    assert.deepEqual(addresses(registry.endpoints('sel.shop.svc.cluster.local', 80)), ['10.0.0.5:80']);
    assert.deepEqual(kubeServicesSelecting(registry, 'shop', { app: 'vm', extra: 'x' }), ['sel.shop.svc.cluster.local']);
    assert.deepEqual(kubeServicesSelecting(registry, 'other', { app: 'vm' }), []);
  });

  it('an unhealthy health-checked entry is not served but stays an instance', () => {
    const checked = { annotations: { 'proxy.istio.io/health-checks-enabled': 'true' } };
    const config = snapshotOf([
      entry('new', { address: '10.0.0.5', labels: { app: 'vm' } }, checked),
      {
        ...entry('ok', { address: '10.0.0.6', labels: { app: 'vm' } }, checked),
        status: { conditions: [{ type: 'Healthy', status: 'True' }] },
      },
    ]);
    const registry = withWorkloadEntries(kube(web), KubeWorkloadEntries.of(config));
    assert.deepEqual(addresses(registry.endpoints(WEB, 80)), ['10.1.0.1:8080', '10.0.0.6:8080']);
    assert.deepEqual(
      registry.instancesAt('10.0.0.5').map((i) => i.service.hostname),
      [WEB],
    );
  });

  it('a new index takes over the namespaces that did not change and re-reads those that did', () => {
    const store = new ConfigStore();
    const source = new MemorySource();
    void source.start(store);
    source.add(entry('vm-1', { address: '10.0.0.5', labels: { app: 'vm' } }) as never);
    source.add(entry('vm-b', { address: '10.0.1.5', labels: { app: 'vm' } }, { namespace: 'b' }) as never);
    const first = store.snapshot();
    const bWeb = service('web', { clusterIP: '10.96.1.10', selector: { app: 'vm' }, ports: [{ name: 'http', port: 80 }] }, 'b');
    const registry = kube(web, bWeb);
    const before = KubeWorkloadEntries.of(first);
    assert.deepEqual(addresses(withWorkloadEntries(registry, before).endpoints('web.b.svc.cluster.local', 80)), ['10.0.1.5:80']);
    source.upsert(entry('vm-1', { address: '10.0.0.9', labels: { app: 'vm' } }) as never);
    const after = KubeWorkloadEntries.of(store.snapshot(), {
      index: before,
      changed: [{ kind: 'WorkloadEntry', namespace: 'shop', name: 'vm-1' }],
    });
    const joined = withWorkloadEntries(registry, after);
    assert.deepEqual(addresses(joined.endpoints(WEB, 80)), ['10.1.0.1:8080', '10.0.0.9:8080']);
    assert.deepEqual(addresses(joined.endpoints('web.b.svc.cluster.local', 80)), ['10.0.1.5:80']);
    assert.deepEqual(joined.instancesAt('10.0.0.5'), []);
    assert.equal(joined.instancesAt('10.0.0.9').length, 1);
    // No entries at all: the registry itself.
    assert.equal(withWorkloadEntries(registry, KubeWorkloadEntries.of(snapshotOf([]))), registry);
  });
});
