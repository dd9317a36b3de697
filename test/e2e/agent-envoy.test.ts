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
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  envoyAdmin,
  httpGet,
  rejectedUpdates,
  startEnvoyAgent,
  stopEnvoyAgent,
  waitAgentReady,
  type Answer,
  type EnvoyAgent,
} from '../support/envoy-agent.js';
import { ENVOY_BINARY, envoySkipReason } from '../support/envoy.js';
import { startJwtCaMeshpilot, type JwtCaMeshpilot } from '../support/jwt-ca-meshpilot.js';
import { serviceEntry, workloadEntry } from '../support/mesh-fixtures.js';
import { freePorts } from '../support/ports.js';
import { parsePromText } from '../support/prom-text.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import { writeYaml } from '../support/yaml-files.js';

const skip = envoySkipReason();
const NS = 'foo';
const BACKEND_HOST = `slow.${NS}.svc.cluster.local`;

let dir: TempDir;
let ca: JwtCaMeshpilot;
let gatewayPort: number;
let backend: http.Server;
let backendPort: number;
let appHealthy = false;
/** Requests the backend has started on /slow. */
let slowStarted = 0;
const agents: EnvoyAgent[] = [];

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

/** A gateway pod `<name>`'s agent with these labels; Envoy is the real one unless `args` says otherwise. */
async function startAgent(
  name: string,
  labels: string,
  extra: { args?: string[]; env?: Record<string, string> } = {},
): Promise<EnvoyAgent> {
  const agent = await startEnvoyAgent(ca, { name, namespace: NS, labels, dir: dir.path, ...extra });
  agents.push(agent);
  return agent;
}

const get = (port: number, p: string, method = 'GET'): Promise<Answer> => httpGet(port, p, { method });
const adminGet = envoyAdmin;
const waitReady = waitAgentReady;
const stopAgent = stopEnvoyAgent;

describe('meshpilot agent running Envoy (envoy mode, real Envoy)', { skip }, () => {
  let gw: EnvoyAgent;

  before(async () => {
    dir = tempDir('meshpilot-agent-envoy-');
    await startBackend();
    [gatewayPort] = (await freePorts(1)) as [number];
    const configDir = path.join(dir.path, 'config');
    await writeYaml(configDir, 'mesh.yaml', [
      serviceEntry('slow', {
        host: BACKEND_HOST,
        namespace: NS,
        port: 8080,
        portName: 'http',
        protocol: 'HTTP',
        selector: { app: 'slow' },
      }),
      workloadEntry('slow-1', { namespace: NS, port: backendPort, portName: 'http', labels: { app: 'slow' } }),
      {
        apiVersion: 'networking.istio.io/v1',
        kind: 'Gateway',
        metadata: { name: 'gw', namespace: NS },
        spec: {
          selector: { istio: 'ingressgateway' },
          servers: [{ port: { number: gatewayPort, name: 'http', protocol: 'HTTP' }, hosts: ['*'] }],
        },
      },
      {
        apiVersion: 'networking.istio.io/v1',
        kind: 'VirtualService',
        metadata: { name: 'gw-routes', namespace: NS },
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
    assert.deepEqual(
      [flag('--drain-time-s'), flag('--drain-strategy'), flag('--local-address-ip-version'), flag('--file-flush-interval-msec')],
      ['5', 'immediate', 'v4', '1000'],
    );
    assert.deepEqual([flag('-l'), flag('--component-log-level'), flag('--concurrency')], ['warning', 'misc:error', '1']);
    for (const f of ['--disable-hot-restart', '--allow-unknown-static-fields', '--log-format']) assert.ok(argv.includes(f), f);
    t.diagnostic(`agent start → 15020 ready: ${readyMs} ms`);
  });

  it('Envoy is connected: admin /ready LIVE, the Gateway listener from meshpilot in /config_dump, nothing rejected', async () => {
    assert.equal((await adminGet(gw, '/ready')).trim(), 'LIVE');
    const dump = JSON.parse(await adminGet(gw, '/config_dump?resource=dynamic_listeners')) as { configs: { name: string }[] };
    assert.ok(
      dump.configs.some((l) => l.name === `0.0.0.0_${gatewayPort}`),
      `dynamic listeners: ${dump.configs.map((l) => l.name).join(', ')}`,
    );
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
    assert.ok(
      names.some((n) => n.startsWith('envoy_')),
      'Envoy metrics',
    );
    assert.ok(families.has('envoy_server_live'), 'envoy_server_live');
    assert.ok(families.has('istio_agent_scrapes_total'), 'the agent scrape counter');
    assert.ok(
      names.some((n) => n.startsWith('istio_agent_process_')),
      'the agent process metrics',
    );
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
    await waitFor(() => gw.envoyPids().length === 2, { description: 'a restarted Envoy', timeoutMs: 10_000 }).catch((e: Error) =>
      assert.fail(e.message + gw.tail()),
    );
    const restartedMs = Date.now() - t0;
    assert.notEqual(gw.envoyPids()[1], old);
    // Not ready while nothing answers on the admin port, then ready again on the new Envoy.
    await waitReady(gw, 30_000);
    const readyMs = Date.now() - t0;
    assert.equal(await rejectedUpdates(gw), 0);
    assert.equal((await get(gatewayPort, '/')).status, 200);
    assert.equal((await get(gw.ports.envoyStatus, '/healthz/ready')).status, 200);
    assert.ok(
      gw.lines.some((l) => l.includes('envoy exited unexpectedly: restarting') && l.includes('SIGKILL')),
      gw.tail(),
    );
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
    await waitFor(() => gw.lines.some((l) => l.includes('graceful termination period started')), {
      description: 'the drain',
      timeoutMs: 5000,
    });
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
    assert.ok(
      q.lines.some((l) => l.includes('"reason":"quitquitquit"')),
      q.tail(),
    );
  });

  it('an Envoy that keeps dying: restarts with doubling backoff, then the agent exits 1 saying why', async () => {
    const doomed = await startAgent('doomed', 'app=doomed', { args: ['--envoyBinary', '/bin/false', '--envoyMaxRestarts', '2'] });
    const exit = await doomed.exited;
    assert.deepEqual(exit, { code: 1, signal: null }, doomed.tail());
    assert.ok(
      doomed.lines.some((l) => l.includes('meshpilot agent: Envoy (pid') && l.includes('exited with code 1; gave up after 2 restarts')),
      doomed.tail(),
    );
    const delays = doomed.lines
      .filter((l) => l.includes('envoy exited unexpectedly: restarting'))
      .map((l) => (JSON.parse(l) as { delayMs: number }).delayMs);
    assert.deepEqual(delays, [100, 200]);
  });
});
