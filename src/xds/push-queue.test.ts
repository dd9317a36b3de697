import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { deferred, flushMicrotasks, type Deferred } from '../../test/fake-clock.js';
import { pushRequest, type PushRequest } from '../model/push-request.js';
import { createLogger } from '../util/log.js';
import { defaultPushThrottle, PushQueue, resolvePushThrottle, startPushWorkers } from './push-queue.js';

interface Conn {
  readonly id: string;
}
const conn = (id: string): Conn => ({ id });
const req = (name: string, full = true, start = 0): PushRequest =>
  pushRequest({ full, configsUpdated: [`DestinationRule/default/${name}`], reason: full ? 'config' : 'endpoint', start });
const keys = (r: PushRequest): string[] => [...r.configsUpdated].sort();

async function next<C extends object>(q: PushQueue<C>): Promise<readonly [C, PushRequest]> {
  const item = await q.dequeue();
  assert.ok(item, 'expected an item');
  return item;
}

describe('PushQueue', () => {
  it('merges requests for a connection that is already queued', async () => {
    const q = new PushQueue<Conn>();
    const a = conn('a');
    q.enqueue(a, req('x', false, 5));
    q.enqueue(a, req('y', true, 3));
    assert.equal(q.pending(), 1);
    const [c, r] = await next(q);
    assert.equal(c, a);
    assert.equal(r.full, true);
    assert.equal(r.start, 3);
    assert.deepEqual(keys(r), ['DestinationRule/default/x', 'DestinationRule/default/y']);
    assert.equal(q.pending(), 0);
  });

  it('keys by object identity, not by value', () => {
    const q = new PushQueue<Conn>();
    q.enqueue(conn('same'), req('x'));
    q.enqueue(conn('same'), req('y'));
    assert.equal(q.pending(), 2);
  });

  it('holds requests for a connection being processed and re-queues them on markDone', async () => {
    const q = new PushQueue<Conn>();
    const a = conn('a');
    const b = conn('b');
    q.enqueue(a, req('1'));
    await next(q);
    assert.equal(q.processing(), 1);

    q.enqueue(a, req('2', false));
    q.enqueue(a, req('3', false));
    q.enqueue(b, req('b'));
    assert.equal(q.pending(), 1, 'a is held, not queued, while processing');
    const [c1] = await next(q);
    assert.equal(c1, b);

    q.markDone(a);
    assert.equal(q.pending(), 1);
    const [c2, r2] = await next(q);
    assert.equal(c2, a);
    assert.equal(r2.full, false);
    assert.deepEqual(keys(r2), ['DestinationRule/default/2', 'DestinationRule/default/3']);

    q.markDone(a);
    q.markDone(b);
    assert.equal(q.pending(), 0);
    assert.equal(q.processing(), 0);
  });

  it('markDone without a held request does not re-queue', () => {
    const q = new PushQueue<Conn>();
    const a = conn('a');
    q.enqueue(a, req('1'));
    void q.dequeue();
    q.markDone(a);
    q.markDone(a);
    assert.equal(q.pending(), 0);
    assert.equal(q.processing(), 0);
  });

  it('is FIFO across connections; merging keeps the original position', async () => {
    const q = new PushQueue<Conn>();
    const cs = ['a', 'b', 'c', 'd'].map(conn);
    for (const c of cs) q.enqueue(c, req(c.id));
    q.enqueue(cs[0]!, req('again'));
    const order: string[] = [];
    for (let i = 0; i < cs.length; i++) order.push((await next(q))[0].id);
    assert.deepEqual(order, ['a', 'b', 'c', 'd']);
  });

  it('stays FIFO over many items (head compaction)', async () => {
    const q = new PushQueue<Conn>();
    const cs = Array.from({ length: 3000 }, (_, i) => conn(String(i)));
    for (const c of cs.slice(0, 2000)) q.enqueue(c, req(c.id));
    for (let i = 0; i < 1500; i++) assert.equal((await next(q))[0], cs[i]);
    for (const c of cs.slice(2000)) q.enqueue(c, req(c.id));
    for (let i = 1500; i < 3000; i++) assert.equal((await next(q))[0], cs[i]);
    assert.equal(q.pending(), 0);
  });

  it('dequeue waits while empty and is woken by enqueue, in waiter order', async () => {
    const q = new PushQueue<Conn>();
    const got: string[] = [];
    const w1 = q.dequeue().then((i) => got.push(`w1:${i?.[0].id}`));
    const w2 = q.dequeue().then((i) => got.push(`w2:${i?.[0].id}`));
    await flushMicrotasks();
    assert.deepEqual(got, []);
    q.enqueue(conn('a'), req('a'));
    q.enqueue(conn('b'), req('b'));
    await Promise.all([w1, w2]);
    assert.deepEqual(got, ['w1:a', 'w2:b']);
  });

  it('shutdown wakes waiters with undefined and drops later work', async () => {
    const q = new PushQueue<Conn>();
    const waiting = q.dequeue();
    q.shutdown();
    assert.equal(await waiting, undefined);
    q.enqueue(conn('a'), req('a'));
    assert.equal(q.pending(), 0);
    assert.equal(await q.dequeue(), undefined);
    assert.equal(q.isShutdown(), true);
  });
});

describe('push throttle', () => {
  it('defaults to min(15 + 5·cores, 100)', () => {
    assert.equal(defaultPushThrottle(1), 20);
    assert.equal(defaultPushThrottle(4), 35);
    assert.equal(defaultPushThrottle(64), 100);
    assert.equal(resolvePushThrottle(0, 2), 25);
    assert.equal(resolvePushThrottle(undefined, 2), 25);
    assert.equal(resolvePushThrottle(7, 2), 7);
  });
});

