/**
 * Slow readers: 12 proxies stop reading (16 KiB HTTP/2 window, never updated) —
 * more than the push throttle (10 here) — while the config changes 50 times. The server's heap
 * after GC stays flat, each stopped stream holds at most one response on the transport, a healthy
 * proxy beside them converges on every change (before the fix, pushes waiting on the stopped
 * readers' transport held every worker slot and stalled it), and each reader that resumes ends
 * on the newest version. The soak part `slow-readers` runs it bigger.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { openSlowReader } from '../support/faults/slow-reader.js';
import { slowReaderScenario } from '../support/faults/slow-readers.js';
import { startFuzzXdsServer } from '../support/fuzz/xds-fuzz-server.js';
import type { AdsNode } from '../support/raw-ads-client.js';
import { waitFor } from '../support/wait.js';
import { TYPE } from '../support/xds-resources.js';

const sidecarNode = (pod: string): AdsNode => ({
  id: `sidecar~127.0.0.1~${pod}.default~default.svc.cluster.local`,
  metadata: { NAMESPACE: 'default' } as never,
});

describe('faults: slow readers', () => {
  it('12 stopped readers over 50 changes: bounded memory, one pending response per stream, newest version on resume', async () => {
    const r = await slowReaderScenario({ readers: 12, changes: 50 });
    process.stderr.write(`# slow readers: ${r.notes}\n`);
    assert.equal(r.failure, undefined, r.failure);
    assert.ok(r.pendingPerStream <= 1, `pending per stream ${r.pendingPerStream}`);
    assert.equal(r.pendingPerStream, 1, 'the readers did stop: their window filled');
    assert.ok(r.heapGrowthMiB < 4, `heap after GC grew ${r.heapGrowthMiB.toFixed(1)} MiB over 50 changes`);
  });
});

describe('faults: a proxy that never reads again', () => {
  it('is ended after the send timeout and gives back its share of the write budget; a healthy proxy is untouched', async () => {
    const srv = await startFuzzXdsServer({ sendTimeoutMs: 400 });
    const subs = new Map<string, readonly string[]>([[TYPE.CDS, []]]);
    const stuck = openSlowReader(srv.addr, sidecarNode('stuck'), subs, 4 * 1024);
    const healthy = openSlowReader(srv.addr, sidecarNode('healthy'), subs, 1 << 24);
    try {
      await Promise.all([stuck, healthy].map((r) => r.waitFor((x) => x.typeUrl === TYPE.CDS)));
      stuck.pause();
      // Changes until a response waits on the stuck stream's transport (its 4 KiB window is full).
      await waitFor(
        () => {
          srv.change(`fill-${Math.random().toString(36).slice(2, 8)}`);
          return (srv.connection('stuck')?.pendingWrites() ?? 0) > 0;
        },
        { timeoutMs: 10_000, intervalMs: 50, description: 'a response waiting on the stuck stream' },
      );
      assert.ok(srv.xds.writeBudget.stats().used > 0, 'the waiting response holds budget');
      await waitFor(() => srv.connection('stuck') === undefined, {
        timeoutMs: 5_000,
        description: 'the stuck stream ended by the send timeout',
      });
      await waitFor(() => srv.xds.writeBudget.stats().used === 0, { timeoutMs: 5_000, description: 'its budget given back' });
      assert.ok(
        srv.problems.some((p) => p.msg === 'ending a stream whose proxy stopped reading' && String(p.proxy).includes('stuck')),
        JSON.stringify(srv.problems.slice(-3)),
      );
      const host = srv.change('after');
      await healthy.waitFor((x) => x.typeUrl === TYPE.CDS && x.resources.some((a) => new TextDecoder().decode(a.value).includes(host)));
      assert.ok(srv.connection('healthy'), 'the healthy proxy keeps its stream');
    } finally {
      stuck.close();
      healthy.close();
      await srv.stop();
    }
  });
});
