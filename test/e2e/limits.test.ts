/**
 * Issue 3, must-show: server limits as istiod holds them.
 * - new-stream rate limit (PILOT_MAX_REQUESTS_PER_SECOND=5): a burst of 40 streams → some get
 *   RESOURCE_EXHAUSTED; retried with backoff, every one is served (none lost);
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

const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

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

    it(`a burst of ${BURST} streams at ${RATE}/s: some refused with RESOURCE_EXHAUSTED, all served after retry with backoff`, async () => {
      assert.ok(mp);
      const addr = mp.grpcAddr;
      const refusals: StreamEnd[] = [];
      const attemptsPer: number[] = [];
      const client = async (i: number): Promise<void> => {
        for (let attempt = 0; attempt < 30; attempt++) {
          const s = open(addr, `burst-${i}`);
          const r = await firstResponse(s);
          s.close();
          if ('resp' in r) {
            assert.equal(r.resp.resp.typeUrl, TYPE.LDS);
            attemptsPer[i] = attempt + 1;
            return;
          }
          assert.equal(r.end.code, grpc.status.RESOURCE_EXHAUSTED, `stream ${i} ended with ${r.end.code} ${r.end.details}`);
          refusals.push(r.end);
          // Exponential backoff with full jitter, as xDS clients retry.
          await pause(Math.random() * Math.min(4000, 250 * 2 ** attempt));
        }
        assert.fail(`stream ${i} never served`);
      };
      const t0 = performance.now();
      await Promise.all(Array.from({ length: BURST }, (_, i) => client(i)));
      const ms = performance.now() - t0;
      assert.ok(refusals.length > 0, 'no stream was refused: the limit did not apply');
      assert.match(refusals[0]?.details ?? '', /rate limit exceeded/);
      assert.equal(attemptsPer.filter((n) => n !== undefined).length, BURST, 'every stream served');
      process.stderr.write(`# rate limit: ${BURST} streams at ${RATE}/s → ${refusals.length} RESOURCE_EXHAUSTED, all served in ${Math.round(ms)} ms, max attempts ${Math.max(...attemptsPer)}\n`);
      const warn = mp.logs().filter((l) => l.json?.level === 'warn' && String(l.json?.msg).includes('rate limit'));
      assert.ok(warn.length >= 1, 'refusals are reported at warn (rate-limited to one line a second)');
    });

    it('a 5 MiB DiscoveryRequest is refused with RESOURCE_EXHAUSTED; the server keeps serving', async () => {
      assert.ok(mp);
      const big = open(mp.grpcAddr, 'big-request');
      big.send({ typeUrl: TYPE.LDS, resourceNames: ['x'.repeat(5 * 1024 * 1024)] });
      const end = await big.ended;
      assert.equal(end.code, grpc.status.RESOURCE_EXHAUSTED, `ended with ${end.code} ${end.details}`);
      process.stderr.write(`# max receive: 5 MiB request → ${end.code} "${end.details}"\n`);
      // Served afterwards (retrying only the rate limit, which the burst above may still hold).
      for (let attempt = 0; ; attempt++) {
        const r = await firstResponse(open(mp.grpcAddr, `after-big-${attempt}`));
        if ('resp' in r) break;
        assert.equal(r.end.code, grpc.status.RESOURCE_EXHAUSTED);
        assert.ok(attempt < 20, 'never served after the big request');
        await pause(300);
      }
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
      process.stderr.write(`# max connection age 1s: GOAWAY after ~${Math.round(ageMs)} ms of the served stream; then ${JSON.stringify(end)}\n`);

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
