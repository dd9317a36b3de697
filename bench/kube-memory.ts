/**
 * Cluster-mode memory, side by side: one real kube-apiserver, N Services (each with one
 * EndpointSlice) plus a few Pods, then `meshpilot discovery --kubeconfig` and istiod
 * (`shared/istiod/run-kube`) started against the same server in the same run. For each N the
 * objects are created first (batched, many writes in flight), then each control plane starts from
 * that state (meshpilot, then istiod, one at a time: see measureTogether for why), and once it is
 * ready, lists every Service (`/debug/registryz`) and has settled, VmRSS and VmHWM are read from
 * /proc/<pid>/status and it is stopped. --together starts both at once instead.
 *
 *   npx tsx bench/kube-memory.ts [--services 0,1000,10000] [--endpoints 3] [--namespaces 10] [--pods 5]
 *                                [--concurrency 32] [--settleMs 10000] [--no-dist | --no-build] [--together]
 *
 * meshpilot runs as shipped (dist/, built first, plain node) unless --no-dist (tsx's loader alone
 * holds ~100 MiB); --no-build uses dist/ as it is. MESHPILOT_NODE_ARGS adds node flags to meshpilot
 * (e.g. `--max-semi-space-size=2`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CoreV1Api, DiscoveryV1Api } from '@kubernetes/client-node';
import { freePorts } from '../test/support/ports.js';
import { startKubeCluster, type KubeCluster } from '../test/support/kube.js';
import { startMeshpilot, type Meshpilot } from '../test/support/meshpilot-process.js';
import { REPO_ROOT } from '../test/support/paths.js';
import { tempDir } from '../test/support/temp-dir.js';
import { buildCli } from './lib/build.js';

const { values: opt } = parseArgs({
  options: {
    services: { type: 'string', default: '0,1000,10000' },
    endpoints: { type: 'string', default: '3' },
    namespaces: { type: 'string', default: '10' },
    pods: { type: 'string', default: '5' },
    concurrency: { type: 'string', default: '32' },
    settleMs: { type: 'string', default: '10000' },
    timeoutMs: { type: 'string', default: '900000' },
    'no-dist': { type: 'boolean', default: false },
    'no-build': { type: 'boolean', default: false },
    together: { type: 'boolean', default: false },
  },
});

function count(name: string, v: string, min = 1): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min}, got ${v}`);
  return n;
}

const STEPS = opt.services.split(',').map((s) => count('services', s.trim(), 0));
const E = count('endpoints', opt.endpoints);
const NS = count('namespaces', opt.namespaces);
const PODS = count('pods', opt.pods, 0);
const CONCURRENCY = count('concurrency', opt.concurrency);
const SETTLE_MS = count('settleMs', opt.settleMs, 0);
const TIMEOUT_MS = count('timeoutMs', opt.timeoutMs);
const ISTIOD_RUN = join(process.env.MESHPILOT_SHARED ?? join(REPO_ROOT, '..', 'shared'), 'istiod', 'run-kube');
const log = (m: string): boolean => process.stderr.write(`[kube-memory] ${m}\n`);

interface Mem {
  readonly rssMiB: number;
  readonly hwmMiB: number;
}

function memOf(pid: number): Mem {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string): number => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN);
  return { rssMiB: kb('VmRSS') / 1024, hwmMiB: kb('VmHWM') / 1024 };
}

async function pool(n: number, work: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(CONCURRENCY, Math.max(n, 1)) }, async () => {
      while (next < n) await work(next++);
    }),
  );
}

/** Endpoint k of service i: 10.(100 + i/250).(i%250).k — unique, never loopback. */
const endpointIp = (i: number, k: number): string => `10.${100 + Math.floor(i / 250)}.${i % 250}.${k + 1}`;

