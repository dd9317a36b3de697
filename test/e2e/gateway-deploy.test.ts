/**
 * The automated deployment of a Gateway API Gateway, on a real kube-apiserver with
 * kube-controller-manager (its garbage collector follows ownerReferences). The controller runs as
 * the leader would run it, with the token of the RBAC manifest's istiod ServiceAccount (so the
 * manifest's rules are what it may do): a Gateway of class `istio` gets its `<gateway>-istio`
 * Deployment, Service and ServiceAccount owned by it, follows its listeners and infrastructure
 * labels, recreates a Deployment deleted by hand, leaves alone what it does not manage and other
 * classes, and everything goes when the Gateway is deleted.
 */
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { GatewayDeployer } from '../../src/gateway-deploy/controller.js';
import { gatewayDeployOptions } from '../../src/gateway-deploy/options.js';
import { injectorSnapshot } from '../../src/inject/injector-source.js';
import { defaultMeshConfig, defaultProxyConfig } from '../../src/inject/mesh.js';
import { silentLogger } from '../../src/util/log.js';
import {
  adminRequest,
  applyCrds,
  KUBE_SETUP_TIMEOUT_MS,
  kubeSkipReason,
  meshpilotServiceAccount,
  startKubeCluster,
  type KubeCluster,
} from '../support/kube.js';
import { REPO_ROOT } from '../support/paths.js';
import { waitFor } from '../support/wait.js';

const skip = kubeSkipReason();
const CRD_DIR = join(REPO_ROOT, 'manifests', 'crds', 'gateway-api');
const GW_API = '/apis/gateway.networking.k8s.io/v1';

type Obj = {
  metadata?: {
    uid?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: Array<{ kind?: string; name?: string; uid?: string }>;
  };
  spec?: Record<string, unknown>;
};

let cluster: KubeCluster;
const abort = new AbortController();
let running: Promise<void> | undefined;
let ns = '';

async function get(path: string): Promise<Obj | undefined> {
  const res = await adminRequest(cluster.env, 'GET', path);
  if (res.status === 404) return undefined;
  assert.equal(res.status, 200, `GET ${path}: ${res.body}`);
  return JSON.parse(res.body) as Obj;
}

async function send(method: string, path: string, body?: unknown, contentType?: string): Promise<void> {
  const res = await adminRequest(cluster.env, method, path, body, contentType);
  assert.ok(res.status < 300, `${method} ${path}: HTTP ${res.status} ${res.body}`);
}

const deployment = (name: string): string => `/apis/apps/v1/namespaces/${ns}/deployments/${name}`;
const service = (name: string): string => `/api/v1/namespaces/${ns}/services/${name}`;
const serviceAccount = (name: string): string => `/api/v1/namespaces/${ns}/serviceaccounts/${name}`;

