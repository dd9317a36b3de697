/**
 * Server limits as istiod holds them.
 * - new-stream rate limit (PILOT_MAX_REQUESTS_PER_SECOND=5): a burst of 40 streams queues and is
 *   admitted at the rate — none refused (istiod refuses those that would wait over 1 s);
 * - max receive 4 MiB: a 5 MiB DiscoveryRequest is refused with RESOURCE_EXHAUSTED, the server
 *   keeps serving;
 * - max connection age (--keepaliveMaxServerConnectionAge 1s): the connection gets a GOAWAY, and
 *   the client reconnects and is served again.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { openH2AdsProbe, type H2AdsProbe } from '../support/h2-ads-probe.js';
import { startMeshpilot, type Meshpilot } from '../support/meshpilot-process.js';
import { dest, serviceEntry, virtualService, workloadEntry } from '../support/mesh-fixtures.js';
import { AdsStream, proxylessAdsNode, type Received, type StreamEnd } from '../support/raw-ads-client.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { TYPE } from '../support/xds-resources.js';
import { writeYaml } from '../support/yaml-files.js';

const HOST = 'echo.default.svc.cluster.local';
const LISTENER = `${HOST}:8080`;
const RATE = 5;
const BURST = 40;

let dir: TempDir | undefined;
const servers: Meshpilot[] = [];
const streams: AdsStream[] = [];
const probes: H2AdsProbe[] = [];

function open(addr: string, pod: string): AdsStream {
  const s = AdsStream.open(addr, { node: proxylessAdsNode(pod), separateConnection: true });
  streams.push(s);
  return s;
}

/** The first LDS response, or how the stream ended. */
async function firstResponse(s: AdsStream): Promise<{ resp: Received } | { end: StreamEnd }> {
  s.subscribe(TYPE.LDS, [LISTENER]);
  return Promise.race([s.next(TYPE.LDS, 30_000).then((resp) => ({ resp })), s.ended.then((end) => ({ end }))]);
}

async function start(args: readonly string[], env: Record<string, string> = {}): Promise<Meshpilot> {
  assert.ok(dir);
  const mp = await startMeshpilot({ configDir: dir.path, args, env });
  servers.push(mp);
  return mp;
}

describe('gRPC limits', () => {
  before(async () => {
    dir = tempDir('meshpilot-limits-');
    await writeYaml(dir.path, 'mesh.yaml', [
      serviceEntry('echo', { host: HOST, selector: { app: 'echo' } }),
      workloadEntry('echo-v1', { port: 9, labels: { app: 'echo' } }),
      virtualService('echo-routes', { hosts: [HOST], http: [{ route: [dest(HOST)] }] }),
    ]);
  });

  after(async () => {
    for (const s of streams) s.close();
    for (const p of probes) p.close();
    for (const mp of servers) await mp.stop();
    await dir?.remove();
  });

  describe('new-stream rate limit and max receive size', () => {
    let mp: Meshpilot | undefined;
    before(async () => {
      mp = await start([], { PILOT_MAX_REQUESTS_PER_SECOND: String(RATE) });
    });

    it(`a burst of ${BURST} streams at ${RATE}/s: all wait their turn and are served at the rate, none refused`, async () => {
      assert.ok(mp);
      const addr = mp.grpcAddr;
      const t0 = performance.now();
      const servedAt: number[] = [];
      const results = await Promise.all(
        Array.from({ length: BURST }, async (_, i) => {
          const s = open(addr, `burst-${i}`);
          const r = await firstResponse(s);
          servedAt.push(performance.now() - t0);
          s.close();
          return r;
        }),
      );
      const ends = results.flatMap((r) => ('end' in r ? [`${r.end.code} ${r.end.details}`] : []));
      assert.deepEqual(ends, [], 'no stream refused');
      const ms = Math.max(...servedAt);
      // The rate still holds: 40 streams at 5/s take about 8 s.
      assert.ok(ms >= ((BURST - 1) / RATE) * 1000 * 0.9, `all served in ${Math.round(ms)} ms: faster than the rate allows`);
      process.stderr.write(`# rate limit: ${BURST} streams at ${RATE}/s → 0 refused, all served in ${Math.round(ms)} ms\n`);
    });

    it('a 5 MiB DiscoveryRequest is refused with RESOURCE_EXHAUSTED; the server keeps serving', async () => {
      assert.ok(mp);
      const big = open(mp.grpcAddr, 'big-request');
      big.send({ typeUrl: TYPE.LDS, resourceNames: ['x'.repeat(5 * 1024 * 1024)] });
      const end = await big.ended;
      assert.equal(end.code, grpc.status.RESOURCE_EXHAUSTED, `ended with ${end.code} ${end.details}`);
      process.stderr.write(`# max receive: 5 MiB request → ${end.code} "${end.details}"\n`);
      // Served afterwards.
      const r = await firstResponse(open(mp.grpcAddr, 'after-big'));
      assert.ok('resp' in r, `not served after the big request: ${JSON.stringify(r)}`);
      assert.ok(mp.alive());
    });
  });

  describe('max connection age', () => {
    it('--keepaliveMaxServerConnectionAge 1s: GOAWAY on the connection, then the client reconnects and is served', async () => {
      const mp = await start(['--keepaliveMaxServerConnectionAge', '1s', '--keepaliveMaxServerConnectionAgeGrace', '1s']);
      const probe = openH2AdsProbe(mp.grpcAddr, proxylessAdsNode('aged-h2'), TYPE.LDS, [LISTENER]);
      probes.push(probe);
      await probe.waitResponses(1);
      const t0 = performance.now();
      const goaway = await probe.goaway;
      const ageMs = performance.now() - t0;
      assert.equal(goaway.errorCode, 0, 'GOAWAY NO_ERROR');
      const end = await probe.ended;
      process.stderr.write(
        `# max connection age 1s: GOAWAY after ~${Math.round(ageMs)} ms of the served stream; then ${JSON.stringify(end)}\n`,
      );

      // A grpc-js client on an aged connection: its stream ends, a new stream on the same
      // channel reconnects (a new connection) and is served.
      const s = open(mp.grpcAddr, 'aged-raw');
      const first = await firstResponse(s);
      assert.ok('resp' in first, `first stream not served: ${JSON.stringify(first)}`);
      const ended = await s.ended;
      assert.equal(ended.code, grpc.status.UNAVAILABLE, `aged stream ended with ${ended.code} ${ended.details}`);
      const again = await firstResponse(open(mp.grpcAddr, 'aged-raw'));
      assert.ok('resp' in again, `reconnected stream not served: ${JSON.stringify(again)}`);
      assert.ok(mp.alive());
    });
  });
});
