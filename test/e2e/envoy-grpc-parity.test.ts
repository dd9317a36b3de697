/**
 * One directory of Istio YAML (VirtualService, DestinationRule,
 * AuthorizationPolicy) must mean the same thing to a proxyless gRPC client and to an Envoy sidecar.
 * Proxyless side: real grpc-js-xds RPCs through a running meshpilot to real backends. Envoy side:
 * the traffic simulator over the sidecar config generated from the same directory (Envoy itself
 * cannot run here). Where the simulator does not model a feature (retries, ring hash picks,
 * outlier ejection) the two sides' xDS config is compared and the gRPC side's behaviour shown.
 *
 * RBAC is compared on both sides: the simulator on the sidecar's inbound listener, real calls to a
 * grpc-js-xds XdsServer on its `xds.istio.io/grpc/lds/inbound/…` listener. gRPC ignores
 * consecutive_5xx (A50), so Istio's usual outlier settings eject nothing on proxyless clients;
 * the config still matches.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { equals } from '@bufbuild/protobuf';
import { OutlierDetectionSchema } from '../../src/gen/envoy/config/cluster/v3/outlier_detection_pb.js';
import { Cluster_LbPolicy, type Cluster } from '../../src/gen/envoy/config/cluster/v3/cluster_pb.js';
import { registerEnvoyGenerators } from '../../src/networking/envoy-generators.js';
import { configCredentials } from '../../src/networking/gateway/config-credentials.js';
import { registerGrpcGenerators } from '../../src/networking/grpc/grpc-generators.js';
import { pushRequest } from '../../src/model/push-request.js';
import { formatResult, simulate, type SimRequest, type SimResult } from '../../src/simulation/index.js';
import { silentLogger } from '../../src/util/log.js';
import { GeneratorRegistry } from '../../src/xds/generator.js';
import { TypeUrl } from '../../src/xds/type-urls.js';
import { startMeshpilot, type Meshpilot } from '../support/meshpilot-process.js';
import {
  CANARY_PATH,
  HOST,
  OUTLIER,
  PORT,
  VIP,
  callPath,
  closeParityClients,
  parityConfig,
  proxylessConfig,
  startParityBackend,
  subsetOf,
  summarizeRoutes,
  type ParityBackend,
  type ProxylessConfig,
  type RouteSummary,
} from '../support/parity-fixtures.js';
import { generateFor, loadScenario, proxyFor, type GeneratedConfig } from '../support/scenario.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { closeXdsChannels, failures, proxylessNode, share, useXdsBootstrap, waitForTally, type Tally } from '../support/xds-client.js';
import { writeYaml } from '../support/yaml-files.js';

const TARGET = `xds:///${HOST}:${PORT}`;
const WHOAMI = '/echo.Echo/Whoami';
const VHOST = `${HOST}:${PORT}`;
const CLIENT = proxylessNode('parity-client');
/** gRPC's HTTP → status mapping (grpc/doc/http-grpc-status-mapping.md), for HTTP fault aborts. */
const HTTP_TO_GRPC: Readonly<Record<number, number>> = { 400: 13, 401: 16, 403: 7, 404: 12, 429: 14, 502: 14, 503: 14, 504: 14 };

let dir: TempDir | undefined;
let mp: Meshpilot | undefined;
let backends: ParityBackend[] = [];
/** The client sidecar's config (outbound), the echo-v1 sidecar's (inbound), and the proxyless client's. */
let sidecar: GeneratedConfig;
let server: GeneratedConfig;
let proxyless: ProxylessConfig;

const byName = (name: string): ParityBackend => {
  const b = backends.find((x) => x.name === name);
  if (!b) throw new Error(`no backend ${name}`);
  return b;
};
/** The backend behind a simulated `127.0.0.1:port` endpoint. */
const backendAt = (endpoint: string | undefined): string | undefined => backends.find((b) => endpoint === `127.0.0.1:${b.port}`)?.name;
const withLogs = (msg: string): string => `${msg}\n--- meshpilot stderr tail ---\n${mp?.tail(20) ?? '(not running)'}`;