function gateway(name: string, spec: Record<string, unknown>): Record<string, unknown> {
  return { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', metadata: { name, namespace: ns }, spec };
}

describe('Gateway API automated deployment on a real cluster', { skip }, () => {
  before(
    async () => {
      cluster = await startKubeCluster({ controllerManager: true });
      for (const f of readdirSync(CRD_DIR).filter((n) => n.endsWith('.yaml')))
        await applyCrds(cluster.clientNode, cluster.env, join(CRD_DIR, f));
      const system = await cluster.namespace('istio-system');
      ns = await cluster.namespace('gw');
      const creds = await meshpilotServiceAccount(cluster, system);
      const builtin = injectorSnapshot(undefined, 'builtin', {});
      const mesh = defaultMeshConfig();
      const deployer = new GatewayDeployer({
        kubeConfig: creds.kubeConfig,
        logger: silentLogger,
        options: gatewayDeployOptions({}),
        systemNamespace: system,
        injector: () => builtin,
        mesh: () => mesh,
        proxyConfig: () => defaultProxyConfig(),
        backoff: { initialMs: 50, maxMs: 1000 },
      });
      running = deployer.run(abort.signal);
    },
    { timeout: KUBE_SETUP_TIMEOUT_MS },
  );

  after(async () => {
    abort.abort();
    await running;
    await cluster?.stop();
  });

  it('a Gateway of class istio gets its Deployment, Service and ServiceAccount, owned by it, and keeps them current', async () => {
    await send(
      'POST',
      `${GW_API}/namespaces/${ns}/gateways`,
      gateway('web', { gatewayClassName: 'istio', listeners: [{ name: 'http', port: 80, protocol: 'HTTP' }] }),
    );
    const gw = await get(`${GW_API}/namespaces/${ns}/gateways/web`);
    const uid = gw?.metadata?.uid;
    assert.ok(uid);
    await waitFor(
      async () =>
        (await get(deployment('web-istio'))) !== undefined &&
        (await get(service('web-istio'))) !== undefined &&
        (await get(serviceAccount('web-istio'))) !== undefined,
      { timeoutMs: 20_000, description: 'web-istio objects' },
    );
    for (const path of [deployment('web-istio'), service('web-istio'), serviceAccount('web-istio')]) {
      const o = await get(path);
      assert.deepEqual(
        o?.metadata?.ownerReferences?.map((r) => [r.kind, r.name, r.uid]),
        [['Gateway', 'web', uid]],
        path,
      );
      assert.equal(o?.metadata?.labels?.['gateway.istio.io/managed'], 'istio.io-gateway-controller', path);
      assert.equal(o?.metadata?.labels?.['gateway.networking.k8s.io/gateway-name'], 'web', path);
    }
    const svc = await get(service('web-istio'));
    assert.equal(svc?.spec?.type, 'LoadBalancer');
    assert.deepEqual(
      (svc?.spec?.ports as Array<{ name: string; port: number }>).map((p) => [p.name, p.port]),
      [
        ['status-port', 15021],
        ['http', 80],
      ],
    );
    const dep = await get(deployment('web-istio'));
    const pod = (dep?.spec?.template as { spec: { serviceAccountName: string; containers: Array<{ name: string; args: string[] }> } }).spec;
    assert.equal(pod.serviceAccountName, 'web-istio');
    assert.deepEqual(
      pod.containers.map((c) => [c.name, c.args.slice(0, 2)]),
      [['istio-proxy', ['proxy', 'router']]],
    );
    assert.equal(
      (await get(`${GW_API}/namespaces/${ns}/gateways/web`))?.metadata?.annotations?.['gateway.istio.io/controller-version'],
      '5',
    );

    // A new listener and infrastructure labels reach the objects.
    await send(
      'PATCH',
      `${GW_API}/namespaces/${ns}/gateways/web`,
      {
        spec: {
          listeners: [
            { name: 'http', port: 80, protocol: 'HTTP' },
            { name: 'tls', port: 443, protocol: 'TLS', tls: { mode: 'Passthrough' } },
          ],
          infrastructure: { labels: { team: 'edge' } },
        },
      },
      'application/merge-patch+json',
    );
    await waitFor(
      async () =>
        ((await get(service('web-istio')))?.spec?.ports as unknown[] | undefined)?.length === 3 &&
        (await get(deployment('web-istio')))?.metadata?.labels?.team === 'edge',
      { timeoutMs: 20_000, description: 'port 443 and label team=edge' },
    );

    // A Deployment deleted by hand comes back.
    const before = (await get(deployment('web-istio')))?.metadata?.uid;
    await send('DELETE', deployment('web-istio'));
    await waitFor(
      async () => {
        const now = (await get(deployment('web-istio')))?.metadata?.uid;
        return now !== undefined && now !== before;
      },
      { timeoutMs: 20_000, description: 'web-istio Deployment recreated' },
    );

    // Deleting the Gateway removes everything it owned (the garbage collector).
    await send('DELETE', `${GW_API}/namespaces/${ns}/gateways/web`);
    await waitFor(
      async () =>
        (await get(deployment('web-istio'))) === undefined &&
        (await get(service('web-istio'))) === undefined &&
        (await get(serviceAccount('web-istio'))) === undefined,
      { timeoutMs: 60_000, description: 'web-istio objects garbage-collected' },
    );
  });

  it('other classes, hostname addresses and objects it does not manage are left alone', async () => {
    // An existing Service of the name it would write, without the managed label.
    await send('POST', `/api/v1/namespaces/${ns}/services`, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'mine-istio', namespace: ns },
      spec: { ports: [{ name: 'x', port: 9 }] },
    });
    // Created first: the controller's queue takes them in order, so they are judged before `mine`.
    await send(
      'POST',
      `${GW_API}/namespaces/${ns}/gateways`,
      gateway('foreign', { gatewayClassName: 'someone-else', listeners: [{ name: 'http', port: 80, protocol: 'HTTP' }] }),
    );
    await send(
      'POST',
      `${GW_API}/namespaces/${ns}/gateways`,
      gateway('external', {
        gatewayClassName: 'istio',
        addresses: [{ type: 'Hostname', value: 'lb.example.com' }],
        listeners: [{ name: 'http', port: 80, protocol: 'HTTP' }],
      }),
    );
    await send(
      'POST',
      `${GW_API}/namespaces/${ns}/gateways`,
      gateway('mine', { gatewayClassName: 'istio', listeners: [{ name: 'http', port: 80, protocol: 'HTTP' }] }),
    );
    await waitFor(async () => (await get(deployment('mine-istio'))) !== undefined, {
      timeoutMs: 20_000,
      description: 'mine-istio Deployment',
    });
    const svc = await get(service('mine-istio'));
    assert.equal(svc?.metadata?.labels?.['gateway.istio.io/managed'], undefined);
    assert.deepEqual(
      (svc?.spec?.ports as Array<{ port: number }>).map((p) => p.port),
      [9],
    );
    // The other two were judged before `mine`, which is done: nothing was made for them.
    assert.equal(await get(deployment('foreign-someone-else')), undefined);
    assert.equal(await get(deployment('external-istio')), undefined);
    assert.equal(
      (await get(`${GW_API}/namespaces/${ns}/gateways/foreign`))?.metadata?.annotations?.['gateway.istio.io/controller-version'],
      undefined,
    );
  });
});
