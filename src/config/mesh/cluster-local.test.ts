import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ClusterLocalHosts } from './cluster-local.js';
import { parseMeshConfig } from './mesh-config-file.js';

const local = (hosts: ClusterLocalHosts, names: readonly string[]): string[] => names.filter((n) => hosts.isClusterLocal(n));

describe('cluster-local hosts (istiod pilot/pkg/model/cluster_local.go)', () => {
  it("istiod's defaults: kube-system, kubernetes.default, the discovery address's host", () => {
    const hosts = new ClusterLocalHosts([], 'cluster.local');
    assert.deepEqual(
      local(hosts, [
        'dns.kube-system.svc.cluster.local',
        'kubernetes.default.svc.cluster.local',
        'istiod.istio-system.svc.cluster.local',
        'web.shop.svc.cluster.local',
        'kubernetes.default.svc.example.org',
      ]),
      ['dns.kube-system.svc.cluster.local', 'kubernetes.default.svc.cluster.local', 'istiod.istio-system.svc.cluster.local'],
    );
    const other = new ClusterLocalHosts([], 'example.org', 'istiod-canary.istio-system.svc:15012');
    assert.deepEqual(
      local(other, [
        'kubernetes.default.svc.example.org',
        'istiod-canary.istio-system.svc.example.org',
        'istiod.istio-system.svc.example.org',
      ]),
      ['kubernetes.default.svc.example.org', 'istiod-canary.istio-system.svc.example.org'],
      "the domain and the discovery address are the mesh config's",
    );
    assert.deepEqual(
      local(new ClusterLocalHosts([], 'cluster.local', 'no-port'), ['no-port.cluster.local']),
      [],
      'an address without a port names no host',
    );
  });

  it('serviceSettings: the most specific entry wins; clusterLocal false drops the default it names', () => {
    const hosts = new ClusterLocalHosts(
      [
        { hosts: ['*.shop.svc.cluster.local'], clusterLocal: true },
        { hosts: ['public.shop.svc.cluster.local', '*.edge.shop.svc.cluster.local'], clusterLocal: false },
        { hosts: ['metrics.kube-system.svc.cluster.local'], clusterLocal: false },
      ],
      'cluster.local',
    );
    assert.deepEqual(
      local(hosts, [
        'cart.shop.svc.cluster.local',
        'public.shop.svc.cluster.local',
        'a.edge.shop.svc.cluster.local',
        'metrics.kube-system.svc.cluster.local',
        'dns.kube-system.svc.cluster.local',
        'kubernetes.default.svc.cluster.local',
        '*.shop.svc.cluster.local',
      ]),
      ['cart.shop.svc.cluster.local', 'kubernetes.default.svc.cluster.local', '*.shop.svc.cluster.local'],
      // A host under the kube-system wildcard set to false removes the whole default (istiod does the same).
    );
    const everything = new ClusterLocalHosts([{ hosts: ['*'], clusterLocal: true }], 'cluster.local');
    assert.ok(everything.isClusterLocal('api.example.com'), '`*` makes every host cluster-local');
  });

  it('is read from the mesh config', () => {
    const { mesh, ignoredFields } = parseMeshConfig(
      'serviceSettings:\n- settings: {clusterLocal: true}\n  hosts: ["a.b.svc.cluster.local"]\ndefaultConfig: {discoveryAddress: "istiod-1.istio-system.svc:15012"}\n',
      'mesh.yaml',
      'cluster.local',
    );
    assert.deepEqual(mesh.serviceSettings, [{ hosts: ['a.b.svc.cluster.local'], clusterLocal: true }]);
    assert.equal(mesh.discoveryAddress, 'istiod-1.istio-system.svc:15012');
    assert.ok(!ignoredFields.includes('serviceSettings'));
  });
});