/**
 * Lets the push loop run as far as it can: it yields to the event loop every slice (2 ms), so on a
 * slow machine one turn may end before it reached a push it would otherwise have started.
 */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await flushMicrotasks();
}

describe('startPushWorkers', () => {
  it('never runs more than `limit` pushes at once and runs them all', async () => {
    const q = new PushQueue<Conn>();
    const limit = 3;
    let active = 0;
    let maxActive = 0;
    const gates: Deferred[] = [];
    const pushed: string[] = [];
    const workers = startPushWorkers(q, limit, async (c) => {
      active++;
      maxActive = Math.max(maxActive, active);
      pushed.push(c.id);
      const g = deferred();
      gates.push(g);
      await g.promise;
      active--;
    });
    for (let i = 0; i < 10; i++) q.enqueue(conn(String(i)), req(String(i)));
    await settle();
    assert.equal(active, 3);
    assert.equal(q.pending(), 7, 'no slot, so the rest stay queued');
    // Finish pushes one at a time, out of order, until all are done.
    while (pushed.length < 10 || active > 0) {
      const g = gates.shift();
      assert.ok(g);
      g.resolve();
      await settle();
      assert.ok(active <= limit);
    }
    assert.equal(maxActive, limit);
    assert.deepEqual(pushed, ['0', '1', '2', '3', '4', '5', '6', '7', '8', '9']);
    await workers.stop();
  });

  it('a push waiting on its transport (a slow reader) frees its slot; its connection stays busy and merges later requests', async () => {
    const q = new PushQueue<Conn>();
    const transport = deferred();
    const seen: Array<[string, string[]]> = [];
    const workers = startPushWorkers(q, 1, (c, r) => {
      seen.push([c.id, keys(r)]);
      return c.id === 'slow' && seen.length === 1 ? { taken: transport.promise } : undefined;
    });
    const slow = conn('slow');
    q.enqueue(slow, req('1'));
    await settle();
    // The only slot is free again although the slow reader's response is not taken yet.
    q.enqueue(conn('fast'), req('2'));
    q.enqueue(slow, req('3'));
    q.enqueue(slow, req('4'));
    await settle();
    assert.deepEqual(seen, [
      ['slow', ['DestinationRule/default/1']],
      ['fast', ['DestinationRule/default/2']],
    ]);
    assert.equal(q.processing(), 1, 'the slow connection is still being pushed');
    transport.resolve();
    await settle();
    assert.deepEqual(
      seen.at(-1),
      ['slow', ['DestinationRule/default/3', 'DestinationRule/default/4']],
      'one merged push once the transport took the first',
    );
    await workers.stop();
  });

  it('merges requests that arrive while every slot is busy', async () => {
    const q = new PushQueue<Conn>();
    const gates: Deferred[] = [];
    const seen: Array<[string, string[]]> = [];
    const workers = startPushWorkers(q, 1, async (c, r) => {
      seen.push([c.id, keys(r)]);
      const g = deferred();
      gates.push(g);
      await g.promise;
    });
    const a = conn('a');
    const b = conn('b');
    q.enqueue(a, req('1'));
    await settle();
    q.enqueue(b, req('2'));
    q.enqueue(b, req('3'));
    q.enqueue(a, req('4'));
    q.enqueue(a, req('5'));
    gates.shift()!.resolve();
    await settle();
    gates.shift()!.resolve();
    await settle();
    gates.shift()!.resolve();
    await settle();
    assert.deepEqual(seen, [
      ['a', ['DestinationRule/default/1']],
      ['b', ['DestinationRule/default/2', 'DestinationRule/default/3']],
      ['a', ['DestinationRule/default/4', 'DestinationRule/default/5']],
    ]);
    assert.equal(gates.length, 0);
    await workers.stop();
  });

  it('a failing push is logged and the loop keeps going', async () => {
    const q = new PushQueue<Conn>();
    const lines: string[] = [];
    const ok: string[] = [];
    const workers = startPushWorkers(
      q,
      2,
      (c) => {
        if (c.id === 'sync-bad') throw new Error('sync failure');
        if (c.id === 'async-bad') return Promise.reject(new Error('async failure'));
        ok.push(c.id);
      },
      { logger: createLogger({ sink: (l) => lines.push(l) }) },
    );
    const bad = conn('sync-bad');
    for (const c of [bad, conn('async-bad'), conn('x'), conn('y')]) q.enqueue(c, req(c.id));
    await settle();
    assert.deepEqual(ok, ['x', 'y']);
    assert.equal(lines.length, 2);
    // The failed connection was marked done, so it can be pushed again.
    q.enqueue(bad, req('again'));
    await settle();
    assert.equal(lines.length, 3);
    assert.equal(q.processing(), 0);
    await workers.stop();
  });

  it('stop shuts the queue down and waits for running pushes', async () => {
    const q = new PushQueue<Conn>();
    const gate = deferred();
    let finished = false;
    const workers = startPushWorkers(q, 2, async () => {
      await gate.promise;
      finished = true;
    });
    q.enqueue(conn('a'), req('a'));
    await settle();
    assert.equal(workers.inFlight(), 1);
    let stopped = false;
    const s = workers.stop().then(() => (stopped = true));
    await settle();
    assert.equal(stopped, false, 'waits for the running push');
    gate.resolve();
    await s;
    assert.equal(finished, true);
    assert.equal(workers.inFlight(), 0);
    assert.equal(q.isShutdown(), true);
  });
});
