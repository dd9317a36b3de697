import assert from 'node:assert/strict';
import http from 'node:http';
import { createServer as createTcpServer, type AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Server, ServerCredentials, type ServiceDefinition } from '@grpc/grpc-js';
import { silentLogger } from '../util/log.js';
import { parseAppProbers } from './app-probers.js';
import { envoyAdmin, parseStatLines } from './envoy-admin.js';
import { AgentMetrics, parseAppMetrics, startStatusServer, type StatusServer } from './status-server.js';

async function listen(server: http.Server): Promise<number> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return (server.address() as AddressInfo).port;
}

async function call(port: number, path: string, method = 'GET'): Promise<{ status: number; body: string }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { method });
  return { status: res.status, body: await res.text() };
}

/** A gRPC health service answering SERVING for "" and NOT_SERVING for anything else. */
async function startGrpcHealth(): Promise<{ port: number; server: Server }> {
  const server = new Server();
  const identity = (b: Buffer): Buffer => b;
  const definition: ServiceDefinition = {
    Check: {
      path: '/grpc.health.v1.Health/Check',
      requestStream: false,
      responseStream: false,
      requestSerialize: identity,
      requestDeserialize: identity,
      responseSerialize: identity,
      responseDeserialize: identity,
      originalName: 'Check',
    },
  };
  server.addService(definition, {
    Check: (c: { request: Buffer }, cb: (err: null, res: Buffer) => void) => cb(null, Buffer.from([0x08, c.request.length === 0 ? 1 : 2])),
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return { port, server };
}

describe('status server', () => {
  let app: http.Server;
  let envoyStats: http.Server;
  let grpcHealth: { port: number; server: Server };
  let status: StatusServer;
  let reason: string | undefined = 'no workload certificate yet';
  let quits = 0;
  let envoyUp = true;
  let closedPort: number;
  const metrics = new AgentMetrics();

  before(async () => {
    app = http.createServer((req, res) => {
      if (req.url === '/ok') res.writeHead(204).end();
      else if (req.url === '/moved') res.writeHead(301, { location: '/x' }).end();
      else if (req.url === '/header') res.writeHead(req.headers['x-probe'] === 'yes' ? 200 : 412).end();
      else if (req.url === '/app-metrics') res.end('# TYPE app_requests_total counter\napp_requests_total 5\n');
      else res.writeHead(500).end();
    });
    const appPort = await listen(app);
    envoyStats = http.createServer((_req, res) =>
      envoyUp ? res.end('# TYPE envoy_server_live gauge\nenvoy_server_live{} 1\n') : res.writeHead(503).end(),
    );
    const envoyPort = await listen(envoyStats);
    grpcHealth = await startGrpcHealth();
    const tcp = createTcpServer();
    await new Promise<void>((r) => tcp.listen(0, '127.0.0.1', () => r()));
    closedPort = (tcp.address() as AddressInfo).port;
    await new Promise((r) => tcp.close(r));
    const probers = parseAppProbers(
      JSON.stringify({
        '/app-health/web/readyz': { httpGet: { path: 'ok', port: appPort } },
        '/app-health/web/startupz': { httpGet: { path: '/moved', port: appPort } },
        '/app-health/web/livez': { httpGet: { path: '/header', port: appPort, httpHeaders: [{ name: 'X-Probe', value: 'yes' }] } },
        '/app-health/tcp/livez': { tcpSocket: { port: appPort } },
        '/app-health/closed/livez': { tcpSocket: { port: closedPort } },
        '/app-health/grpc/livez': { grpc: { port: grpcHealth.port } },
        '/app-health/grpc/readyz': { grpc: { port: grpcHealth.port, service: 'other' } },
      }),
    );
    status = await startStatusServer({
      port: 0,
      host: '127.0.0.1',
      notReadyReason: () => Promise.resolve(reason),
      envoyStatsUrl: `http://127.0.0.1:${envoyPort}/stats/prometheus`,
      metrics,
      probers,
      appMetrics: parseAppMetrics(JSON.stringify({ scrape: 'true', port: String(appPort), path: '/app-metrics' }), 15020),
      probeDestination: '127.0.0.1',
      onQuit: () => quits++,
      log: silentLogger,
    });
  });

  after(async () => {
    await status.close();
    await new Promise((r) => app.close(r));
    await new Promise((r) => envoyStats.close(r));
    grpcHealth.server.forceShutdown();
  });

  it('/healthz/ready: 503 with the reason until ready, then 200', async () => {
    assert.deepEqual(await call(status.port, '/healthz/ready'), { status: 503, body: 'no workload certificate yet' });
    reason = undefined;
    assert.equal((await call(status.port, '/healthz/ready')).status, 200);
  });

  it("/stats/prometheus: the agent's metrics then Envoy's; Envoy down still serves the agent's and counts the failure", async () => {
    const merged = await call(status.port, '/stats/prometheus');
    assert.equal(merged.status, 200);
    assert.match(merged.body, /^istio_agent_scrapes_total \d+$/m);
    assert.match(merged.body, /^envoy_server_live\{\} 1$/m);
    assert.ok(merged.body.indexOf('istio_agent_') < merged.body.indexOf('envoy_server_live'));
    assert.ok(merged.body.indexOf('envoy_server_live') < merged.body.indexOf('app_requests_total 5'), "the app's metrics last");
    envoyUp = false;
    const alone = await call(status.port, '/metrics');
    assert.equal(alone.status, 200);
    assert.doesNotMatch(alone.body, /envoy_server_live/);
    assert.match(alone.body, /^istio_agent_envoy_scrape_failures_total 1$/m);
    envoyUp = true;
  });

  it('/quitquitquit: POST only', async () => {
    assert.equal((await call(status.port, '/quitquitquit')).status, 405);
    assert.equal(quits, 0);
    assert.deepEqual(await call(status.port, '/quitquitquit', 'POST'), { status: 200, body: 'OK' });
    assert.equal(quits, 1);
  });

  it('/app-health: HTTP status passed on, redirects 200, probe headers sent, TCP and gRPC health', async () => {
    const statusOf = async (p: string): Promise<number> => (await call(status.port, p)).status;
    assert.equal(await statusOf('/app-health/web/readyz'), 204);
    assert.equal(await statusOf('/app-health/web/startupz'), 200);
    assert.equal(await statusOf('/app-health/web/livez'), 200);
    assert.equal(await statusOf('/app-health/tcp/livez'), 200);
    assert.equal(await statusOf('/app-health/closed/livez'), 500);
    assert.equal(await statusOf('/app-health/grpc/livez'), 200, 'SERVING');
    assert.equal(await statusOf('/app-health/grpc/readyz'), 500, 'NOT_SERVING');
    assert.deepEqual(await call(status.port, '/app-health/nope/readyz'), {
      status: 400,
      body: 'app prober config does not exist for /app-health/nope/readyz',
    });
  });
});

describe('parseAppMetrics (ISTIO_PROMETHEUS_ANNOTATIONS)', () => {
  it("reads injection's merge config with pilot-agent's defaults", () => {
    assert.deepEqual(parseAppMetrics('', 15020), []);
    assert.deepEqual(parseAppMetrics('{"scrape":"false","port":"9090"}', 15020), []);
    assert.deepEqual(parseAppMetrics('{"scrape":"","path":"","port":""}', 15020), [{ port: '80', path: '/metrics' }]);
    assert.deepEqual(
      parseAppMetrics(
        '{"scrape":"true","path":"/m","port":"9090","targets":[{"port":"9090","path":"/m"},{"port":"9091","path":"/n"}]}',
        15020,
      ),
      [
        { port: '9090', path: '/m' },
        { port: '9091', path: '/n' },
      ],
    );
    assert.throws(() => parseAppMetrics('{"port":"15020"}', 15020), /application port 15020 is the agent's status port/);
    assert.throws(() => parseAppMetrics('nope', 15020), /ISTIO_PROMETHEUS_ANNOTATIONS: not JSON/);
  });
});

describe('parseAppProbers', () => {
  it('rejects what pilot-agent rejects, naming the path', () => {
    assert.equal(parseAppProbers('').size, 0);
    assert.throws(() => parseAppProbers('{'), /ISTIO_KUBE_APP_PROBERS: not JSON/);
    assert.throws(() => parseAppProbers('{"/health":{"tcpSocket":{"port":1}}}'), /ISTIO_KUBE_APP_PROBERS \/health: the path must match/);
    assert.throws(() => parseAppProbers('{"/app-health/a/livez":{}}'), /needs exactly one of httpGet, tcpSocket, grpc/);
    assert.throws(() => parseAppProbers('{"/app-health/a/livez":{"httpGet":{"port":"http"}}}'), /the port must be a number.*"http"/);
  });
});

describe('Envoy admin client', () => {
  let admin: http.Server;
  let port: number;
  const seen: string[] = [];
  let stats = '';

  before(async () => {
    admin = http.createServer((req, res) => {
      seen.push(`${req.method} ${req.url}`);
      res.end(req.url?.startsWith('/stats') ? stats : 'OK\n');
    });
    port = await listen(admin);
  });
  after(() => new Promise((r) => admin.close(r)));

  it('drains inbound listeners only for sidecars, every listener for gateways', async () => {
    await envoyAdmin(port).drainListeners(true);
    await envoyAdmin(port).drainListeners(false);
    assert.deepEqual(seen.splice(0), ['POST /drain_listeners?inboundonly&graceful', 'POST /drain_listeners?graceful']);
  });

  it('readiness: first CDS and LDS, then LIVE with workers started; remembered once reached', async () => {
    const a = envoyAdmin(port);
    stats = 'cluster_manager.cds.update_success: 1\nlistener_manager.lds.update_rejected: 2\n';
    assert.match(
      String(await a.notReadyReason()),
      /config not received.*cds updates 1 successful, 0 rejected; lds updates 0 successful, 2 rejected/,
    );
    stats =
      'cluster_manager.cds.update_success: 1\nlistener_manager.lds.update_success: 1\nserver.state: 3\nlistener_manager.workers_started: 0\n';
    assert.equal(await a.notReadyReason(), 'Envoy is not live: server.state is INITIALIZING');
    stats = 'server.state: 0\nlistener_manager.workers_started: 0\n';
    assert.equal(await a.notReadyReason(), 'Envoy workers have not started');
    stats = 'server.state: 0\nlistener_manager.workers_started: 1\n';
    assert.equal(await a.notReadyReason(), undefined);
    stats = '';
    seen.length = 0;
    assert.equal(await a.notReadyReason(), undefined);
    assert.deepEqual(seen, [], 'no more admin calls once ready');
  });

  it('parseStatLines: absent stats are 0', () => {
    assert.deepEqual(parseStatLines('a.b: 3\nnoise\nc: x\n', ['a.b', 'c', 'd']), { 'a.b': 3, c: 0, d: 0 });
  });

  it('an unreachable admin port is an error naming it', async () => {
    await assert.rejects(envoyAdmin(1).get('ready', 1000), /Envoy admin GET \/ready on 127.0.0.1:1/);
  });
});
