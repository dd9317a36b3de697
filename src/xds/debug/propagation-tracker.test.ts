import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pushRequest, type PushRequest } from '../../model/push-request.js';
import { createLogger } from '../../util/log.js';
import { TypeUrl } from '../type-urls.js';
import type { SentResponse } from '../xds-observer.js';
import { PropagationTracker } from './propagation-tracker.js';
import { testConnection } from './test-connections.js';

const CDS = TypeUrl.Cluster;
const LDS = TypeUrl.Listener;

function setup(keep?: number): { tracker: PropagationTracker; lines: Record<string, unknown>[]; clock: { t: number; now(): number } } {
  const lines: Record<string, unknown>[] = [];
  const clock = {
    t: 1000,
    now() {
      return this.t;
    },
  };
  const logger = createLogger({ level: 'debug', sink: (l) => lines.push(JSON.parse(l) as Record<string, unknown>) });
  const tracker = new PropagationTracker({ logger, clock, ...(keep !== undefined ? { keep } : {}) });
  return { tracker, lines, clock };
}

function sent(req: PushRequest, typeUrl: string, nonce: string): SentResponse {
  return { typeUrl, nonce, version: 'v', bytes: 10, resources: 1, req, delta: false };
}

const change = (start = 1000): PushRequest =>
  pushRequest({ full: true, reason: 'config', configsUpdated: ['ServiceEntry/default/a'], start });

describe('PropagationTracker', () => {
  it('follows a change to every queued proxy until each ACKed every response of it, then logs once', () => {
    const { tracker, lines, clock } = setup();
    const a = testConnection('a');
    const b = testConnection('b');
    const req = change();
    tracker.pushStarted(req, 'v1', [a, b]);
    assert.equal(tracker.changes()[0]?.state, 'in-progress');
    assert.deepEqual(
      tracker.changes()[0]?.pending.map((p) => p.types),
      [['(queued)'], ['(queued)']],
    );

    tracker.responseSent(a, sent(req, CDS, 'a1'));
    tracker.responseSent(a, sent(req, LDS, 'a2'));
    tracker.proxyPushed(a, req);
    tracker.ackReceived(a, CDS, 'a1');
    assert.deepEqual(tracker.changes()[0]?.pending.find((p) => p.proxy === a.proxy.id)?.types, ['LDS']);
    tracker.ackReceived(a, LDS, 'a2');
    assert.equal(tracker.changes()[0]?.state, 'in-progress');
    clock.t = 1250;
    tracker.proxyPushed(b, req); // nothing changed for b: done once its push finished
    tracker.ackReceived(a, LDS, 'a2'); // a repeated ACK changes nothing
    const s0 = tracker.changes()[0];
    assert.equal(s0?.acked, 2);
    assert.equal(s0?.state, 'converged');
    const done = lines.filter((l) => l.msg === 'config change converged');
    assert.equal(done.length, 1);
    assert.equal(done[0]?.change, s0?.id);
    assert.equal(done[0]?.proxies, 2);
    assert.equal(done[0]?.ms, 250);
    assert.equal(typeof done[0]?.cpuMs, 'number', 'the CPU its delivery cost');
    assert.ok((done[0]?.cpuMs as number) >= 0);
    assert.equal(s0?.convergenceMs, 250);
  });

  it('reports NACKs with the proxy, type and message, and does not count them as converged', () => {
    const { tracker, lines } = setup();
    const a = testConnection('a');
    const req = change();
    tracker.pushStarted(req, 'v1', [a]);
    tracker.responseSent(a, sent(req, CDS, 'n1'));
    tracker.proxyPushed(a, req);
    tracker.nackReceived(a, CDS, 'n1', 'bad cluster');
    const s = tracker.changes()[0];
    assert.equal(s?.state, 'nacked');
    assert.deepEqual(
      s?.nacked.map((n) => [n.proxy, n.type, n.message]),
      [[a.proxy.id, 'CDS', 'bad cluster']],
    );
    assert.equal(lines.filter((l) => l.msg === 'config change finished with NACKs').length, 1);
  });

  it('a newer response of the same type replaces the pending nonce; its ACK completes the older change', () => {
    const { tracker } = setup();
    const a = testConnection('a');
    const r1 = change();
    tracker.pushStarted(r1, 'v1', [a]);
    tracker.responseSent(a, sent(r1, CDS, 'x1'));
    tracker.proxyPushed(a, r1);
    const r2 = change(1100);
    tracker.pushStarted(r2, 'v2', [a]);
    tracker.responseSent(a, sent(r2, CDS, 'x2'));
    tracker.proxyPushed(a, r2);
    tracker.ackReceived(a, CDS, 'x1'); // the client skipped nothing, but x1 is superseded
    assert.deepEqual(
      tracker.changes().map((c) => c.state),
      ['in-progress', 'in-progress'],
    );
    tracker.ackReceived(a, CDS, 'x2');
    assert.deepEqual(
      tracker.changes().map((c) => c.state),
      ['converged', 'converged'],
    );
  });

  it('a change published while a push is running waits for the next push to that proxy', () => {
    const { tracker } = setup();
    const a = testConnection('a');
    const r1 = change();
    tracker.pushStarted(r1, 'v1', [a]);
    tracker.responseSent(a, sent(r1, CDS, 'c1')); // push of r1 began
    const r2 = change(1100);
    tracker.pushStarted(r2, 'v2', [a]); // held by the queue until r1's push is done
    tracker.proxyPushed(a, r1);
    tracker.ackReceived(a, CDS, 'c1');
    const [s2, s1] = tracker.changes();
    assert.equal(s1?.state, 'converged');
    assert.equal(s2?.state, 'in-progress');
    tracker.proxyPushed(a, r2); // r2's push: nothing changed
    assert.equal(tracker.changes()[0]?.state, 'converged');
  });

  it('forgets disconnected proxies and keeps only the last N changes', () => {
    const { tracker } = setup(3);
    const a = testConnection('a');
    const b = testConnection('b');
    const req = change();
    tracker.pushStarted(req, 'v1', [a, b]);
    tracker.proxyPushed(a, req);
    tracker.disconnected(b);
    const s = tracker.changes()[0];
    assert.equal(s?.state, 'converged');
    assert.equal(s?.disconnected, 1);
    assert.equal(s?.acked, 1);
    for (let i = 0; i < 5; i++) tracker.pushStarted(change(), `v${i + 2}`, [a]);
    assert.deepEqual(
      tracker.changes().map((c) => c.version),
      ['v6', 'v5', 'v4'],
    );
    tracker.disconnected(a);
    assert.deepEqual(
      tracker.changes().map((c) => c.state),
      ['converged', 'converged', 'converged'],
    );
  });

  it('a push that reached no proxy converges at once', () => {
    const { tracker } = setup();
    tracker.pushStarted(change(), 'v1', []);
    assert.equal(tracker.changes()[0]?.state, 'converged');
    assert.equal(tracker.changes()[0]?.proxies, 0);
  });
});
