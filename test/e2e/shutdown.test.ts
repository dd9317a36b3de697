/**
 * SIGTERM drain. meshpilot serving a grpc-js-xds channel, a raw ADS stream
 * (grpc-js) and a bare HTTP/2 ADS stream gets SIGTERM: readiness turns 503, every connection gets a
 * GOAWAY (NO_ERROR), the streams end with gRPC status UNAVAILABLE in trailers (not a reset), and
 * the process exits 0 within --shutdownDuration.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { startGrpcBackends, type GrpcBackend } from '../support/grpc-backend.js';
import { openH2AdsProbe, type H2AdsProbe } from '../support/h2-ads-probe.js';
import { startMeshpilot, type Meshpilot } from '../support/meshpilot-process.js';
import { dest, serviceEntry, virtualService, workloadEntry } from '../support/mesh-fixtures.js';
import { AdsStream, proxylessAdsNode } from '../support/raw-ads-client.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import { callWhoami, closeXdsChannels, proxylessNode, useXdsBootstrap } from '../support/xds-client.js';
import { TYPE } from '../support/xds-resources.js';
import { writeYaml } from '../support/yaml-files.js';

const HOST = 'echo.default.svc.cluster.local';
const LISTENER = `${HOST}:8080`;
const TARGET = `xds:///${LISTENER}`;
/** The bound istiod keeps: exit within the shutdown duration. */
const SHUTDOWN_MS = 2000;
/** Process start-up/teardown outside meshpilot's own budget (node exit after the last handle). */
const EXIT_SLACK_MS = 500;

let dir: TempDir | undefined;
let mp: Meshpilot | undefined;
let backends: GrpcBackend[] = [];
let raw: AdsStream | undefined;
let probe: H2AdsProbe | undefined;

async function readyStatus(httpAddr: string): Promise<number> {
  const res = await fetch(`http://${httpAddr}/ready`, { signal: AbortSignal.timeout(1000) });
  await res.arrayBuffer();
  return res.status;
}

describe('graceful shutdown (SIGTERM)', () => {
  before(async () => {
    backends = await startGrpcBackends(['v1']);
    dir = tempDir('meshpilot-shutdown-');
    await writeYaml(dir.path, 'mesh.yaml', [
      serviceEntry('echo', { host: HOST, selector: { app: 'echo' } }),
      workloadEntry('echo-v1', { port: backends[0]?.port ?? 0, labels: { app: 'echo', version: 'v1' } }),
      virtualService('echo-routes', { hosts: [HOST], http: [{ route: [dest(HOST)] }] }),
    ]);
    mp = await startMeshpilot({
      configDir: dir.path,
      args: ['--shutdownDuration', `${SHUTDOWN_MS}ms`],
      env: process.env.SHUTDOWN_TRACE ? { GRPC_TRACE: 'server', GRPC_VERBOSITY: 'DEBUG' } : {},
    });
  });

  after(async () => {
    raw?.close();
    probe?.close();
    closeXdsChannels();
    await mp?.stop(1000);
    for (const b of backends) await b.stop();
    await dir?.remove();
    // grpc-js-xds keeps retrying the (now gone) xDS server with a live timer even after its
    // channels are closed, which would hold this test file's process open until the runner's
    // timeout. Every result has been reported by now; leave once the reporter has flushed.
    setTimeout(() => process.exit(), 1000).unref();
  });

  it('readiness 503, GOAWAY, streams end with UNAVAILABLE (trailers, no reset), exit 0 within --shutdownDuration', async () => {
    assert.ok(mp);
    const m = mp;
    // A real xDS client, routing.
    useXdsBootstrap(m.grpcAddr, proxylessNode('shutdown-client'));
    await waitFor(async () => (await callWhoami(TARGET, { deadlineMs: 2000 })).ok, {
      timeoutMs: 20_000,
      description: 'grpc-js-xds routes via meshpilot',
    });
    // A raw grpc-js ADS stream and a bare HTTP/2 one, both served.
    raw = AdsStream.open(m.grpcAddr, { node: proxylessAdsNode('shutdown-raw'), separateConnection: true });
    raw.subscribe(TYPE.LDS, [LISTENER]);
    await raw.next(TYPE.LDS);
    probe = openH2AdsProbe(m.grpcAddr, proxylessAdsNode('shutdown-h2'), TYPE.LDS, [LISTENER]);
    await probe.waitResponses(1);

    const signalledAt = performance.now();
    process.kill(m.pid, 'SIGTERM');
    const exitedAt = m.exited.then((e) => ({ ...e, ms: performance.now() - signalledAt }));

    // Readiness goes first (the drain period is half the duration).
    const notReady = await waitFor(async () => (await readyStatus(m.httpAddr)) === 503, {
      timeoutMs: SHUTDOWN_MS,
      intervalMs: 20,
      description: '/ready 503 after SIGTERM',
    });
    assert.ok(notReady);

    const goaway = await probe.goaway;
    assert.equal(goaway.errorCode, 0, 'GOAWAY with NO_ERROR (graceful), not an error code');
    const h2End = await probe.ended;
    assert.equal(h2End.grpcStatus, grpc.status.UNAVAILABLE, `bare HTTP/2 stream: ${JSON.stringify(h2End)}`);
    assert.equal(h2End.grpcMessage, 'server is shutting down');
    // The status came in trailers (above); what follows them is HTTP/2 housekeeping for a stream
    // whose request side the client never ended (NO_ERROR or CANCEL), not a reset that loses it.
    assert.ok([0, 8].includes(h2End.rstCode), `after the trailers only NO_ERROR/CANCEL, got RST code ${h2End.rstCode}`);

    const rawEnd = await raw.ended;
    assert.deepEqual(rawEnd, { code: grpc.status.UNAVAILABLE, details: 'server is shutting down' });

    const exit = await exitedAt;
    assert.equal(exit.code, 0, `exit code (signal ${exit.signal})\n${m.tail(20)}`);
    assert.ok(exit.ms <= SHUTDOWN_MS + EXIT_SLACK_MS, `exited ${Math.round(exit.ms)} ms after SIGTERM; budget ${SHUTDOWN_MS} ms`);
    const done = m.logs().find((l) => l.json?.msg === 'shut down');
    assert.ok(done, 'a "shut down" summary line');
    process.stderr.write(
      `# shutdown: exit ${Math.round(exit.ms)} ms after SIGTERM; h2 ${JSON.stringify(h2End)}; goaway ${JSON.stringify(goaway)}; summary ${JSON.stringify(done.json)}\n`,
    );

    // The grpc-js-xds channel outlives its control plane without taking this process down.
    const r = await callWhoami(TARGET, { deadlineMs: 1000 });
    assert.ok(r.ok || typeof r.code === 'number');
  });
});
