/**
 * Issue 13 item 3, slow readers: 12 proxies stop reading (16 KiB HTTP/2 window, never updated) —
 * more than the push throttle (10 here) — while the config changes 50 times. The server's heap
 * after GC stays flat, each stopped stream holds at most one response on the transport, a healthy
 * proxy beside them converges on every change (before the fix, pushes waiting on the stopped
 * readers' transport held every worker slot and stalled it), and each reader that resumes ends
 * on the newest version. The soak part `slow-readers` runs it bigger.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { slowReaderScenario } from '../support/faults/slow-readers.js';

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