/** Creates services [from, to) with their EndpointSlices. */
async function createServices(cluster: KubeCluster, namespaces: readonly string[], from: number, to: number): Promise<void> {
  const core = cluster.clientNode.makeApiClient(CoreV1Api);
  const discovery = cluster.clientNode.makeApiClient(DiscoveryV1Api);
  await pool(to - from, async (j) => {
    const i = from + j;
    const namespace = namespaces[i % namespaces.length]!;
    const name = `svc-${i}`;
    await core.createNamespacedService({
      namespace,
      body: {
        metadata: { name, labels: { app: name }, annotations: { 'bench.meshpilot.dev/note': 'an annotation nothing reads' } },
        spec: { selector: { app: name }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
      },
    });
    await discovery.createNamespacedEndpointSlice({
      namespace,
      body: {
        metadata: { name: `${name}-1`, labels: { 'kubernetes.io/service-name': name } },
        addressType: 'IPv4',
        endpoints: Array.from({ length: E }, (_, k) => ({ addresses: [endpointIp(i, k)], conditions: { ready: true } })),
        ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
      },
    });
  });
}

async function createPods(cluster: KubeCluster, namespace: string, n: number): Promise<void> {
  const core = cluster.clientNode.makeApiClient(CoreV1Api);
  for (let i = 0; i < n; i++) {
    const pod = await core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: `pod-${i}`, labels: { app: 'svc-0' } },
        spec: { nodeName: 'node-1', containers: [{ name: 'app', image: 'example.invalid/app:1' }] },
      },
    });
    // No kubelet: the status a kubelet would write, so the Pod has an IP.
    await core.replaceNamespacedPodStatus({
      namespace,
      name: pod.metadata!.name!,
      body: { ...pod, status: { phase: 'Running', podIP: `10.250.0.${i + 1}`, podIPs: [{ ip: `10.250.0.${i + 1}` }] } },
    });
  }
}

async function getJson(url: string): Promise<unknown> {
  const res = await fetch(url, { signal: AbortSignal.timeout(30_000) });
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  return res.json();
}

