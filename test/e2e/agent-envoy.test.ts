/**
 * `meshpilot agent` in envoy mode running the real Envoy (test/support/envoy.ts: skipped only when
 * the binary is absent and CI is unset) against `meshpilot discovery` with its CA and TLS ADS.
 *
 * The workload is a gateway (`--proxyType router`): its listener comes from a Gateway on a free
 * port, where a sidecar's virtualInbound/virtualOutbound would need the fixed ports 15006/15001
 * that tests running at the same time would fight over. Through it, a slow backend request spans
 * the SIGTERM drain.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { atExit, trackChild } from '../support/cleanup.js';
import { ENVOY_BINARY, envoySkipReason } from '../support/envoy.js';
import { startJwtCaMeshpilot, type JwtCaMeshpilot } from '../support/jwt-ca-meshpilot.js';
import { serviceEntry, workloadEntry } from '../support/mesh-fixtures.js';
import { MESHPILOT_CLI, PARENT_WATCHDOG_URL, REPO_ROOT } from '../support/paths.js';
import { freePorts } from '../support/ports.js';
import { parsePromText } from '../support/prom-text.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import { writeYaml } from '../support/yaml-files.js';

const skip = envoySkipReason();
const NS = 'foo';
const BACKEND_HOST = `slow.${NS}.svc.cluster.local`;

interface Ports {
  readonly admin: number;
  readonly status: number;
  readonly envoyStatus: number;
  readonly prometheus: number;
}

interface AgentProcess {
  readonly child: ChildProcess;
  readonly ports: Ports;
  readonly lines: string[];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Pids from the agent's `envoy started` lines, newest last. */
  envoyPids(): number[];
  tail(n?: number): string;
}

interface Answer {
  readonly status: number;
  readonly body: string;
  readonly headers: http.IncomingHttpHeaders;
}

/** One GET on a fresh connection (no pooled socket survives an Envoy restart to confuse a later test). */
function get(port: number, p: string, method = 'GET'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: p, method, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

let dir: TempDir;
let ca: JwtCaMeshpilot;
let gatewayPort: number;
let backend: http.Server;
let backendPort: number;
let appHealthy = false;
/** Requests the backend has started on /slow. */
let slowStarted = 0;
const agents: AgentProcess[] = [];
const envoyPids = new Set<number>();

// Envoys are the agents' children: if a test process dies before an agent could stop its Envoy,
// none may outlive the run.
atExit(() => {
  for (const pid of envoyPids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
});

async function startBackend(): Promise<void> {
  backend = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://backend');
    if (url.pathname === '/slow') {
      slowStarted++;
      setTimeout(() => res.end('slow done'), Number(url.searchParams.get('ms') ?? '2000'));
    } else if (url.pathname === '/healthz') {
      res.writeHead(appHealthy ? 200 : 503).end();
    } else if (url.pathname === '/moved') {
      res.writeHead(302, { location: '/elsewhere' }).end();
    } else {
      res.end('hello from the backend');
    }
  });
  await new Promise<void>((r) => backend.listen(0, '127.0.0.1', () => r()));
  backendPort = (backend.address() as AddressInfo).port;
}

