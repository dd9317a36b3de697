/**
 * Abusive SotW and Delta clients (fuzzed request sequences and nodes) against an
 * in-process DiscoveryServer with the real generators, over real gRPC. Properties in
 * test/support/fuzz/xds-abuse.ts; here also: a well-behaved client connected throughout gets
 * nothing spontaneously and is still served a real change afterwards.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { AdsStream, proxylessAdsNode } from '../support/raw-ads-client.js';
import { describeCase, runAbuseCase, type AbuseCase } from '../support/fuzz/xds-abuse.js';
import { startFuzzXdsServer, type FuzzXdsServer } from '../support/fuzz/xds-fuzz-server.js';
import { fuzzActions, fuzzNode } from '../support/fuzz/xds-requests.js';
import { FuzzFigures, fuzzParams } from '../support/fuzz/runs.js';
import { TypeUrl } from '../../src/xds/type-urls.js';

let srv: FuzzXdsServer | undefined;
let bystander: AdsStream | undefined;
let caseNo = 0;

const abuseCase = (): fc.Arbitrary<AbuseCase & { pod: string }> =>
  fc.boolean().chain((delta) => {
    const pod = `fuzz-${++caseNo}`;
    return fc
      .record({ node: fuzzNode(pod), actions: fuzzActions(delta) })
      .map((c) => Object.assign({ ...c, delta, pod }, { [fc.toStringMethod]: () => describeCase({ ...c, delta }) }));
  });

describe('xDS protocol abuse (fuzzed)', () => {
  before(async () => {
    srv = await startFuzzXdsServer();
    bystander = AdsStream.open(srv.addr, { node: proxylessAdsNode('bystander') });
    bystander.subscribe(TypeUrl.Cluster, ['outbound|8080||echo.default.svc.cluster.local']);
    await bystander.next(TypeUrl.Cluster);
  });

  after(async () => {
    bystander?.close();
    await srv?.stop();
  });

  it('abusive streams: no crash, no push loop, state bounded by what was requested, refused nodes told why', async () => {
    assert.ok(srv);
    const s = srv;
    const figures = new FuzzFigures();
    let maxNames = 0;
    await fc.assert(
      fc.asyncProperty(abuseCase(), async (c) => {
        const r = await runAbuseCase(s, c, c.pod);
        figures.record(r.ms, () => describeCase(c));
        maxNames = Math.max(maxNames, r.maxWatchedNames);
      }),
      fuzzParams({ ci: 100, share: 0.1 }),
    );
    const errors = s.problems.filter((l) => l.level === 'error');
    assert.deepEqual(errors.slice(0, 5), [], 'the server logged errors');
    process.stderr.write(`# ${figures.summary('xds fuzz')}; most names held for one type ${maxNames}\n`);
  });

  it('the bystander got nothing spontaneously and is still served a real change', async () => {
    assert.ok(srv && bystander);
    assert.equal(bystander.history.length, 1, `bystander responses: ${bystander.history.length}`);
    bystander.ack(bystander.history[0]!.resp);
    const host = srv.change('final');
    bystander.subscribe(TypeUrl.Cluster, ['outbound|8080||echo.default.svc.cluster.local', `outbound|8080||${host}`]);
    // The answer to the subscription may come before the debounced push has the new cluster.
    const r = await bystander.nextMatching(TypeUrl.Cluster, (x) => x.resp.resources.length === 2, {
      timeoutMs: 5000,
      describe: () => 'the new cluster never reached the bystander',
    });
    assert.equal(r.resp.resources.length, 2);
  });
});
