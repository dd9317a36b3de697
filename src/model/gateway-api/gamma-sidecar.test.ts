/**
 * GAMMA for Envoy sidecars: the generated VirtualService drives the sidecar's outbound routes, and
 * an incremental push after a route edit (cache invalidated by the change set) equals a fresh one.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { configCredentials } from '../../networking/gateway/config-credentials.js';
import { registerEnvoyGenerators } from '../../networking/envoy-generators.js';
import { registerGrpcGenerators } from '../../networking/grpc/grpc-generators.js';
import { silentLogger } from '../../util/log.js';
import { GeneratorRegistry } from '../../xds/generator.js';
import { snapshotOf } from '../../../test/support/config-fixture.js';
import { serviceEntry, workloadEntry } from '../../../test/support/mesh-fixtures.js';
import { generateFor, proxyFor } from '../../../test/support/scenario.js';
import { changeSet } from '../dependency-tokens.js';
import { defaultMeshConfig } from '../../config/mesh/mesh-config.js';
import { PushContext } from '../push-context.js';
import { pushRequest } from '../push-request.js';

const generators = registerEnvoyGenerators(registerGrpcGenerators(new GeneratorRegistry()), {
  logger: silentLogger,
  credentials: (p) => configCredentials(p.config, silentLogger),
});
const mesh = defaultMeshConfig();
const sidecar = proxyFor({ id: 'sidecar~10.0.0.9~client.default~default.svc.cluster.local' });
const HOST = 'echo.default.svc.cluster.local';

const services: Record<string, unknown>[] = [
  serviceEntry('echo', { host: HOST, selector: { app: 'echo' } }),
  ...['v1', 'v2'].flatMap((v, i) => [
    serviceEntry(`echo-${v}`, { host: `echo-${v}.default.svc.cluster.local`, selector: { app: `echo-${v}` } }),
    workloadEntry(`echo-${v}`, { address: `10.0.1.${i + 1}`, port: 9000, labels: { app: `echo-${v}` } }),
  ]),
].map((d) => ({ ...d }));

function grpcRoute(w1: number, w2: number): Record<string, unknown> {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'GRPCRoute',
    metadata: { name: 'echo', namespace: 'default' },
    spec: {
      parentRefs: [{ group: '', kind: 'Service', name: 'echo', port: 8080 }],
      rules: [
        { matches: [{ headers: [{ name: 'x-canary', value: 'yes' }] }], backendRefs: [{ name: 'echo-v2', port: 8080 }] },
        {
          backendRefs: [
            { name: 'echo-v1', port: 8080, weight: w1 },
            { name: 'echo-v2', port: 8080, weight: w2 },
          ],
        },
      ],
    },
  };
}

/** The sidecar's routes for the parent host: header matcher names and cluster weights, per route. */
function echoRoutes(push: PushContext): { headers: string[]; clusters: string[] }[] {
  const vh = generateFor(push, generators, sidecar)
    .routes.flatMap((rc) => rc.virtualHosts)
    .find((v) => v.domains.includes(HOST));
  assert.ok(vh, 'no virtual host for the parent service');
  return vh.routes.map((r) => {
    const action = r.action.case === 'route' ? r.action.value : undefined;
    const spec = action?.clusterSpecifier;
    const clusters =
      spec?.case === 'cluster'
        ? [spec.value]
        : spec?.case === 'weightedClusters'
          ? spec.value.clusters.map((c) => `${c.name}=${c.weight?.valueOf() ?? '?'}`)
          : [];
    return { headers: r.match?.headers.map((h) => h.name) ?? [], clusters };
  });
}

describe('GAMMA routes for Envoy sidecars', () => {
  it('the parent host routes by the GRPCRoute; a weight edit pushed incrementally equals a fresh build', () => {
    const before = snapshotOf([...services, grpcRoute(70, 30)]);
    const first = new PushContext({ version: 'v1', mesh, config: before });
    assert.deepEqual(echoRoutes(first), [
      { headers: ['x-canary'], clusters: ['outbound|8080||echo-v2.default.svc.cluster.local'] },
      {
        headers: [],
        clusters: ['outbound|8080||echo-v1.default.svc.cluster.local=70', 'outbound|8080||echo-v2.default.svc.cluster.local=30'],
      },
    ]);

    const after = snapshotOf([...services, grpcRoute(50, 50)]);
    const changes = changeSet(
      pushRequest({ full: true, configsUpdated: ['GRPCRoute/default/echo'], start: 0 }),
      before,
      after,
      mesh.domain,
      mesh.rootNamespace,
    );
    assert.notEqual(changes, 'all');
    if (changes !== 'all') first.cache.invalidate(changes);
    const incremental = new PushContext({ version: 'v2', mesh, config: after, cache: first.cache, previous: first });
    const fresh = new PushContext({ version: 'fresh', mesh, config: after });
    assert.deepEqual(echoRoutes(incremental)[1]?.clusters, [
      'outbound|8080||echo-v1.default.svc.cluster.local=50',
      'outbound|8080||echo-v2.default.svc.cluster.local=50',
    ]);
    assert.deepEqual(generateFor(incremental, generators, sidecar), generateFor(fresh, generators, sidecar));
  });
});