/** `meshpilot agent --mode envoy` for a gateway pod `<name>` with these labels; Envoy is the real one unless `envoyBinary` says otherwise. */
async function startAgent(name: string, labels: string, extra: { args?: string[]; env?: Record<string, string> } = {}): Promise<AgentProcess> {
  const base = path.join(dir.path, name);
  await mkdir(base, { recursive: true });
  await writeFile(path.join(base, 'token'), await ca.token(NS, name));
  const [admin, status, envoyStatus, prometheus] = (await freePorts(4)) as [number, number, number, number];
  const ports = { admin, status, envoyStatus, prometheus };
  const env: Record<string, string | undefined> = { ...process.env, MESHPILOT_PARENT_WATCHDOG: '1', ...extra.env };
  for (const k of Object.keys(env)) if (k === 'NODE_TEST_CONTEXT' || k.startsWith('GRPC_XDS') || k.startsWith('ISTIO_META') || k === 'PROXY_CONFIG') delete env[k];
  const args = [
    '--mode', 'envoy', '--proxyType', 'router', '--xdsAddr', ca.secureAddr, '--caRootCert', ca.rootFile, '--tokenFile', path.join(base, 'token'),
    '--envoyBootstrap', path.join(base, 'envoy-rev.json'), '--xdsSocket', path.join(base, 'XDS'), '--sdsSocket', path.join(base, 'SDS'),
    '--wasmCacheDir', path.join(base, 'wasm'), '--podName', `${name}-0`, '--namespace', NS, '--serviceAccount', name, '--podIp', '127.0.0.1',
    '--labels', labels, '--envoyBinary', ENVOY_BINARY, '--adminPort', String(admin), '--statusPort', String(status),
    '--envoyStatusPort', String(envoyStatus), '--envoyPrometheusPort', String(prometheus), '--concurrency', '1',
    '--terminationDrainDuration', '3s', '--drainDuration', '5s', '--envoyRestartInterval', '100ms', '--proxyLogLevel', 'warning',
    ...(extra.args ?? []),
  ];
  const child = spawn(process.execPath, ['--import', 'tsx', '--import', PARENT_WATCHDOG_URL, MESHPILOT_CLI, 'agent', ...args], {
    cwd: REPO_ROOT, env, stdio: ['pipe', 'pipe', 'pipe'],
  });
  trackChild(child);
  const lines: string[] = [];
  const pids: number[] = [];
  const onLine = (l: string): void => {
    lines.push(l);
    if (l.includes('"envoy started"')) {
      const pid = (JSON.parse(l) as { pid: number }).pid;
      pids.push(pid);
      envoyPids.add(pid);
    }
  };
  createInterface({ input: child.stderr! }).on('line', onLine);
  createInterface({ input: child.stdout! }).on('line', onLine);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const agent: AgentProcess = { child, ports, lines, exited, envoyPids: () => [...pids], tail: (n = 30) => `\n--- agent ${name} ---\n${lines.slice(-n).join('\n')}\n--- meshpilot ---\n${ca.mp.tail(15)}` };
  agents.push(agent);
  return agent;
}

async function stopAgent(a: AgentProcess): Promise<void> {
  if (a.child.exitCode === null && a.child.signalCode === null) a.child.kill('SIGTERM');
  const t = setTimeout(() => a.child.kill('SIGKILL'), 10_000);
  await a.exited;
  clearTimeout(t);
}

const readyOn = async (port: number): Promise<boolean> => (await get(port, '/healthz/ready').catch(() => ({ status: 0 }))).status === 200;

async function waitReady(a: AgentProcess, timeoutMs = 60_000): Promise<void> {
  await waitFor(async () => {
    if (a.child.exitCode !== null) throw new Error(`the agent exited with code ${a.child.exitCode}`);
    return readyOn(a.ports.status);
  }, { description: `agent /healthz/ready on ${a.ports.status}`, timeoutMs, intervalMs: 100 }).catch((e: Error) =>
    assert.fail(e.message + a.tail()),
  );
}

const adminGet = async (a: AgentProcess, p: string): Promise<string> => (await get(a.ports.admin, p)).body;

async function rejectedUpdates(a: AgentProcess): Promise<number> {
  const stats = JSON.parse(await adminGet(a, '/stats?format=json&filter=update_rejected$')) as { stats: { name?: string; value?: number }[] };
  return stats.stats.reduce((sum, s) => sum + (s.value ?? 0), 0);
}

