/**
 * `meshctl x preview` against a running meshpilot (bookinfo). Three
 * proxyless clients each watch one service (reviews, ratings, details) and the productpage Envoy
 * sidecar watches everything; a VirtualService edit of reviews is previewed: exactly the reviews
 * client and productpage are listed, with the changed route; the others are not affected. A no-op
 * change lists nobody; an invalid one is refused with its error; nothing changes in the server.
 */
import assert from 'node:assert/strict';
import { cp } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { CliIO } from '../../src/meshctl/io.js';
import { runCli } from '../../src/meshctl/cli.js';
import type { PreviewResult } from '../../src/xds/debug/preview.js';
import { BOOKINFO_DIR, BOOKINFO_PROXIES } from '../scenarios/bookinfo-fixture.js';
import { startMeshpilot, type Meshpilot } from '../support/meshpilot-process.js';
import { AdsStream, proxylessAdsNode } from '../support/raw-ads-client.js';
import { rdsNames } from '../support/scenario.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { decodeResources, listenerRouteName, SCHEMA_BY_TYPE, TYPE } from '../support/xds-resources.js';

let dir: TempDir | undefined;
let mp: Meshpilot | undefined;
const streams: AdsStream[] = [];
const PRODUCTPAGE = BOOKINFO_PROXIES.productpage?.id ?? '';
const client = (svc: string): string => proxylessAdsNode(`client-${svc}`, 'bookinfo', '10.9.0.1').id;

const REVIEWS_VS = (splitV1: number): string => `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: reviews, namespace: bookinfo}
spec:
  hosts: [reviews]
  http:
    - name: jason
      match:
        - headers:
            end-user: {exact: jason}
      route:
        - destination: {host: reviews, subset: v2}
    - name: split
      route:
        - destination: {host: reviews, subset: v1}
          weight: ${splitV1}
        - destination: {host: reviews, subset: v3}
          weight: ${100 - splitV1}
`;

async function meshctl(argv: string[], stdin: string): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const io: CliIO = {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    env: {},
    cwd: process.cwd(),
    readStdin: () => Promise.resolve(stdin),
  };
  const code = await runCli(argv, io, { proxyCommands: false });
  return { code, stdout, stderr };
}

/** A proxyless client that has synced the listener and routes of one service, ACKing everything. */
async function proxylessOn(svc: string, port: number): Promise<void> {
  assert.ok(mp);
  const s = AdsStream.open(mp.grpcAddr, { node: proxylessAdsNode(`client-${svc}`, 'bookinfo', '10.9.0.1') });
  streams.push(s);
  s.subscribe(TYPE.LDS, [`${svc}.bookinfo.svc.cluster.local:${port}`]);
  const lds = await s.next(TYPE.LDS);
  s.ack(lds.resp);
  const route = decodeResources(lds.resp, SCHEMA_BY_TYPE[TYPE.LDS])
    .map(listenerRouteName)
    .find((n) => n !== undefined);
  assert.ok(route, `${svc}: the listener names its route`);
  s.subscribe(TYPE.RDS, [route]);
  s.ack((await s.next(TYPE.RDS)).resp);
}

