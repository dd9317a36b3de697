/**
 * Waypoint binding (istiod's ServicesForWaypoint / WorkloadsForWaypoint), read from the ambient
 * index: `istio.io/use-waypoint` on the object, else on its namespace (the labels a registry's
 * ambient state carries, as the Kubernetes registry's); `none` opts out; `istio.io/use-waypoint-namespace`; the
 * Gateway's (else its class's) `istio.io/waypoint-for`; nothing without the Gateway.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { snapshotOf } from '../../test/support/config-fixture.js';
import { defaultMeshConfig } from '../config/mesh/mesh-config.js';
import { PushContext } from './push-context.js';
import type { RegistrySnapshot } from '../registry/index.js';
import { waypointScope } from './waypoint-scope.js';

const gw = (name: string, ns: string, labels: Record<string, string> = {}, className = 'istio-waypoint'): Record<string, unknown> => ({
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'Gateway',
  metadata: { name, namespace: ns, labels },
  spec: { gatewayClassName: className, listeners: [{ name: 'mesh', port: 15008, protocol: 'HBONE' }] },
});
const se = (name: string, ns: string, labels: Record<string, string>): Record<string, unknown> => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'ServiceEntry',
  metadata: { name, namespace: ns, labels },
  spec: {
    hosts: [`${name}.${ns}.svc.cluster.local`],
    location: 'MESH_INTERNAL',
    resolution: 'STATIC',
    ports: [{ name: 'http', number: 80, protocol: 'HTTP' }],
  },
});
const we = (name: string, ns: string, labels: Record<string, string>): Record<string, unknown> => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'WorkloadEntry',
  metadata: { name, namespace: ns, labels },
  spec: { address: `10.0.0.${name.length}` },
});

function scope(
  objects: readonly Record<string, unknown>[],
  key = { namespace: 'apps', name: 'waypoint' },
  nsLabels: Record<string, Record<string, string>> = {},
) {
  const kube: RegistrySnapshot = {
    services: [],
    serviceByHost: () => undefined,
    endpoints: () => [],
    instancesAt: () => [],
    ambient: { pods: new Map(), services: new Map(), namespaces: new Map(Object.entries(nsLabels)) },
  };
  const push = new PushContext({ version: 't', mesh: defaultMeshConfig(), config: snapshotOf(objects), registries: [kube] });
  const s = waypointScope(push, key);
  return {
    type: s.trafficType,
    services: s.services.map((x) => x.hostname),
    workloads: s.workloads.map((w) => `${w.namespace}/${w.name}`),
  };
}

describe('waypoint binding', () => {
  it('services name the waypoint by label, across namespaces with use-waypoint-namespace; none opts out', () => {
    const got = scope([
      gw('waypoint', 'apps'),
      se('a', 'apps', { 'istio.io/use-waypoint': 'waypoint' }),
      se('b', 'apps', { 'istio.io/use-waypoint': 'other' }),
      se('c', 'legacy', { 'istio.io/use-waypoint': 'waypoint', 'istio.io/use-waypoint-namespace': 'apps' }),
      se('d', 'legacy', { 'istio.io/use-waypoint': 'waypoint' }),
      se('e', 'apps', { 'istio.io/use-waypoint': 'none' }),
      we('w', 'apps', { 'istio.io/use-waypoint': 'waypoint' }),
    ]);
    assert.deepEqual(got, { type: 'service', services: ['a.apps.svc.cluster.local', 'c.legacy.svc.cluster.local'], workloads: [] });
  });

  it("the namespace's label applies to objects without their own; an object's own label (none too) wins", () => {
    const got = scope([gw('waypoint', 'apps'), se('a', 'apps', {}), se('e', 'apps', { 'istio.io/use-waypoint': 'none' })], undefined, {
      apps: { 'istio.io/use-waypoint': 'waypoint' },
    });
    assert.deepEqual(got.services, ['a.apps.svc.cluster.local']);
    const optedOut = scope([gw('waypoint', 'apps'), se('a', 'apps', {})], undefined, { apps: { 'istio.io/use-waypoint': 'none' } });
    assert.deepEqual(optedOut.services, []);
  });

  it('waypoint-for: workload binds workloads only, all binds both; from the class when the Gateway has none', () => {
    const objects = [se('a', 'apps', { 'istio.io/use-waypoint': 'waypoint' }), we('w', 'apps', { 'istio.io/use-waypoint': 'waypoint' })];
    assert.deepEqual(scope([gw('waypoint', 'apps', { 'istio.io/waypoint-for': 'workload' }), ...objects]), {
      type: 'workload',
      services: [],
      workloads: ['apps/w'],
    });
    assert.deepEqual(scope([gw('waypoint', 'apps', { 'istio.io/waypoint-for': 'all' }), ...objects]).workloads, ['apps/w']);
    const cls = {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'GatewayClass',
      metadata: { name: 'custom-waypoint', labels: { 'istio.io/waypoint-for': 'none' } },
      spec: { controllerName: 'istio.io/mesh-controller' },
    };
    assert.deepEqual(scope([cls, gw('waypoint', 'apps', {}, 'custom-waypoint'), ...objects]), {
      type: 'none',
      services: [],
      workloads: [],
    });
  });

  it('nothing binds without the Gateway', () => {
    assert.deepEqual(scope([se('a', 'apps', { 'istio.io/use-waypoint': 'waypoint' })]), { type: 'none', services: [], workloads: [] });
  });
});