describe('meshpilot agent running Envoy (envoy mode, real Envoy)', { skip }, () => {
  let gw: AgentProcess;

  before(async () => {
    dir = tempDir('meshpilot-agent-envoy-');
    await startBackend();
    [gatewayPort] = (await freePorts(1)) as [number];
    const configDir = path.join(dir.path, 'config');
    await writeYaml(configDir, 'mesh.yaml', [
      serviceEntry('slow', { host: BACKEND_HOST, namespace: NS, port: 8080, portName: 'http', protocol: 'HTTP', selector: { app: 'slow' } }),
      workloadEntry('slow-1', { namespace: NS, port: backendPort, portName: 'http', labels: { app: 'slow' } }),
      {
        apiVersion: 'networking.istio.io/v1', kind: 'Gateway', metadata: { name: 'gw', namespace: NS },
        spec: { selector: { istio: 'ingressgateway' }, servers: [{ port: { number: gatewayPort, name: 'http', protocol: 'HTTP' }, hosts: ['*'] }] },
      },
      {
        apiVersion: 'networking.istio.io/v1', kind: 'VirtualService', metadata: { name: 'gw-routes', namespace: NS },
        spec: { hosts: ['*'], gateways: ['gw'], http: [{ route: [{ destination: { host: BACKEND_HOST, port: { number: 8080 } } }] }] },
      },
    ]);
    ca = await startJwtCaMeshpilot(configDir, path.join(dir.path, 'ca'));
    const probers = {
      '/app-health/app/readyz': { httpGet: { path: '/healthz', port: backendPort } },
      '/app-health/app/startupz': { httpGet: { path: '/moved', port: backendPort }, timeoutSeconds: 2 },
      '/app-health/app/livez': { tcpSocket: { port: backendPort } },
      '/app-health/gone/livez': { tcpSocket: { port: (await freePorts(1))[0]! } },
    };
    gw = await startAgent('gw', 'istio=ingressgateway', { env: { ISTIO_KUBE_APP_PROBERS: JSON.stringify(probers) } });
  });

  after(async () => {
    await Promise.all(agents.map(stopAgent));
    await ca?.mp.stop();
    await new Promise((r) => backend?.close(r));
    await dir?.remove();
  });

  it("starts Envoy with pilot-agent's command line once the bootstrap is written, and 15020 /healthz/ready turns 200", async (t) => {
    const t0 = Date.now();
    await waitReady(gw);
    const readyMs = Date.now() - t0;
    const [pid] = gw.envoyPids();
    assert.ok(pid !== undefined, `an "envoy started" line${gw.tail()}`);
    const argv = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0').filter((a) => a !== '');
    assert.equal(argv[0], ENVOY_BINARY);
    const flag = (name: string): string | undefined => argv[argv.indexOf(name) + 1];
    assert.equal(flag('-c'), path.join(dir.path, 'gw', 'envoy-rev.json'));
    assert.deepEqual([flag('--drain-time-s'), flag('--drain-strategy'), flag('--local-address-ip-version'), flag('--file-flush-interval-msec')], ['5', 'immediate', 'v4', '1000']);
    assert.deepEqual([flag('-l'), flag('--component-log-level'), flag('--concurrency')], ['warning', 'misc:error', '1']);
    for (const f of ['--disable-hot-restart', '--allow-unknown-static-fields', '--log-format']) assert.ok(argv.includes(f), f);
    t.diagnostic(`agent start → 15020 ready: ${readyMs} ms`);
  });

  it('Envoy is connected: admin /ready LIVE, the Gateway listener from meshpilot in /config_dump, nothing rejected', async () => {
    assert.equal((await adminGet(gw, '/ready')).trim(), 'LIVE');
    const dump = JSON.parse(await adminGet(gw, '/config_dump?resource=dynamic_listeners')) as { configs: { name: string }[] };
    assert.ok(dump.configs.some((l) => l.name === `0.0.0.0_${gatewayPort}`), `dynamic listeners: ${dump.configs.map((l) => l.name).join(', ')}`);
    assert.equal(await rejectedUpdates(gw), 0);
    const through = await get(gatewayPort, '/');
    assert.deepEqual([through.status, through.body], [200, 'hello from the backend'], 'traffic flows through the gateway listener');
  });

  it("15021 /healthz/ready answers through Envoy's agent cluster", async () => {
    const r = await get(gw.ports.envoyStatus, '/healthz/ready');
    assert.equal(r.status, 200, r.body);
    assert.equal(r.headers['server'], 'envoy', 'answered by Envoy, which asked the agent');
  });

  it("15020 /stats/prometheus merges the agent's metrics with Envoy's", async () => {
    const r = await get(gw.ports.status, '/stats/prometheus');
    assert.equal(r.status, 200);
    const families = parsePromText(r.body);
    const names = [...families.keys()];
    assert.ok(names.some((n) => n.startsWith('envoy_')), 'Envoy metrics');
    assert.ok(families.has('envoy_server_live'), 'envoy_server_live');
    assert.ok(families.has('istio_agent_scrapes_total'), 'the agent scrape counter');
    assert.ok(names.some((n) => n.startsWith('istio_agent_process_')), 'the agent process metrics');
    assert.equal((await get(gw.ports.status, '/metrics')).status, 200, '/metrics is the same endpoint');
  });

  it('app probes rewritten by injection answer with the app status (HTTP, redirect → 200, TCP)', async () => {
    appHealthy = false;
    assert.equal((await get(gw.ports.status, '/app-health/app/readyz')).status, 503);
    appHealthy = true;
    assert.equal((await get(gw.ports.status, '/app-health/app/readyz')).status, 200);
    assert.equal((await get(gw.ports.status, '/app-health/app/startupz')).status, 200);
    assert.equal((await get(gw.ports.status, '/app-health/app/livez')).status, 200);
    assert.equal((await get(gw.ports.status, '/app-health/gone/livez')).status, 500, 'nothing listens there');
    assert.equal((await get(gw.ports.status, '/app-health/other/readyz')).status, 400);
  });

  it('kill -9 Envoy: the agent restarts it (new pid) and it is ready again', async (t) => {
    const [old] = gw.envoyPids();
    const t0 = Date.now();
    process.kill(old!, 'SIGKILL');
    await waitFor(() => gw.envoyPids().length === 2, { description: 'a restarted Envoy', timeoutMs: 10_000 }).catch((e: Error) => assert.fail(e.message + gw.tail()));
    const restartedMs = Date.now() - t0;
    assert.notEqual(gw.envoyPids()[1], old);
    // Not ready while nothing answers on the admin port, then ready again on the new Envoy.
    await waitReady(gw, 30_000);
    const readyMs = Date.now() - t0;
    assert.equal(await rejectedUpdates(gw), 0);
    assert.equal((await get(gatewayPort, '/')).status, 200);
    assert.equal((await get(gw.ports.envoyStatus, '/healthz/ready')).status, 200);
    assert.ok(gw.lines.some((l) => l.includes('envoy exited unexpectedly: restarting') && l.includes('SIGKILL')), gw.tail());
    const metrics = parsePromText((await get(gw.ports.status, '/stats/prometheus')).body);
    assert.equal(metrics.get('istio_agent_envoy_restarts_total')?.samples[0]?.value, 1);
    t.diagnostic(`kill -9 → new Envoy: ${restartedMs} ms; → ready again: ${readyMs} ms`);
  });

  it('SIGTERM drains: an in-flight request through Envoy completes, then the agent exits 0 after the termination drain', async (t) => {
    const before = slowStarted;
    const t0 = Date.now();
    const inFlight = get(gatewayPort, '/slow?ms=2000');
    await waitFor(() => slowStarted > before, { description: 'the slow request at the backend', timeoutMs: 5000 });
    const envoyPid = gw.envoyPids().at(-1)!;
    const sigterm = Date.now();
    gw.child.kill('SIGTERM');
    await waitFor(() => gw.lines.some((l) => l.includes('graceful termination period started')), { description: 'the drain', timeoutMs: 5000 });
    // Draining (--drain-strategy immediate): Envoy still serves, and tells HTTP/1.1 clients to go away.
    const during = await get(gatewayPort, '/');
    assert.deepEqual([during.status, during.headers.connection], [200, 'close'], JSON.stringify(during.headers));
    const answer = await inFlight;
    const answeredMs = Date.now() - t0;
    assert.deepEqual([answer.status, answer.body], [200, 'slow done'], 'the in-flight request completed');
    // Envoy still runs until the termination drain is over.
    assert.doesNotThrow(() => process.kill(envoyPid, 0), 'Envoy is still up during the drain');
    const exit = await gw.exited;
    const exitMs = Date.now() - sigterm;
    assert.deepEqual(exit, { code: 0, signal: null }, gw.tail());
    assert.ok(exitMs >= 3000 && exitMs < 8000, `exited ${exitMs} ms after SIGTERM (terminationDrainDuration 3s)`);
    assert.throws(() => process.kill(envoyPid, 0), /ESRCH/, 'Envoy is gone');
    const drain = gw.lines.find((l) => l.includes('graceful termination period started'));
    assert.match(drain ?? '', /"inboundOnly":false/, 'a gateway drains every listener');
    t.diagnostic(`in-flight 2 s request answered ${answeredMs} ms after it started; agent exit ${exitMs} ms after SIGTERM`);
  });

  it('POST /quitquitquit (localhost) shuts the agent down as SIGTERM does', async () => {
    // Labels no Gateway selects: an Envoy with no listeners from meshpilot, so nothing to collide with.
    const q = await startAgent('quitter', 'app=quitter', { args: ['--terminationDrainDuration', '1s'] });
    await waitReady(q);
    assert.equal((await get(q.ports.status, '/quitquitquit')).status, 405, 'GET is refused');
    const t0 = Date.now();
    assert.equal((await get(q.ports.status, '/quitquitquit', 'POST')).status, 200);
    assert.deepEqual(await q.exited, { code: 0, signal: null }, q.tail());
    assert.ok(Date.now() - t0 >= 1000, 'after the drain');
    assert.ok(q.lines.some((l) => l.includes('"reason":"quitquitquit"')), q.tail());
  });

  it('an Envoy that keeps dying: restarts with doubling backoff, then the agent exits 1 saying why', async () => {
    const doomed = await startAgent('doomed', 'app=doomed', { args: ['--envoyBinary', '/bin/false', '--envoyMaxRestarts', '2'] });
    const exit = await doomed.exited;
    assert.deepEqual(exit, { code: 1, signal: null }, doomed.tail());
    assert.ok(doomed.lines.some((l) => l.includes('meshpilot agent: Envoy (pid') && l.includes('exited with code 1; gave up after 2 restarts')), doomed.tail());
    const delays = doomed.lines.filter((l) => l.includes('envoy exited unexpectedly: restarting')).map((l) => (JSON.parse(l) as { delayMs: number }).delayMs);
    assert.deepEqual(delays, [100, 200]);
  });
});