/** Polls until `/ready` is 200 and `/debug/registryz` lists `want` bench Services; returns the seconds since `t0` (the start). */
async function waitSynced(name: string, httpAddr: string, want: number, t0: number, alive: () => boolean): Promise<number> {
  let last = -1;
  for (;;) {
    if (!alive()) throw new Error(`${name} exited before it synced`);
    if (performance.now() - t0 > TIMEOUT_MS) throw new Error(`${name}: ${last}/${want} services after ${TIMEOUT_MS} ms`);
    try {
      const ready = await fetch(`http://${httpAddr}/ready`, { signal: AbortSignal.timeout(10_000) });
      if (ready.ok) {
        const services = (await getJson(`http://${httpAddr}/debug/registryz`)) as { hostname?: string }[];
        last = services.filter((s) => s.hostname?.startsWith('svc-') === true).length;
        if (last >= want) return (performance.now() - t0) / 1000;
      }
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}

interface Istiod {
  readonly pid: number;
  readonly httpAddr: string;
  alive(): boolean;
  stop(): Promise<void>;
}

async function startIstiod(kubeconfig: string): Promise<Istiod> {
  const [grpc, http, mon] = await freePorts(3);
  const child: ChildProcess = spawn(
    ISTIOD_RUN,
    [
      'discovery',
      '--kubeconfig',
      kubeconfig,
      '--grpcAddr',
      `127.0.0.1:${grpc}`,
      '--httpAddr',
      `127.0.0.1:${http}`,
      '--monitoringAddr',
      `127.0.0.1:${mon}`,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, PILOT_MAX_REQUESTS_PER_SECOND: '100000' } },
  );
  let tail = '';
  child.stderr!.on('data', (d: Buffer) => (tail = (tail + d.toString()).slice(-4000)));
  let exited = false;
  const done = new Promise<void>((r) => child.once('exit', () => ((exited = true), r())));
  return {
    pid: child.pid!,
    httpAddr: `127.0.0.1:${http}`,
    alive: () => {
      if (exited) log(`istiod exited:\n${tail}`);
      return !exited;
    },
    async stop() {
      if (exited) return;
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await done;
      clearTimeout(killer);
    },
  };
}

interface Row {
  readonly services: number;
  readonly meshpilot: Mem & { readonly syncS: number };
  readonly istiod: Mem & { readonly syncS: number };
}

const cliJs = opt['no-dist'] ? undefined : opt['no-build'] ? join(REPO_ROOT, 'dist/src/cli/meshpilot.js') : buildCli(log);
const cluster = await startKubeCluster();
const dir = tempDir('meshpilot-kube-memory-');
const rows: Row[] = [];
type Measured = Mem & { readonly syncS: number };

async function startMeshpilotAt(): Promise<{ mp: Meshpilot; started: number }> {
  const started = performance.now();
  const mp = await startMeshpilot({
    configDir: dir.path,
    args: ['--kubeconfig', cluster.kubeconfigPath],
    env: { PILOT_MAX_REQUESTS_PER_SECOND: '100000' },
    readyTimeoutMs: TIMEOUT_MS,
    retainLines: false,
    ...(cliJs !== undefined ? { cliJs } : {}),
  });
  return { mp, started };
}

/** meshpilot alone on the cluster: synced, settled, measured, stopped. */
async function measureMeshpilot(n: number): Promise<Measured> {
  const { mp, started } = await startMeshpilotAt();
  try {
    const syncS = await waitSynced('meshpilot', mp.httpAddr, n, started, () => mp.alive());
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    return { ...memOf(mp.pid), syncS };
  } finally {
    await mp.stop();
  }
}

/** istiod alone on the cluster, the same way. */
async function measureIstiod(n: number): Promise<Measured> {
  const started = performance.now();
  const istiod = await startIstiod(cluster.kubeconfigPath);
  try {
    const syncS = await waitSynced('istiod', istiod.httpAddr, n, started, () => istiod.alive());
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    return { ...memOf(istiod.pid), syncS };
  } finally {
    await istiod.stop();
  }
}

/**
 * --together: both at once. They do not share leader elections (Leases vs istiod's ConfigMap
 * locks), so both publish istio-ca-root-cert with different roots and rewrite each other's copy
 * hundreds of times a minute: each is then measured busy.
 */
async function measureTogether(n: number): Promise<Row> {
  const { mp, started: mpStarted } = await startMeshpilotAt();
  const istiodStarted = performance.now();
  const istiod = await startIstiod(cluster.kubeconfigPath);
  try {
    const [mpSync, isSync] = await Promise.all([
      waitSynced('meshpilot', mp.httpAddr, n, mpStarted, () => mp.alive()),
      waitSynced('istiod', istiod.httpAddr, n, istiodStarted, () => istiod.alive()),
    ]);
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    return { services: n, meshpilot: { ...memOf(mp.pid), syncS: mpSync }, istiod: { ...memOf(istiod.pid), syncS: isSync } };
  } finally {
    await Promise.all([mp.stop(), istiod.stop()]);
  }
}

try {
  await cluster.applyIstioCrds();
  const core = cluster.clientNode.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: 'istio-system' } } });
  const namespaces: string[] = [];
  for (let n = 0; n < NS; n++) namespaces.push(await cluster.namespace(`mem${n}`));
  await createPods(cluster, namespaces[0]!, PODS);
  let created = 0;
  for (const n of STEPS) {
    if (n > created) {
      const t0 = performance.now();
      await createServices(cluster, namespaces, created, n);
      log(`created services ${created}..${n - 1} (+EndpointSlices) in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
      created = n;
    }
    const row: Row = opt.together
      ? await measureTogether(n)
      : { services: n, meshpilot: await measureMeshpilot(n), istiod: await measureIstiod(n) };
    rows.push(row);
    log(JSON.stringify(row));
  }
} finally {
  await dir.remove();
  await cluster.stop();
}

const f = (x: number): string => x.toFixed(0).padStart(6);
console.log(
  `\nCluster mode memory: ${E} endpoints per Service, ${NS} namespaces, ${PODS} pods; both control planes in one run, ${opt.together ? 'at the same time' : 'one after the other'} (MiB)\n`,
);
console.log(
  '| Services | meshpilot RSS | meshpilot HWM | istiod RSS | istiod HWM | RSS ratio (mp/istiod) | start to synced, mp / istiod (s) |',
);
console.log('|---:|---:|---:|---:|---:|---:|---:|');
for (const r of rows) {
  console.log(
    `| ${r.services} | ${f(r.meshpilot.rssMiB)} | ${f(r.meshpilot.hwmMiB)} | ${f(r.istiod.rssMiB)} | ${f(r.istiod.hwmMiB)} | ${(
      r.meshpilot.rssMiB / r.istiod.rssMiB
    ).toFixed(2)} | ${r.meshpilot.syncS.toFixed(1)} / ${r.istiod.syncS.toFixed(1)} |`,
  );
}
console.log(`\n${JSON.stringify(rows)}`);
