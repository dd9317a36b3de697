/**
 * A registry beside the ServiceEntries (Kubernetes) in the PushContext: its services and endpoints
 * reach the generated config, an incremental push after a registry change (precise invalidation,
 * the ServiceEntry registry reused) generates exactly what a full rebuild does, and the change
 * keys of registry-keys.ts narrow what is invalidated and who is pushed.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1EndpointSlice, V1Pod, V1Service } from '@kubernetes/client-node';
import { snapshotOf } from '../../test/support/config-fixture.js';
import { generateFor, proxyFor } from '../../test/support/scenario.js';
import { registerEnvoyGenerators } from '../networking/envoy-generators.js';
import { KubeRegistrySnapshot } from '../registry/kube/kube-snapshot.js';
import { convertService, serviceEndpoints } from '../registry/kube/translate.js';
import { silentLogger } from '../util/log.js';
import { GeneratorRegistry } from '../xds/generator.js';
import { XdsCache } from './xds-cache.js';
import { changeSet } from './dependency-tokens.js';
import { defaultMeshConfig } from '../config/mesh/mesh-config.js';
import { PushContext } from './push-context.js';
import { pushRequest } from './push-request.js';
import { registryKey } from './registry-keys.js';

const HOST = 'web.shop.svc.cluster.local';
const mesh = defaultMeshConfig();
const generators = registerEnvoyGenerators(new GeneratorRegistry(), {
  logger: silentLogger,
  credentials: () => ({ get: () => undefined }),
});
const client = proxyFor({ id: 'sidecar~10.1.0.9~client-1.shop~shop.svc.cluster.local', labels: { app: 'client' } });

const k8sService: V1Service = {
  metadata: { name: 'web', namespace: 'shop' },
  spec: { clusterIP: '10.96.0.10', ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
};

function pod(name: string, ip: string): V1Pod {
  return {
    metadata: { name, namespace: 'shop', labels: { app: 'web' } },
    spec: { serviceAccountName: 'web', containers: [{ name: 'app' }] },
    status: { phase: 'Running', podIP: ip, podIPs: [{ ip }], conditions: [{ type: 'Ready', status: 'True' }] },
  };
}

/** The registry with the web Service served by pods at `ips` (or without it). */
function kube(ips: readonly string[] | undefined): KubeRegistrySnapshot {
  if (!ips) return KubeRegistrySnapshot.EMPTY;
  const pods = ips.map((ip, i) => pod(`web-${i}`, ip));
  const slice: V1EndpointSlice = {
    metadata: { name: 'web-1', namespace: 'shop', labels: { 'kubernetes.io/service-name': 'web' } },
    addressType: 'IPv4',
    endpoints: pods.map((p) => ({
      addresses: [p.status!.podIP!],
      conditions: { ready: true },
      targetRef: { kind: 'Pod', name: p.metadata!.name!, namespace: 'shop' },
    })),
    ports: [{ name: 'http', port: 8080 }],
  };
  const service = convertService(k8sService, 'cluster.local');
  const endpoints = serviceEndpoints(service, k8sService, [slice], {
    podByName: (_ns, name) => pods.find((p) => p.metadata?.name === name),
    podsByIp: (ip) => pods.filter((p) => p.status?.podIP === ip),
    node: () => undefined,
  });
  return new KubeRegistrySnapshot(new Map([[service.hostname, { service, endpoints }]]));
}

const config = snapshotOf([
  {
    apiVersion: 'networking.istio.io/v1',
    kind: 'ServiceEntry',
    metadata: { name: 'ext', namespace: 'shop' },
    spec: {
      hosts: ['api.example.com'],
      location: 'MESH_EXTERNAL',
      resolution: 'DNS',
      ports: [{ number: 443, name: 'tls', protocol: 'TLS' }],
    },
  },
  {
    apiVersion: 'networking.istio.io/v1',
    kind: 'VirtualService',
    metadata: { name: 'web', namespace: 'shop' },
    spec: { hosts: ['web'], http: [{ timeout: '3s', route: [{ destination: { host: 'web' } }] }] },
  },
]);

const webEndpoints = (push: PushContext): string[] =>
  generateFor(push, generators, client)
    .endpoints.filter((c) => c.clusterName === `outbound|80||${HOST}`)
    .flatMap((c) =>
      c.endpoints.flatMap((l) =>
        l.lbEndpoints.map(
          (e) =>
            `${e.hostIdentifier.case === 'endpoint' && e.hostIdentifier.value.address?.address.case === 'socketAddress' ? e.hostIdentifier.value.address.address.value.address : '?'}`,
        ),
      ),
    );