/** What the client's Envoy sidecar does with the request the gRPC client makes (app → VIP:8080, h2c). */
function envoy(headers: Record<string, string> = {}, path = WHOAMI): SimResult {
  const req: SimRequest = { address: VIP, port: PORT, protocol: 'http2', authority: `${HOST}:${PORT}`, path, headers };
  return simulate(sidecar, req);
}

const only = (t: Tally): string | undefined =>
  Object.keys(t.counts).length === 1 && failures(t) === 0 ? Object.keys(t.counts)[0] : undefined;
const envoyCluster = (name: string): Cluster | undefined => sidecar.clusters.find((c) => c.name === name);
const grpcCluster = (name: string): Cluster | undefined => proxyless.clusters.find((c) => c.name === name);

describe('Envoy sidecar ⇄ proxyless gRPC parity (same YAML)', () => {
  before(async () => {
    // The ring has backends of its own: grpc-js 1.14's ring_hash strands the first call picked onto
    // an IDLE leaf whose subchannel another cluster already connected (startConnecting turns it
    // READY inside pick(), the picker update lands before the QUEUE result, the call waits forever).
    backends = await Promise.all([
      ...['v1', 'v2', 'v3'].map((n) => startParityBackend(n)),
      startParityBackend('flaky', 'flaky'),
      ...['r1', 'r2', 'r3'].map((n) => startParityBackend(n, 'ring')),
    ]);
    dir = tempDir('meshpilot-parity-');
    for (const [file, docs] of parityConfig(backends)) await writeYaml(dir.path, file, docs);

    const { push } = await loadScenario(dir.path);
    const generators = registerEnvoyGenerators(registerGrpcGenerators(new GeneratorRegistry()), {
      logger: silentLogger,
      credentials: (p) => configCredentials(p.config, silentLogger),
    });
    sidecar = generateFor(
      push,
      generators,
      proxyFor({ id: 'sidecar~10.1.0.99~client-1.default~default.svc.cluster.local', labels: { app: 'client' } }),
    );
    server = generateFor(
      push,
      generators,
      proxyFor({ id: 'sidecar~127.0.0.1~echo-v1.default~default.svc.cluster.local', labels: { app: 'echo', version: 'v1' } }),
    );
    proxyless = proxylessConfig(
      push,
      generators,
      proxyFor({ id: CLIENT.id, metadata: { GENERATOR: 'grpc', NAMESPACE: 'default' } }),
      `${HOST}:${PORT}`,
    );

    mp = await startMeshpilot({ configDir: dir.path });
    useXdsBootstrap(mp.grpcAddr, CLIENT);
    await waitForTally(TARGET, 10, (t) => failures(t) === 0, { timeoutMs: 20_000, description: 'first successful RPCs' });
  });

  after(async () => {
    closeXdsChannels();
    closeParityClients();
    const crashed = mp !== undefined && !mp.alive();
    const tail = mp?.tail(30);
    await mp?.stop();
    await Promise.all(backends.map((b) => b.stop()));
    await dir?.remove();
    if (crashed) assert.fail(`meshpilot exited during the tests\n${tail}`);
  });

  it('both clients get the same route table: order, matches, destinations, retries, hash and fault config', () => {
    const envoyRoutes = summarizeRoutes(
      sidecar.routes.find((r) => r.name === String(PORT))!,
      VHOST,
    );
    const grpcRoutes = summarizeRoutes(proxyless.route, VHOST);
    assert.ok(envoyRoutes.length >= 8, `sidecar routes: ${JSON.stringify(envoyRoutes)}`);
    assert.deepEqual(grpcRoutes, envoyRoutes);
  });

  it('header match: x-version: v3 goes to subset v3 on both sides', async () => {
    const sim = envoy({ 'x-version': 'v3' });
    assert.equal(sim.route, 'by-header', formatResult(sim));
    assert.equal(subsetOf(sim.cluster), 'v3', formatResult(sim));
    const real = await callPath(TARGET, WHOAMI, 100, { metadata: { 'x-version': 'v3' } });
    assert.equal(only(real), 'v3', withLogs(`grpc: ${JSON.stringify(real)}`));
    assert.equal(backendAt(sim.endpoint), only(real), `simulated endpoint ${sim.endpoint} is not the backend that answered`);
  });

  it('path match: the /echo.Canary/Whoami method goes to subset v2 on both sides', async () => {
    const sim = envoy({}, CANARY_PATH);
    assert.equal(sim.route, 'by-path', formatResult(sim));
    const real = await callPath(TARGET, CANARY_PATH, 100);
    assert.equal(only(real), subsetOf(sim.cluster), withLogs(`envoy: ${formatResult(sim)}\ngrpc: ${JSON.stringify(real)}`));
    assert.equal(backendAt(sim.endpoint), only(real));
    // The other method on the same channel is not caught by the path route.
    assert.notEqual(envoy().route, 'by-path');
  });

  it('weighted split: 1000 gRPC calls land within ±6 points of the weights the sidecar routes by', async (tc) => {
    const sim = envoy();
    assert.equal(sim.route, 'split', formatResult(sim));
    const weights = new Map((sim.weights ?? []).map((w) => [subsetOf(w.cluster)!, w.weight]));
    assert.equal(weights.size, 2, formatResult(sim));
    const total = [...weights.values()].reduce((a, b) => a + b, 0);
    const real = await callPath(TARGET, WHOAMI, 1000);
    tc.diagnostic(`envoy weights ${JSON.stringify(Object.fromEntries(weights))}; grpc counts ${JSON.stringify(real.counts)}`);
    assert.equal(failures(real), 0, withLogs(JSON.stringify(real.errorDetails)));
    assert.deepEqual(Object.keys(real.counts).sort(), [...weights.keys()].sort(), 'traffic reached a backend outside the split');
    for (const [subset, w] of weights) {
      const want = (100 * w) / total;
      assert.ok(Math.abs(share(real, subset) - want) <= 6, `${subset}: grpc ${share(real, subset).toFixed(1)}%, envoy weight ${want}%`);
    }
  });

  it('fault abort: the same status on both sides and no backend is reached', async () => {
    const hitsBefore = backends.map((b) => b.hits());
    const grpcSim = envoy({ 'x-fault': 'grpc' });
    assert.equal(grpcSim.faultAbort?.percent, 100, formatResult(grpcSim));
    const simCode = Number(/grpc-status (\d+)/.exec(grpcSim.error ?? '')?.[1]);
    const grpcReal = await callPath(TARGET, WHOAMI, 20, { metadata: { 'x-fault': 'grpc' } });
    assert.deepEqual(grpcReal.errors, { [simCode]: 20 }, withLogs(`envoy: ${formatResult(grpcSim)}\ngrpc: ${JSON.stringify(grpcReal)}`));

    const httpSim = envoy({ 'x-fault': 'http' });
    assert.equal(httpSim.faultAbort?.percent, 100, formatResult(httpSim));
    const httpReal = await callPath(TARGET, WHOAMI, 20, { metadata: { 'x-fault': 'http' } });
    const mapped = HTTP_TO_GRPC[httpSim.status ?? 0];
    assert.ok(mapped !== undefined, formatResult(httpSim));
    assert.deepEqual(httpReal.errors, { [mapped]: 20 }, withLogs(`envoy HTTP ${httpSim.status}: grpc ${JSON.stringify(httpReal)}`));
    assert.ok(
      [...grpcReal.errorDetails, ...httpReal.errorDetails].every((d) => d.includes('Fault injected')),
      'not the fault filter',
    );
    assert.deepEqual(
      backends.map((b) => b.hits()),
      hitsBefore,
      'an aborted call reached a backend',
    );
  });

  it('consistentHash: both clusters are RING_HASH, both routes hash on x-user, and each user sticks to one backend', async (tc) => {
    const sim = envoy({ 'x-sticky': 'yes', 'x-user': 'u0' });
    assert.equal(sim.route, 'sticky', formatResult(sim));
    const name = sim.cluster!;
    assert.equal(envoyCluster(name)?.lbPolicy, Cluster_LbPolicy.RING_HASH, `envoy ${name}`);
    assert.equal(grpcCluster(name)?.lbPolicy, Cluster_LbPolicy.RING_HASH, `proxyless ${name}`);
    assert.deepEqual(grpcCluster(name)?.lbConfig, envoyCluster(name)?.lbConfig, 'ring size differs');
    const sticky = summarizeRoutes(proxyless.route, VHOST).find((r) => r.name === 'sticky');
    assert.deepEqual(sticky?.hash, ['header:x-user']);
    // The simulator does not hash; it still says which endpoints the ring is built from.
    const ring = new Set(
      sidecar.endpoints
        .find((e) => e.clusterName === name)
        ?.endpoints.flatMap((l) =>
          l.lbEndpoints.map((e) => {
            const a = e.hostIdentifier.case === 'endpoint' ? e.hostIdentifier.value.address?.address : undefined;
            return backendAt(a?.case === 'socketAddress' ? `${a.value.address}:${a.value.portSpecifier.value}` : undefined);
          }),
        ) ?? [],
    );
    assert.deepEqual(
      [...ring].sort(),
      backends
        .filter((b) => b.role === 'ring')
        .map((b) => b.name)
        .sort(),
    );

    const chosen = new Map<string, string>();
    for (let u = 0; u < 20; u++) {
      const t = await callPath(TARGET, WHOAMI, 50, { metadata: { 'x-sticky': 'yes', 'x-user': `user-${u}` }, concurrency: 10 });
      const b = only(t);
      assert.ok(b !== undefined && ring.has(b), withLogs(`user-${u} was not sticky or left the ring: ${JSON.stringify(t)}`));
      chosen.set(`user-${u}`, b);
    }
    tc.diagnostic(
      `users per backend: ${JSON.stringify([...chosen.values()].reduce<Record<string, number>>((m, b) => ({ ...m, [b]: (m[b] ?? 0) + 1 }), {}))}`,
    );
    // Hashing, not a fixed pick: 20 users over 3 backends all on one has probability 3^-19.
    assert.ok(new Set(chosen.values()).size >= 2, `every user hashed to one backend: ${JSON.stringify([...chosen])}`);
  });

  it('retries: same policy on both routes; grpc-js retries a failing backend only where the YAML says so', async () => {
    const sim = envoy({ 'x-route': 'flaky' });
    assert.equal(sim.route, 'retry', formatResult(sim));
    assert.equal(backendAt(sim.endpoint), 'flaky', formatResult(sim));
    const routes = (rs: RouteSummary[]): unknown =>
      rs.filter((r) => r.name === 'retry' || r.name === 'no-retry').map((r) => [r.name, r.retry]);
    const envoyRetry = routes(
      summarizeRoutes(
        sidecar.routes.find((r) => r.name === String(PORT))!,
        VHOST,
      ),
    );
    assert.deepEqual(envoyRetry, [
      ['retry', 'unavailable x3'],
      ['no-retry', undefined],
    ]);
    assert.deepEqual(routes(summarizeRoutes(proxyless.route, VHOST)), envoyRetry);

    // The flaky backend fails every odd hit. Sequential calls: with retries each call succeeds.
    const flaky = byName('flaky');
    const start = flaky.hits();
    const retried = await callPath(TARGET, WHOAMI, 20, { metadata: { 'x-route': 'flaky' }, concurrency: 1 });
    assert.deepEqual(retried.counts, { flaky: 20 }, withLogs(`with retries: ${JSON.stringify(retried)}`));
    assert.equal(flaky.hits() - start, 40 - (start % 2), 'each failed attempt should be retried exactly once');
    // `attempts: 0` disables retries: single attempts alternate between failure and success.
    const single = await callPath(TARGET, WHOAMI, 20, { metadata: { 'x-route': 'flaky-no-retry' }, concurrency: 1 });
    assert.deepEqual({ ok: single.counts.flaky, errors: single.errors }, { ok: 10, errors: { 14: 10 } }, JSON.stringify(single));
  });

  it('outlier detection: the Envoy and proxyless clusters carry the same ejection settings as the YAML', () => {
    for (const c of proxyless.clusters) {
      const e = envoyCluster(c.name)?.outlierDetection;
      const g = c.outlierDetection;
      assert.ok(e && g, `${c.name}: envoy ${String(!!e)}, proxyless ${String(!!g)}`);
      const pick = (o: typeof e): unknown => ({
        consecutive5xx: o.consecutive5xx,
        enforcingConsecutive5xx: o.enforcingConsecutive5xx,
        interval: o.interval?.seconds,
        baseEjectionTime: o.baseEjectionTime?.seconds,
        maxEjectionPercent: o.maxEjectionPercent,
      });
      assert.deepEqual(pick(g), pick(e), c.name);
      assert.deepEqual(
        pick(e),
        {
          consecutive5xx: OUTLIER.consecutive5xxErrors,
          enforcingConsecutive5xx: 100,
          interval: BigInt(parseInt(OUTLIER.interval, 10)),
          baseEjectionTime: BigInt(parseInt(OUTLIER.baseEjectionTime, 10)),
          maxEjectionPercent: OUTLIER.maxEjectionPercent,
        },
        c.name,
      );
    }
  });

  it('outlier detection: the whole outlier_detection message is equal (success-rate ejection off on both)', () => {
    for (const c of proxyless.clusters) {
      const e = envoyCluster(c.name)?.outlierDetection;
      assert.ok(
        e && c.outlierDetection && equals(OutlierDetectionSchema, c.outlierDetection, e),
        `${c.name}: proxyless enforcingSuccessRate=${String(c.outlierDetection?.enforcingSuccessRate)}, envoy ${String(e?.enforcingSuccessRate)}`,
      );
    }
  });

  it('RBAC (Envoy side): the echo sidecar denies mallory with the policy and lets others through', () => {
    const port = byName('v1').port;
    const inbound = (headers: Record<string, string>): SimResult =>
      simulate(server, { address: '127.0.0.1', port, protocol: 'http2', callMode: 'inbound', authority: VHOST, path: WHOAMI, headers });
    const denied = inbound({ 'x-caller': 'mallory' });
    assert.equal(denied.rbac, 'deny', formatResult(denied));
    assert.equal(denied.status, 403);
    assert.match(denied.rbacPolicy ?? '', /echo-deny-mallory/);
    const allowed = inbound({ 'x-caller': 'alice' });
    assert.equal(allowed.rbac, 'allow', formatResult(allowed));
    assert.equal(allowed.cluster, `inbound|${port}||`);
    assert.equal(backendAt(allowed.endpoint), 'v1');
  });

  it('RBAC (proxyless side): a gRPC server asking for its inbound listener gets the RBAC filter', async () => {
    const { push } = await loadScenario(dir!.path);
    const node = proxyFor({
      id: 'sidecar~127.0.0.1~echo-v1.default~default.svc.cluster.local',
      labels: { app: 'echo', version: 'v1' },
      metadata: { GENERATOR: 'grpc' },
    });
    const gen = registerGrpcGenerators(new GeneratorRegistry()).lookup(node, TypeUrl.Listener)!;
    const name = `xds.istio.io/grpc/lds/inbound/127.0.0.1:${byName('v1').port}`;
    const res = gen.generate(
      node,
      { typeUrl: TypeUrl.Listener, names: new Set([name]), wildcard: false },
      push,
      pushRequest({ full: true, reason: 'config', start: 0 }),
    );
    assert.equal(res.length, 1, `no listener ${name}`);
    assert.ok(Buffer.from(res[0]!.value).includes('envoy.filters.http.rbac'), 'listener has no RBAC filter');
  });
});
