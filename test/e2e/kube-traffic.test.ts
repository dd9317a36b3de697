/**
 * Real gRPC traffic routed by config that lives in a real Kubernetes API server.
 * The API server refuses loopback addresses in EndpointSlices, so the backends listen on addresses
 * of a network namespace this test creates (10.248.0.2 and .3 on its lo); the grpc-js-xds client
 * runs in the same namespace and reaches meshpilot over a unix socket that this process forwards
 * to meshpilot's loopback ADS port. Service + Pods + EndpointSlice + DestinationRule +
 * VirtualService are written through the API; traffic follows a weighted split, then a PATCHed
 * header route, then an endpoint removed from the slice; then a GAMMA GRPCRoute (Service parent)
 * replaces the VirtualService, and meshpilot's leader marks the route Accepted on the API server.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createConnection, createServer, type Server } from 'node:net';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface, type Interface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { createNetns, netnsSkipReason, type Netns } from '../support/cni/netns.js';
import { trackChild } from '../support/cleanup.js';
import {
  adminRequest,
  applyCrds,
  KUBE_SETUP_TIMEOUT_MS,
  kubeSkipReason,
  meshpilotServiceAccount,
  startKubeCluster,
  type KubeCluster,
} from '../support/kube.js';
import { CoreClient, IstioClient, readyStatus } from '../support/kube-objects.js';
import { endOfRunCheck, startMeshpilot, type Meshpilot } from '../support/meshpilot-process.js';
import type { PeerRequest } from '../support/netns-grpc-peer.js';
import { REPO_ROOT } from '../support/paths.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import type { Tally } from '../support/xds-client.js';

const skip = kubeSkipReason() ?? netnsSkipReason();
const V1 = '10.248.0.2';
const V2 = '10.248.0.3';
const PORT = 8080;

let cluster: KubeCluster;
let k8s: CoreClient;
let istio: IstioClient;
let mp: Meshpilot | undefined;
let dir: TempDir | undefined;
let netns: Netns | undefined;
let forwarder: Server | undefined;
let peer: { child: ChildProcess; lines: Interface; next(): Promise<Record<string, unknown>> } | undefined;
let ns: string;

const target = (): string => `xds:///web.${ns}.svc.cluster.local:80`;

function withLogs(msg: string): string {
  return `${msg}\n--- meshpilot stderr tail ---\n${mp?.tail(30) ?? '(not running)'}`;
}

/** Forwards connections on a unix socket to meshpilot's ADS port (the socket is reachable from any network namespace). */
async function forwardAds(socketPath: string, grpcAddr: string): Promise<Server> {
  const [host, port] = [grpcAddr.slice(0, grpcAddr.lastIndexOf(':')), Number(grpcAddr.slice(grpcAddr.lastIndexOf(':') + 1))];
  const server = createServer((down) => {
    const up = createConnection({ host, port });
    down.pipe(up).pipe(down);
    const close = (): void => {
      down.destroy();
      up.destroy();
    };
    down.once('error', close).once('close', close);
    up.once('error', close).once('close', close);
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(socketPath, () => resolve()));
  return server;
}

function startPeer(inside: Netns, socketPath: string): NonNullable<typeof peer> {
  const bootstrap = {
    xds_servers: [{ server_uri: `unix://${socketPath}`, channel_creds: [{ type: 'insecure' }], server_features: ['xds_v3'] }],
    node: { id: `sidecar~10.248.0.9~client.${ns}~${ns}.svc.cluster.local`, metadata: { GENERATOR: 'grpc', NAMESPACE: ns }, locality: {} },
  };
  const child = spawn(
    'ip',
    ['netns', 'exec', inside.name, process.execPath, '--import', 'tsx', join(REPO_ROOT, 'test/support/netns-grpc-peer.ts')],
    {
      cwd: REPO_ROOT,
      env: {
        ...process.env,
        PEER_BACKENDS: `v1=${V1}:${PORT},v2=${V2}:${PORT}`,
        GRPC_XDS_BOOTSTRAP_CONFIG: JSON.stringify(bootstrap),
        GRPC_XDS_BOOTSTRAP: '',
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  trackChild(child);
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-4000)));
  const lines = createInterface({ input: child.stdout! });
  const queue: string[] = [];
  const waiters: ((l: string) => void)[] = [];
  lines.on('line', (l) => {
    const w = waiters.shift();
    if (w) w(l);
    else queue.push(l);
  });
  const next = (): Promise<Record<string, unknown>> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the traffic peer did not answer in 30 s; its stderr:\n${stderr}`)), 30_000);
      const take = (l: string): void => {
        clearTimeout(timer);
        resolve(JSON.parse(l) as Record<string, unknown>);
      };
      const l = queue.shift();
      if (l !== undefined) take(l);
      else waiters.push(take);
    });
  return { child, lines, next };
}

async function traffic(n: number, metadata?: Record<string, string>): Promise<Tally> {
  assert.ok(peer);
  const req: PeerRequest = { target: target(), n, ...(metadata ? { metadata } : {}) };
  peer.child.stdin?.write(`${JSON.stringify(req)}\n`);
  return (await peer.next()) as unknown as Tally;
}

/** Calls until `accept` holds for a batch (config takes a push to arrive), returning that batch. */
async function trafficUntil(n: number, accept: (t: Tally) => boolean, what: string, metadata?: Record<string, string>): Promise<Tally> {
  let last: Tally | undefined;
  await waitFor(
    async () => {
      last = await traffic(n, metadata);
      return accept(last);
    },
    { timeoutMs: 20_000, intervalMs: 100, description: what },
  ).catch((err: unknown) => {
    throw new Error(withLogs(`${(err as Error).message}; last batch: ${JSON.stringify(last)}`));
  });
  assert.ok(last);
  return last;
}

const sliceEndpoint = (
  ip: string,
  podName: string,
): { addresses: string[]; conditions: { ready: boolean }; targetRef: { kind: string; name: string; namespace: string } } => ({
  addresses: [ip],
  conditions: { ready: true },
  targetRef: { kind: 'Pod', name: podName, namespace: ns },
});

function webSlice(endpoints: ReturnType<typeof sliceEndpoint>[], service = 'web'): Parameters<CoreClient['slice']>[1] {
  return {
    metadata: { name: `${service}-1`, namespace: ns, labels: { 'kubernetes.io/service-name': service } },
    addressType: 'IPv4',
    endpoints,
    ports: [{ name: 'grpc', port: PORT, protocol: 'TCP' }],
  };
}

describe('grpc-js-xds traffic through config from a real Kubernetes API server', { skip }, () => {
  before(
    async () => {
      cluster = await startKubeCluster();
      await cluster.applyIstioCrds();
      const gatewayApiCrds = join(REPO_ROOT, 'manifests', 'crds', 'gateway-api');
      for (const f of readdirSync(gatewayApiCrds).filter((n) => n.endsWith('.yaml')))
        await applyCrds(cluster.clientNode, cluster.env, join(gatewayApiCrds, f));
      k8s = new CoreClient(cluster.clientNode);
      istio = new IstioClient(cluster.clientNode);
      ns = await cluster.namespace('shop');
      for (const [name, version, ip] of [
        ['web-v1', 'v1', V1],
        ['web-v2', 'v2', V2],
      ] as const) {
        await k8s.pod(
          ns,
          {
            metadata: { name, labels: { app: 'web', version } },
            spec: { serviceAccountName: 'web', containers: [{ name: 'app', image: 'example/web' }] },
          },
          readyStatus(ip),
        );
      }
      await k8s.service(ns, {
        metadata: { name: 'web' },
        spec: { selector: { app: 'web' }, ports: [{ name: 'grpc', port: 80, targetPort: PORT }] },
      });
      await k8s.slice(ns, webSlice([sliceEndpoint(V1, 'web-v1'), sliceEndpoint(V2, 'web-v2')]));
      await istio.create({
        apiVersion: 'networking.istio.io/v1',
        kind: 'DestinationRule',
        metadata: { name: 'web', namespace: ns },
        spec: {
          host: 'web',
          subsets: [
            { name: 'v1', labels: { version: 'v1' } },
            { name: 'v2', labels: { version: 'v2' } },
          ],
        },
      });
      await istio.create({
        apiVersion: 'networking.istio.io/v1',
        kind: 'VirtualService',
        metadata: { name: 'web', namespace: ns },
        spec: {
          hosts: ['web'],
          http: [
            {
              route: [
                { destination: { host: 'web', subset: 'v1' }, weight: 50 },
                { destination: { host: 'web', subset: 'v2' }, weight: 50 },
              ],
            },
          ],
        },
      });
      dir = tempDir('meshpilot-kube-traffic-');
      // As the RBAC manifest's istiod ServiceAccount, not cluster-admin.
      const systemNs = await cluster.namespace('mesh-system');
      const creds = await meshpilotServiceAccount(cluster, systemNs);
      mp = await startMeshpilot({
        configDir: dir.path,
        args: ['--kubeconfig', creds.kubeconfigPath],
        env: { POD_NAMESPACE: systemNs },
        readyTimeoutMs: 60_000,
      });
      const socket = join(dir.path, 'xds.sock');
      forwarder = await forwardAds(socket, mp.grpcAddr);
      netns = createNetns('kt');
      netns.run('ip', 'addr', 'add', `${V1}/32`, 'dev', 'lo');
      netns.run('ip', 'addr', 'add', `${V2}/32`, 'dev', 'lo');
      peer = startPeer(netns, socket);
      const hello = await peer.next();
      assert.equal(hello.ready, true);
    },
    { timeout: KUBE_SETUP_TIMEOUT_MS },
  );

  after(async () => {
    peer?.child.stdin?.end();
    if (peer && peer.child.exitCode === null) await new Promise((r) => peer?.child.once('exit', r));
    forwarder?.close();
    netns?.remove();
    const check = endOfRunCheck(mp);
    await mp?.stop();
    await dir?.remove();
    await cluster?.stop();
    check();
  });

  it('a 50/50 VirtualService split over the two pods of the Service: both backends answer, in proportion', async () => {
    const t = await trafficUntil(400, (x) => (x.counts.v1 ?? 0) + (x.counts.v2 ?? 0) === x.total, 'every RPC answered by a backend');
    const v1 = ((t.counts.v1 ?? 0) * 100) / t.total;
    assert.ok(v1 > 40 && v1 < 60, `v1 share ${v1.toFixed(1)}% of ${t.total} RPCs, expected 50 ± 10 (${JSON.stringify(t.counts)})`);
  });

  it('a PATCH to a header route sends x-canary traffic to v2 and the rest to v1', async () => {
    await istio.patch('VirtualService', ns, 'web', [
      {
        op: 'replace',
        path: '/spec/http',
        value: [
          { match: [{ headers: { 'x-canary': { exact: 'yes' } } }], route: [{ destination: { host: 'web', subset: 'v2' } }] },
          { route: [{ destination: { host: 'web', subset: 'v1' } }] },
        ],
      },
    ]);
    await trafficUntil(50, (x) => x.counts.v1 === x.total, 'plain traffic only to v1');
    const canary = await traffic(50, { 'x-canary': 'yes' });
    assert.deepEqual(canary.counts, { v2: 50 }, `canary traffic: ${JSON.stringify(canary)}`);
  });

  it('a subset-less route spreads over both endpoints; removing one from the EndpointSlice takes it out of rotation', async () => {
    await istio.patch('VirtualService', ns, 'web', [
      { op: 'replace', path: '/spec/http', value: [{ route: [{ destination: { host: 'web' } }] }] },
    ]);
    await trafficUntil(
      100,
      (x) => (x.counts.v1 ?? 0) > 0 && (x.counts.v2 ?? 0) > 0 && (x.counts.v1 ?? 0) + (x.counts.v2 ?? 0) === x.total,
      'both endpoints answering',
    );
    await k8s.discovery.replaceNamespacedEndpointSlice({ namespace: ns, name: 'web-1', body: webSlice([sliceEndpoint(V2, 'web-v2')]) });
    await trafficUntil(100, (x) => x.counts.v2 === x.total, 'only the remaining endpoint (v2) answering');
  });

  it('GAMMA from the API server: a GRPCRoute with the Service as parent splits 70/30 between two backend Services, and is marked Accepted', async () => {
    for (const [name, version, ip] of [
      ['web-v1', 'v1', V1],
      ['web-v2', 'v2', V2],
    ] as const) {
      await k8s.service(ns, {
        metadata: { name },
        spec: { selector: { app: 'web', version }, ports: [{ name: 'grpc', port: 80, targetPort: PORT }] },
      });
      await k8s.slice(ns, webSlice([sliceEndpoint(ip, name)], name));
    }
    await istio.delete('VirtualService', ns, 'web');
    const route = {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'GRPCRoute',
      metadata: { name: 'web', namespace: ns },
      spec: {
        parentRefs: [{ group: '', kind: 'Service', name: 'web', port: 80 }],
        rules: [
          {
            backendRefs: [
              { name: 'web-v1', port: 80, weight: 70 },
              { name: 'web-v2', port: 80, weight: 30 },
            ],
          },
        ],
      },
    };
    const created = await adminRequest(cluster.env, 'POST', `/apis/gateway.networking.k8s.io/v1/namespaces/${ns}/grpcroutes`, route);
    assert.equal(created.status, 201, created.body);
    // The subset-less route of the previous test left only v2 in web's slice: v1 answering means the route is in use.
    await trafficUntil(
      50,
      (x) => (x.counts.v1 ?? 0) > 0 && (x.counts.v1 ?? 0) + (x.counts.v2 ?? 0) === x.total,
      'the GRPCRoute split in use',
    );
    const t = await traffic(500);
    const v1 = ((t.counts.v1 ?? 0) * 100) / t.total;
    assert.ok(v1 >= 63 && v1 <= 77, `v1 share ${v1.toFixed(1)}% of ${t.total} RPCs, expected 70 ± 7 (${JSON.stringify(t.counts)})`);
    type Parent = { parentRef: { name: string; kind?: string }; conditions: Array<{ type: string; status: string }> };
    await waitFor(
      async () => {
        const res = await adminRequest(cluster.env, 'GET', `/apis/gateway.networking.k8s.io/v1/namespaces/${ns}/grpcroutes/web`);
        const parents = (JSON.parse(res.body) as { status?: { parents?: Parent[] } }).status?.parents ?? [];
        return parents.some((p) => p.parentRef.name === 'web' && p.conditions.some((c) => c.type === 'Accepted' && c.status === 'True'));
      },
      { timeoutMs: 20_000, description: 'GRPCRoute status Accepted written by meshpilot' },
    );
  });
});
