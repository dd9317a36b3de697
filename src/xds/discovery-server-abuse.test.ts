/**
 * Regressions the xDS fuzzer (test/fuzz/xds-fuzz.test.ts) found: state a client could make the
 * server keep after its stream was gone.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { AdsStream } from '../../test/support/raw-ads-client.js';
import { startFuzzXdsServer, type FuzzXdsServer } from '../../test/support/fuzz/xds-fuzz-server.js';
import { waitFor } from '../../test/support/wait.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

function heapMiB(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed / 1024 / 1024;
}

let srv: FuzzXdsServer | undefined;

describe('DiscoveryServer under made-up type URLs', () => {
  before(async () => {
    srv = await startFuzzXdsServer();
  });
  after(async () => {
    await srv?.stop();
  });

  it('a stream asking for a type nobody serves leaves nothing behind once it closes (each was kept forever: 1 MiB type URLs, 24 MiB)', async () => {
    assert.ok(srv);
    const s = srv;
    const streams = 24;
    const before = heapMiB();
    for (let i = 0; i < streams; i++) {
      const typeUrl = `type.googleapis.com/made.up.${i}.${'x'.repeat(1024 * 1024)}`;
      const a = AdsStream.open(s.addr, { node: { id: `sidecar~10.0.0.1~made-up-${i}.default~default.svc.cluster.local` }, passive: true });
      const answered = new Promise<void>((resolve) => a.onResponse((r) => r.resp.typeUrl === typeUrl && resolve()));
      a.send({ typeUrl, resourceNames: [] });
      await answered; // answered with no resources, as before
      a.close();
    }
    await waitFor(() => s.xds.connectionList().length === 0, { description: 'every stream gone' });
    const grown = heapMiB() - before;
    assert.ok(grown < streams / 3, `heap grew ${grown.toFixed(1)} MiB after ${streams} closed streams with 1 MiB type URLs`);
    // Counted, but under one bounded label.
    assert.deepEqual(Object.keys(s.xds.stats.snapshot().pushes), ['other']);
    const metrics = await s.xds.stats.registry.metrics();
    assert.ok(!metrics.includes('made.up'), 'no metric label per made-up type URL');
    assert.match(metrics, /pilot_xds_pushes\{type="other"\} 24/);
  });
});