/** Generated config after `next` incrementally, and from scratch: they must be equal. */
function incrementalAndFull(
  previous: PushContext,
  registry: KubeRegistrySnapshot,
  key: string,
  full: boolean,
): { incremental: PushContext; fresh: PushContext; changes: ReturnType<typeof changeSet> } {
  const changes = changeSet(
    pushRequest({ full, configsUpdated: [key], start: 0 }),
    previous.snapshot,
    config,
    mesh.domain,
    mesh.rootNamespace,
    { before: previous.registry, after: [registry] },
  );
  assert.notEqual(changes, 'all');
  if (changes !== 'all') previous.cache.invalidate(changes);
  const incremental = new PushContext({ version: 'next', mesh, config, cache: previous.cache, previous, registries: [registry] });
  const fresh = new PushContext({ version: 'fresh', mesh, config, registries: [registry] });
  assert.deepEqual(generateFor(incremental, generators, client), generateFor(fresh, generators, client));
  return { incremental, fresh, changes };
}

describe('PushContext with a Kubernetes registry', () => {
  it("the registry's services and endpoints are generated like ServiceEntries, VirtualService short names included", () => {
    const push = new PushContext({ version: '1', mesh, config, registries: [kube(['10.0.0.1'])] });
    const out = generateFor(push, generators, client);
    assert.ok(out.clusters.some((c) => c.name === `outbound|80||${HOST}`));
    assert.ok(
      out.clusters.some((c) => c.name === 'outbound|443||api.example.com'),
      'ServiceEntries stay',
    );
    assert.deepEqual(webEndpoints(push), ['10.0.0.1']);
    const vh = out.routes.find((r) => r.name === '80')?.virtualHosts.find((v) => v.domains.includes(HOST));
    assert.equal(vh?.routes[0]?.action.case === 'route' && vh.routes[0].action.value.timeout?.seconds, 3n);
  });

  it('an endpoints change: invalidates endpoints only, reuses the ServiceEntry registry, equals a full rebuild', () => {
    const cache = new XdsCache();
    const first = new PushContext({ version: '1', mesh, config, cache, registries: [kube(['10.0.0.1'])] });
    const warm = generateFor(first, generators, client);
    const { incremental, changes } = incrementalAndFull(
      first,
      kube(['10.0.0.1', '10.0.0.2']),
      registryKey('Endpoints', 'shop', HOST),
      false,
    );
    assert.ok(changes !== 'all');
    assert.deepEqual([...(changes.endpointHosts === 'all' ? ['all'] : changes.endpointHosts)], [HOST]);
    assert.deepEqual([...changes.instanceIps].sort(), ['10.0.0.1', '10.0.0.2'], 'before and after');
    assert.ok(changes.tokens.has(`endpoints@${HOST}`));
    assert.ok(!changes.tokens.has('ServiceEntry@*') && !changes.tokens.has(`ServiceEntry@${HOST}`), 'listeners and clusters stay cached');
    assert.ok(incremental.rebuild.reused.includes('serviceEntries') && incremental.rebuild.rebuilt.includes('registry'));
    assert.deepEqual(webEndpoints(incremental), ['10.0.0.1', '10.0.0.2']);
    const after = generateFor(incremental, generators, client);
    assert.deepEqual(after.listeners, warm.listeners);
  });

  it('a Service change invalidates the host and the service list; deleting it removes its cluster and routes', () => {
    const cache = new XdsCache();
    const first = new PushContext({ version: '1', mesh, config, cache, registries: [kube(['10.0.0.1'])] });
    generateFor(first, generators, client);
    const { incremental, changes } = incrementalAndFull(first, kube(undefined), registryKey('Service', 'shop', HOST), true);
    assert.ok(changes !== 'all' && changes.tokens.has(`ServiceEntry@${HOST}`) && changes.tokens.has('ServiceEntry@*'));
    const out = generateFor(incremental, generators, client);
    assert.ok(!out.clusters.some((c) => c.name.endsWith(`|${HOST}`)));
    assert.ok(!out.routes.some((r) => r.virtualHosts.some((v) => v.domains.includes(HOST))));
  });

  it('the same registry snapshot again reuses the aggregate; a registry key without registries is unscoped', () => {
    const snap = kube(['10.0.0.1']);
    const first = new PushContext({ version: '1', mesh, config, registries: [snap] });
    const second = new PushContext({ version: '2', mesh, config, cache: first.cache, previous: first, registries: [snap] });
    assert.equal(second.registry, first.registry);
    assert.equal(
      changeSet(
        pushRequest({ configsUpdated: [registryKey('Service', 'shop', HOST)], start: 0 }),
        config,
        config,
        mesh.domain,
        mesh.rootNamespace,
      ),
      'all',
    );
  });
});
