/**
 * Gateway API status on a real API server: meshpilot's status writer, run as the leader of the
 * `istio-leader` Lease (real leader election), reads Gateway API objects through the Kubernetes
 * config source and Services/EndpointSlices through the Kubernetes registry, and writes on the
 * status subresource: Accepted on an HTTPRoute with a Service parent (GAMMA) and on a Gateway
 * (with Programmed and its address once the gateway's Service has an endpoint), and keeps them
 * current (a route to a missing Service parent is NoMatchingParent until the Service appears).
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ConfigStore } from '../../src/config/store.js';
import { GATEWAY_API_KINDS, KubeConfigSource } from '../../src/config/sources/kube/index.js';
import { startSingletons, type RunningSingletons } from '../../src/bootstrap/singletons.js';
import { gatewayStatusTask } from '../../src/bootstrap/gateway-status.js';
import { defaultMeshConfig } from '../../src/config/mesh/mesh-config.js';
import { PushContext } from '../../src/model/push-context.js';
import { KubeRegistry } from '../../src/registry/kube/kube-registry.js';
import { silentLogger } from '../../src/util/log.js';
import { adminRequest, applyCrds, KUBE_SETUP_TIMEOUT_MS, kubeSkipReason, startKubeCluster, type KubeCluster } from '../support/kube.js';
import { CoreClient } from '../support/kube-objects.js';
import { REPO_ROOT } from '../support/paths.js';
import { waitFor } from '../support/wait.js';

const skip = kubeSkipReason();
const CRD_DIR = join(REPO_ROOT, 'manifests', 'crds', 'gateway-api');
const GW = 'gateway.networking.k8s.io/v1';

let cluster: KubeCluster;
let source: KubeConfigSource | undefined;
let registry: KubeRegistry | undefined;
let singletons: RunningSingletons | undefined;
const store = new ConfigStore();

interface Cond {
  type: string;
  status: string;
  reason: string;
  message: string;
  observedGeneration?: number;
  lastTransitionTime?: string;
}

async function status(path: string): Promise<Record<string, unknown> | undefined> {
  const res = await adminRequest(cluster.env, 'GET', path);
  return res.status === 200 ? (JSON.parse(res.body) as { status?: Record<string, unknown> }).status : undefined;
}

describe('Gateway API status written by the leader on a real API server', { skip }, () => {
  before(
    async () => {
      cluster = await startKubeCluster();
      for (const f of readdirSync(CRD_DIR).filter((n) => n.endsWith('.yaml')))
        await applyCrds(cluster.clientNode, cluster.env, join(CRD_DIR, f));
    },
    { timeout: KUBE_SETUP_TIMEOUT_MS },
  );

  after(async () => {
    await singletons?.stop();
    await source?.stop();
    await registry?.stop();
    await cluster?.stop();
  });

  it('writes Accepted on a GAMMA HTTPRoute and Accepted/Programmed on a Gateway, and keeps them current', async () => {
    const ns = await cluster.namespace('gwstatus');
    await adminRequest(cluster.env, 'POST', '/api/v1/namespaces', { metadata: { name: 'istio-system' } });
    const core = new CoreClient(cluster.clientNode);
    await core.service(ns, { metadata: { name: 'echo', namespace: ns }, spec: { ports: [{ name: 'http', port: 80 }] } });
    const create = async (plural: string, body: unknown): Promise<void> => {
      const res = await adminRequest(cluster.env, 'POST', `/apis/${GW}/namespaces/${ns}/${plural}`, body);
      assert.equal(res.status, 201, res.body);
    };
    await create('gateways', {
      apiVersion: GW,
      kind: 'Gateway',
      metadata: { name: 'gw', namespace: ns },
      spec: { gatewayClassName: 'istio', listeners: [{ name: 'http', port: 80, protocol: 'HTTP' }] },
    });
    await create('httproutes', {
      apiVersion: GW,
      kind: 'HTTPRoute',
      metadata: { name: 'mesh', namespace: ns },
      spec: {
        parentRefs: [
          { group: '', kind: 'Service', name: 'echo', port: 80 },
          { group: '', kind: 'Service', name: 'later' },
        ],
        rules: [{ backendRefs: [{ name: 'echo', port: 80 }] }],
      },
    });

    source = new KubeConfigSource({
      kubeConfig: cluster.kubeConfig,
      logger: silentLogger,
      kinds: GATEWAY_API_KINDS,
      backoff: { initialMs: 50, maxMs: 500 },
    });
    await source.start(store);
    registry = new KubeRegistry({ kubeConfig: cluster.kubeConfig, logger: silentLogger, backoff: { initialMs: 50, maxMs: 500 } });
    await registry.start();
    const mesh = defaultMeshConfig();
    // What discovery's pushes do: a PushContext over the store and the Kubernetes registry.
    const current = (): PushContext =>
      new PushContext({ version: 'test', mesh, config: store.snapshot(), registries: [registry!.snapshot()] });
    singletons = startSingletons({
      cluster: { kubeConfig: cluster.kubeConfig, kube: await import('../../src/bootstrap/kube-side.js') },
      namespace: 'istio-system',
      leaderElection: { enabled: true, identity: 'meshpilot-test', leaseDurationMs: 5_000, renewDeadlineMs: 3_000, retryPeriodMs: 200 },
      ca: undefined,
      discoverySelectors: [],
      tasks: [
        gatewayStatusTask({
          kubeConfig: cluster.kubeConfig,
          snapshot: () => store.snapshot(),
          push: current,
          logger: silentLogger,
          intervalMs: 100,
        }),
      ],
      logger: silentLogger,
    });

    const routePath = `/apis/${GW}/namespaces/${ns}/httproutes/mesh`;
    const gwPath = `/apis/${GW}/namespaces/${ns}/gateways/gw`;
    type Parent = { parentRef: { name: string }; controllerName: string; conditions: Cond[] };
    const parents = async (): Promise<Parent[]> => ((await status(routePath))?.parents as Parent[] | undefined) ?? [];
    await waitFor(async () => (await parents()).length === 2, { timeoutMs: 15_000, description: 'route status written by the leader' });
    const byName = async (n: string): Promise<Cond[]> => (await parents()).find((p) => p.parentRef.name === n)?.conditions ?? [];
    const accepted = (await byName('echo')).find((c) => c.type === 'Accepted');
    assert.deepEqual(
      { ...accepted, lastTransitionTime: undefined },
      {
        type: 'Accepted',
        status: 'True',
        reason: 'Accepted',
        message: 'Route was valid',
        observedGeneration: 1,
        lastTransitionTime: undefined,
      },
    );
    assert.match(accepted?.lastTransitionTime ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.equal(
      (await parents()).every((p) => p.controllerName === 'istio.io/gateway-controller'),
      true,
    );
    const missing = (await byName('later')).find((c) => c.type === 'Accepted');
    assert.deepEqual(
      [missing?.status, missing?.reason, missing?.message],
      ['False', 'NoMatchingParent', 'parent service: "later" not found'],
    );

    // The Gateway: Accepted at once; Programmed once its Service has an endpoint on the listener port.
    const gwConds = async (): Promise<Cond[]> => ((await status(gwPath))?.conditions as Cond[] | undefined) ?? [];
    await waitFor(async () => (await gwConds()).some((c) => c.type === 'Accepted' && c.status === 'True'), {
      timeoutMs: 15_000,
      description: 'Gateway Accepted',
    });
    const programmed = (await gwConds()).find((c) => c.type === 'Programmed');
    assert.deepEqual([programmed?.status, programmed?.reason], ['False', 'AddressNotUsable']);
    assert.match(programmed?.message ?? '', /hostname "gw-istio\.[a-z0-9-]+\.svc\.cluster\.local" not found/);
    await core.service(ns, {
      metadata: { name: 'gw-istio', namespace: ns },
      spec: { ports: [{ name: 'http', port: 80 }], selector: { 'gateway.networking.k8s.io/gateway-name': 'gw' } },
    });
    await core.slice(ns, {
      metadata: { name: 'gw-istio-1', namespace: ns, labels: { 'kubernetes.io/service-name': 'gw-istio' } },
      addressType: 'IPv4',
      endpoints: [{ addresses: ['10.9.0.1'], conditions: { ready: true } }],
      ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
    });
    await waitFor(async () => (await gwConds()).some((c) => c.type === 'Programmed' && c.status === 'True'), {
      timeoutMs: 15_000,
      description: 'Gateway Programmed after its Service got an endpoint',
    });
    const gw = await status(gwPath);
    assert.deepEqual(gw?.addresses, [{ type: 'Hostname', value: `gw-istio.${ns}.svc.cluster.local` }]);
    assert.equal((gw?.listeners as { attachedRoutes: number }[] | undefined)?.[0]?.attachedRoutes, 0);

    // Kept current: the missing parent Service appears → that parent becomes Accepted; the other keeps its transition time.
    const before = accepted?.lastTransitionTime;
    await core.service(ns, { metadata: { name: 'later', namespace: ns }, spec: { ports: [{ name: 'http', port: 80 }] } });
    await waitFor(async () => (await byName('later')).some((c) => c.type === 'Accepted' && c.status === 'True'), {
      timeoutMs: 15_000,
      description: 'the later parent accepted',
    });
    assert.equal((await byName('echo')).find((c) => c.type === 'Accepted')?.lastTransitionTime, before);
  });
});