describe('meshctl x preview (bookinfo, live meshpilot)', () => {
  before(async () => {
    dir = tempDir();
    await cp(join(BOOKINFO_DIR, 'config'), dir.path, { recursive: true });
    mp = await startMeshpilot({ configDir: dir.path });
    const spec = BOOKINFO_PROXIES.productpage;
    assert.ok(spec);
    const pp = AdsStream.open(mp.grpcAddr, { node: { id: spec.id, metadata: { NAMESPACE: 'bookinfo', LABELS: spec.labels ?? {} } } });
    streams.push(pp);
    pp.subscribe(TYPE.LDS, []);
    const lds = await pp.next(TYPE.LDS);
    pp.ack(lds.resp);
    pp.subscribe(TYPE.RDS, [...rdsNames(decodeResources(lds.resp, SCHEMA_BY_TYPE[TYPE.LDS]))]);
    pp.ack((await pp.next(TYPE.RDS)).resp);
    // The proxyless clients name the same pod prefix per service; ids differ by the pod name.
    await proxylessOn('reviews', 9080);
    await proxylessOn('ratings', 9080);
    await proxylessOn('details', 9080);
  });

  after(async () => {
    for (const s of streams) s.close();
    await mp?.stop();
    await dir?.remove();
  });

  it("a reviews VirtualService edit: the reviews client and productpage change (the route's weights), ratings and details do not", async () => {
    assert.ok(mp);
    const versionBefore = ((await (await fetch(`http://${mp.httpAddr}/debug/push_status`)).json()) as { version: string }).version;
    const r = await meshctl(['x', 'preview', '-f', '-', '--debug-address', mp.httpAddr, '-o', 'json'], REVIEWS_VS(50));
    assert.equal(r.code, 1, `exit 1 when something would change\n${r.stderr}`);
    const result = JSON.parse(r.stdout) as PreviewResult;
    assert.deepEqual(result.configs, ['VirtualService/bookinfo/reviews']);
    assert.deepEqual(result.changed.map((p) => p.proxy).sort(), [client('reviews'), PRODUCTPAGE].sort());
    assert.deepEqual(result.unchanged, [client('details'), client('ratings')].sort());
    for (const p of result.changed) {
      assert.deepEqual(
        p.changes.map((c) => [c.type, c.change]),
        [['RDS', 'changed']],
        `${p.proxy}: only its routes change`,
      );
      const fields = p.changes[0]?.fields ?? [];
      assert.ok(
        fields.some((f) => /weight$/.test(f.path) && f.before === 75 && f.after === 50),
        `${p.proxy}: the v1 weight 75 → 50 in ${JSON.stringify(fields)}`,
      );
    }
    // Nothing was applied: the server's push version and the routes it serves are as before.
    const versionAfter = ((await (await fetch(`http://${mp.httpAddr}/debug/push_status`)).json()) as { version: string }).version;
    assert.equal(versionAfter, versionBefore);
    const again = await meshctl(['x', 'preview', '-f', '-', '--debug-address', mp.httpAddr, '-o', 'json'], REVIEWS_VS(50));
    assert.equal(again.code, 1, 'the same change still previews as a change: the first preview applied nothing');
  });

  it('text output lists each changed resource with its fields, and the proxies not affected', async () => {
    assert.ok(mp);
    const r = await meshctl(
      ['x', 'preview', '-f', '-', '--debug-address', mp.httpAddr, '--proxy', 'client-reviews.bookinfo', '-v'],
      REVIEWS_VS(60),
    );
    assert.equal(r.code, 1);
    assert.match(r.stdout, /^Change: VirtualService\/bookinfo\/reviews$/m);
    assert.match(r.stdout, new RegExp(`^${client('reviews').replace(/[.|]/g, '\\$&')}$`, 'm'));
    assert.match(r.stdout, /^ {2}RDS \S+ changed$/m);
    assert.match(r.stdout, /weight: 75 → 60$/m);
  });

  it('a no-op change (the VirtualService as it is) changes no proxy: exit 0', async () => {
    assert.ok(mp);
    const r = await meshctl(['x', 'preview', '-f', '-', '--debug-address', mp.httpAddr], REVIEWS_VS(75));
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /No connected proxy would change\./);
    assert.match(r.stdout, /Not affected: 4 proxies/);
  });

  it('an invalid change is refused with the validation error (65); an unreachable server is exit 2', async () => {
    assert.ok(mp);
    const bad = await meshctl(['x', 'preview', '-f', '-', '--debug-address', mp.httpAddr], REVIEWS_VS(-5));
    assert.equal(bad.code, 65);
    assert.match(bad.stderr, /weight -5 < 0/);
    const down = await meshctl(['x', 'preview', '-f', '-', '--debug-address', '127.0.0.1:1'], REVIEWS_VS(50));
    assert.equal(down.code, 2);
    assert.match(down.stderr, /cannot reach meshpilot at 127\.0\.0\.1:1/);
  });
});
