/**
 * The server process is killed (SIGKILL) and started again on the same gRPC
 * port with the same config directory. A connected grpc-js-xds client reconnects and keeps routing
 * (and follows a config change made after the restart); a raw SotW client replaying its old nonce
 * on a new stream gets exactly one response (AlwaysRespond), and its ACK gets none.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { RouteConfigurationSchema } from '../../src/gen/envoy/config/route/v3/route_pb.js';
import { startGrpcBackends, type GrpcBackend } from '../support/grpc-backend.js';
import { startMeshpilot, type Meshpilot } from '../support/meshpilot-process.js';
import { dest, destinationRule, serviceEntry, virtualService, workloadEntry } from '../support/mesh-fixtures.js';
import { freePorts } from '../support/ports.js';
import { AdsStream, proxylessAdsNode, type Received } from '../support/raw-ads-client.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { quietWindow, waitFor } from '../support/wait.js';
import { callMany, closeXdsChannels, failures, proxylessNode, share, useXdsBootstrap, waitForTally } from '../support/xds-client.js';
import { decodeResources, TYPE } from '../support/xds-resources.js';
import { writeYaml } from '../support/yaml-files.js';

const HOST = 'echo.default.svc.cluster.local';
const TARGET = `xds:///${HOST}:8080`;
const LISTENER = `${HOST}:8080`;
const QUIET_MS = 1500;

let dir: TempDir | undefined;
let grpcAddr = '';
const servers: Meshpilot[] = [];
let backends: GrpcBackend[] = [];
const streams: AdsStream[] = [];

function routeTo(subset: string): unknown {
  return virtualService('echo-routes', { hosts: [HOST], http: [{ route: [dest(HOST, subset)] }] });
}

/** meshpilot on the fixed gRPC address (a later --grpcAddr wins over the helper's own). */
async function start(): Promise<Meshpilot> {
  assert.ok(dir);
  const mp = await startMeshpilot({ configDir: dir.path, args: ['--grpcAddr', grpcAddr] });
  servers.push(mp);
  return mp;
}

function open(pod: string): AdsStream {
  const s = AdsStream.open(grpcAddr, { node: proxylessAdsNode(pod) });
  streams.push(s);
  return s;
}

describe('restart: SIGKILL and start again on the same port', () => {
  before(async () => {
    backends = await startGrpcBackends(['v1', 'v2']);
    const [port] = await freePorts(1);
    grpcAddr = `127.0.0.1:${port}`;
    dir = tempDir('meshpilot-restart-');
    await writeYaml(dir.path, 'mesh.yaml', [
      serviceEntry('echo', { host: HOST, selector: { app: 'echo' } }),
      ...backends.map((b) => workloadEntry(`echo-${b.name}`, { port: b.port, labels: { app: 'echo', version: b.name } })),
      destinationRule('echo', { host: HOST, subsets: { v1: { version: 'v1' }, v2: { version: 'v2' } } }),
    ]);
    await writeYaml(dir.path, 'vs.yaml', [routeTo('v1')]);
  });

  after(async () => {
    for (const s of streams) s.close();
    closeXdsChannels();
    for (const mp of servers) await mp.stop();
    for (const b of backends) await b.stop();
    await dir?.remove();
  });

  it('grpc-js-xds reconnects and keeps routing; a replayed old nonce gets one response, its ACK none', async () => {
    assert.ok(dir);
    const first = await start();
    useXdsBootstrap(grpcAddr, proxylessNode('restart-client'));
    await waitForTally(TARGET, 10, (t) => failures(t) === 0 && share(t, 'v1') === 100, {
      timeoutMs: 20_000,
      description: 'routing to v1 before the restart',
    });

    const raw1 = open('restart-raw');
    raw1.subscribe(TYPE.LDS, [LISTENER]);
    const lds1 = await raw1.next(TYPE.LDS);
    raw1.ack(lds1.resp);
    raw1.subscribe(TYPE.RDS, [LISTENER]);
    const rds1 = await raw1.next(TYPE.RDS);
    raw1.ack(rds1.resp);

    process.kill(first.pid, 'SIGKILL');
    const exit = await first.exited;
    assert.equal(exit.signal, 'SIGKILL');
    await raw1.ended;

    // Cached config keeps serving while the control plane is down.
    const during = await callMany(TARGET, 5);
    assert.equal(failures(during), 0, `RPCs during the outage: ${JSON.stringify(during.errors)} ${during.errorDetails.join('; ')}`);

    const second = await start();
    assert.notEqual(second.pid, first.pid);
    // The client must be connected to the new process: a change made now reaches it.
    await writeYaml(dir.path, 'vs.yaml', [routeTo('v2')]);
    await waitForTally(TARGET, 10, (t) => failures(t) === 0 && share(t, 'v2') === 100, {
      timeoutMs: 20_000,
      description: `routing to v2 after the restart\n${second.tail(20)}`,
    });
    await waitFor(() => second.logs().some((l) => l.json?.msg === 'proxy connected' && String(l.json.proxy).includes('restart-client')), {
      description: 'the grpc-js-xds client connected to the new process',
    });

    // A raw client replays its old version and nonce on a fresh stream: answered once (AlwaysRespond).
    const raw2 = open('restart-raw');
    raw2.send({ typeUrl: TYPE.RDS, resourceNames: [LISTENER], versionInfo: rds1.resp.versionInfo, responseNonce: rds1.resp.nonce });
    const rds2: Received = await raw2.next(TYPE.RDS);
    assert.deepEqual(
      decodeResources(rds2.resp, RouteConfigurationSchema).map((r) => r.name),
      [LISTENER],
    );
    assert.notEqual(rds2.resp.nonce, rds1.resp.nonce);
    raw2.ack(rds2.resp);
    raw2.drain();
    await quietWindow(QUIET_MS);
    assert.deepEqual(
      raw2.drain().map((r) => `${r.resp.typeUrl} ${r.resp.nonce}`),
      [],
      'the ACK of the AlwaysRespond answer gets no response (no loop)',
    );
    assert.ok(raw2.isOpen());
    assert.equal(raw2.history.length, 1, 'exactly one response');
  });
});
