import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { deferred, FakeClock, flushMicrotasks, type Deferred } from '../../test/fake-clock.js';
import { pushRequest, type PushRequest } from '../model/push-request.js';
import { createLogger } from '../util/log.js';
import { startDebounce, type DebounceOptions } from './debounce.js';

interface Pushed {
  readonly req: PushRequest;
  readonly debouncedMs: number;
  readonly events: number;
  readonly at: number;
}

/** A debouncer on a fake clock whose pushes are recorded; `hold` makes each push wait on a Deferred. */
function setup(opts: DebounceOptions = {}, hold = false) {
  const clock = new FakeClock(1000);
  const pushes: Pushed[] = [];
  const gates: Deferred[] = [];
  const d = startDebounce(
    (req, debouncedMs, events) => {
      pushes.push({ req, debouncedMs, events, at: clock.now() });
      if (!hold) return;
      const g = deferred();
      gates.push(g);
      return g.promise;
    },
    { clock, ...opts },
  );
  return { clock, pushes, gates, d };
}

const cfg = (name: string, start: number, full = true): PushRequest =>
  pushRequest({ full, configsUpdated: [`VirtualService/default/${name}`], reason: full ? 'config' : 'endpoint', start });

describe('startDebounce', () => {
  it('counts the time since an event happened (before it was enqueued) towards the quiet period', async () => {
    const { clock, pushes, d } = setup();
    // Seen by its source 40 ms ago (a file settled before it was read): 60 ms of quiet remain.
    d.enqueue(cfg('a', clock.now() - 40), clock.now() - 40);
    clock.advance(59);
    assert.equal(pushes.length, 0);
    clock.advance(1);
    await flushMicrotasks();
    assert.equal(pushes.length, 1);
    assert.equal(pushes[0]!.debouncedMs, 100);
    // Older than the quiet period: pushed at once. A later event still restarts the wait.
    d.enqueue(cfg('b', clock.now() - 500), clock.now() - 500);
    clock.advance(0);
    await flushMicrotasks();
    assert.equal(pushes.length, 2);
    d.enqueue(cfg('c', clock.now() - 30), clock.now() - 30);
    clock.advance(10);
    d.enqueue(cfg('d', clock.now()));
    clock.advance(99);
    assert.equal(pushes.length, 2, 'the event without a time restarted the quiet period');
    clock.advance(1);
    await flushMicrotasks();
    assert.equal(pushes.length, 3);
  });

  it('merges several events into one push after the quiet period', async () => {
    const { clock, pushes, d } = setup();
    d.enqueue(cfg('a', clock.now()));
    clock.advance(30);
    d.enqueue(cfg('b', clock.now(), false));
    clock.advance(30);
    d.enqueue(cfg('c', clock.now()));
    assert.equal(d.pendingEvents(), 3);
    clock.advance(99);
    assert.equal(pushes.length, 0, 'still within 100ms of the last event');
    clock.advance(1);
    await flushMicrotasks();
    assert.equal(pushes.length, 1);
    const p = pushes[0]!;
    assert.equal(p.events, 3);
    assert.equal(p.req.full, true);
    assert.equal(p.req.start, 1000);
    assert.deepEqual([...p.req.configsUpdated].sort(), [
      'VirtualService/default/a',
      'VirtualService/default/b',
      'VirtualService/default/c',
    ]);
    assert.deepEqual(
      new Map(p.req.reason),
      new Map([
        ['config', 2],
        ['endpoint', 1],
      ]),
    );
    assert.equal(p.at, 1160);
    assert.equal(p.debouncedMs, 160);
    assert.equal(d.pendingEvents(), 0);
    clock.advance(10_000);
    assert.equal(pushes.length, 1, 'nothing more to push');
  });

  it('each event restarts the quiet period', () => {
    const { clock, pushes, d } = setup({ debounceAfter: 100 });
    for (let i = 0; i < 5; i++) {
      d.enqueue(cfg(`x${i}`, clock.now()));
      clock.advance(90);
    }
    assert.equal(pushes.length, 0);
    clock.advance(10);
    assert.equal(pushes.length, 1);
    assert.equal(pushes[0]!.at, 1000 + 4 * 90 + 100);
    assert.equal(pushes[0]!.events, 5);
  });

  it('caps the wait at debounceMax under a continuous stream of events', async () => {
    const { clock, pushes, d } = setup({ debounceAfter: 100, debounceMax: 1000 });
    // An event every 50ms never leaves 100ms of quiet.
    for (let t = 0; t < 2500; t += 50) {
      d.enqueue(cfg(`e${t}`, clock.now()));
      clock.advance(50);
      await flushMicrotasks();
    }
    assert.deepEqual(
      pushes.map((p) => p.at),
      [2000, 3000],
    );
    assert.equal(pushes[0]!.debouncedMs, 1000);
    assert.equal(pushes[0]!.events, 20);
    assert.equal(pushes[1]!.events, 20);
    assert.equal(pushes[1]!.req.start, 2000);
  });

  it('keeps one push in flight; events during it produce exactly one merged follow-up', async () => {
    const { clock, pushes, gates, d } = setup({}, true);
    d.enqueue(cfg('a', clock.now()));
    clock.advance(100);
    assert.equal(pushes.length, 1);
    assert.equal(d.inFlight(), true);

    d.enqueue(cfg('b', clock.now()));
    clock.advance(500);
    d.enqueue(cfg('c', clock.now(), false));
    clock.advance(5_000);
    assert.equal(pushes.length, 1, 'no second push while the first is pending');

    gates[0]!.resolve();
    await flushMicrotasks();
    assert.equal(pushes.length, 2, 'quiet long enough: follow-up fires as soon as the first settles');
    const follow = pushes[1]!;
    assert.equal(follow.events, 2);
    assert.deepEqual([...follow.req.configsUpdated].sort(), ['VirtualService/default/b', 'VirtualService/default/c']);
    assert.equal(follow.req.full, true);

    gates[1]!.resolve();
    await flushMicrotasks();
    clock.advance(20_000);
    assert.equal(pushes.length, 2);
    assert.equal(d.inFlight(), false);
  });

  it('debounces the follow-up again when events are recent at settle time', async () => {
    const { clock, pushes, gates, d } = setup({}, true);
    d.enqueue(cfg('a', clock.now()));
    clock.advance(100);
    clock.advance(200);
    d.enqueue(cfg('b', clock.now()));
    clock.advance(40);
    gates[0]!.resolve();
    await flushMicrotasks();
    assert.equal(pushes.length, 1, 'only 40ms of quiet when the first push settled');
    clock.advance(59);
    assert.equal(pushes.length, 1);
    clock.advance(1);
    assert.equal(pushes.length, 2);
    assert.equal(pushes[1]!.at, 1000 + 300 + 100);
  });

  it('keeps working after a push throws or rejects, and logs it', async () => {
    const clock = new FakeClock();
    const lines: string[] = [];
    let calls = 0;
    const d = startDebounce(
      () => {
        calls++;
        if (calls === 1) throw new Error('boom');
        if (calls === 2) return Promise.reject(new Error('later boom'));
      },
      { clock, logger: createLogger({ sink: (l) => lines.push(l) }) },
    );
    for (let i = 0; i < 3; i++) {
      d.enqueue(cfg(`r${i}`, clock.now()));
      clock.advance(100);
      await flushMicrotasks();
    }
    assert.equal(calls, 3);
    assert.equal(lines.length, 2);
    assert.match(lines[0]!, /boom/);
    assert.match(lines[1]!, /later boom/);
  });

  it('pushes EDS-only requests at once when EDS debounce is disabled', async () => {
    const { clock, pushes, gates, d } = setup({ enableEDSDebounce: false }, true);
    d.enqueue(cfg('full', clock.now()));
    clock.advance(100);
    assert.equal(pushes.length, 1);
    // Even with a full push in flight, an EDS request goes out without waiting.
    d.enqueue(cfg('eds1', clock.now(), false));
    d.enqueue(cfg('eds2', clock.now(), false));
    await flushMicrotasks();
    assert.equal(pushes.length, 3);
    assert.deepEqual(
      pushes.slice(1).map((p) => [p.req.full, p.events, p.debouncedMs]),
      [
        [false, 1, 0],
        [false, 1, 0],
      ],
    );
    assert.equal(d.pendingEvents(), 0, 'EDS requests are not batched');
    for (const g of gates) g.resolve();
  });

  it('debounces EDS-only requests by default', async () => {
    const { clock, pushes, d } = setup();
    d.enqueue(cfg('eds', clock.now(), false));
    await flushMicrotasks();
    assert.equal(pushes.length, 0);
    clock.advance(100);
    assert.equal(pushes.length, 1);
    assert.equal(pushes[0]!.req.full, false);
  });

  it('stop cancels the pending batch and ignores later events', async () => {
    const { clock, pushes, d } = setup();
    d.enqueue(cfg('a', clock.now()));
    assert.equal(clock.pendingTimers(), 1);
    d.stop();
    assert.equal(clock.pendingTimers(), 0);
    d.enqueue(cfg('b', clock.now()));
    clock.advance(20_000);
    await flushMicrotasks();
    assert.equal(pushes.length, 0);
    assert.equal(d.pendingEvents(), 0);
  });

  it('runs on the real clock by default', async () => {
    // No timing assertion: only that a push eventually arrives with the default clock.
    const got = deferred<PushRequest>();
    const d = startDebounce((req) => got.resolve(req), { debounceAfter: 1 });
    d.enqueue(cfg('real', 0));
    assert.equal((await got.promise).configsUpdated.size, 1);
    d.stop();
  });

  it('stop during a push drops the follow-up', async () => {
    const { clock, pushes, gates, d } = setup({}, true);
    d.enqueue(cfg('a', clock.now()));
    clock.advance(100);
    d.enqueue(cfg('b', clock.now()));
    d.stop();
    gates[0]!.resolve();
    await flushMicrotasks();
    clock.advance(20_000);
    assert.equal(pushes.length, 1);
    assert.equal(clock.pendingTimers(), 0);
  });
});
