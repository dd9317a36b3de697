import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { FakeClock } from '../../test/fake-clock.js';
import { createLogger, silentLogger } from '../util/log.js';
import { createStreamGate, tokenBucket } from './stream-limiter.js';

describe('tokenBucket (burst 1)', () => {
  it('grants the first token at once, then one per 1/rate; waitMs says when the next is due', () => {
    const b = tokenBucket(5); // 200 ms apart
    assert.equal(b.take(0), true);
    assert.equal(b.take(0), false);
    assert.equal(b.waitMs(0), 200);
    assert.equal(b.waitMs(150), 50);
    assert.equal(b.take(199), false, 'a refused take reserves nothing');
    assert.equal(b.take(200), true);
    assert.equal(b.waitMs(200), 200);
  });

  it('does not accumulate burst while idle (burst is 1)', () => {
    const b = tokenBucket(10);
    assert.equal(b.take(0), true);
    assert.equal(b.take(60_000), true);
    assert.equal(b.take(60_000), false, 'a second token at the same instant would need a wait');
    assert.equal(b.waitMs(60_000), 100);
    assert.equal(b.take(60_100), true);
  });

  it('rejects a non-positive rate', () => {
    assert.throws(() => tokenBucket(0), RangeError);
    assert.throws(() => tokenBucket(-1), RangeError);
  });
});

/** Just enough of a grpc-js ServerDuplexStream for the gate: events, peer, path, the error → status path. */
class FakeCall extends EventEmitter {
  status: { code: number; details: string } | undefined;
  constructor(readonly peer: string) {
    super();
    // grpc-js's ServerDuplexStreamImpl turns an emitted error into the call's status.
    this.on('error', (e: { code: number; details: string }) => {
      this.status = { code: e.code, details: e.details };
      this.emit('finish');
    });
  }
  getPeer(): string {
    return this.peer;
  }
  /** A response (the gate watches the first one). */
  write(): boolean {
    return true;
  }
  getPath(): string {
    return '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources';
  }
}

function asCall(c: FakeCall): grpc.ServerDuplexStream<unknown, unknown> {
  return c as unknown as grpc.ServerDuplexStream<unknown, unknown>;
}

describe('createStreamGate', () => {
  it('a storm waits in arrival order and is admitted at the rate: none refused, however long the wait', () => {
    const clock = new FakeClock(0);
    const gate = createStreamGate({ maxRequestsPerSecond: 5, clock, logger: silentLogger });
    const seen: string[] = [];
    const wrapped = gate.wrap((call) => void seen.push(call.getPeer()));
    const calls = Array.from({ length: 20 }, (_, i) => new FakeCall(`p${i}`));
    for (const c of calls) wrapped(asCall(c));
    assert.deepEqual(seen, ['p0'], 'only the first is admitted at once');
    assert.deepEqual(gate.stats(), {
      admitted: 1,
      rateLimited: 0,
      refusedDraining: 0,
      abandoned: 0,
      waiting: 19,
      active: 1,
      queued: 19,
      maxWaitedMs: 0,
      admittedEarly: 0,
    });
    clock.advance(1000);
    assert.deepEqual(seen, ['p0', 'p1', 'p2', 'p3', 'p4', 'p5'], 'one per 200 ms, in arrival order');
    // istiod would have refused p6..p19 (over 1 s of wait); here they keep their place.
    clock.advance(2800);
    assert.deepEqual(
      seen,
      calls.map((c) => c.peer),
    );
    assert.ok(
      calls.every((c) => c.status === undefined),
      'nobody refused',
    );
    assert.equal(gate.stats().maxWaitedMs, 3800);
    assert.equal(gate.stats().waiting, 0);
    assert.equal(clock.pendingTimers(), 0, 'no timer left once the queue is empty');
    // A later stream after the queue emptied: admitted at once when its token is due.
    clock.advance(200);
    const late = new FakeCall('late');
    wrapped(asCall(late));
    assert.equal(seen.at(-1), 'late');
  });

  it('maxWarming: admits ahead of the tokens while few admitted streams await their first response', () => {
    const clock = new FakeClock(0);
    const gate = createStreamGate({ maxRequestsPerSecond: 1, maxWarming: 2, clock, logger: silentLogger });
    const seen: FakeCall[] = [];
    const wrapped = gate.wrap((call) => void seen.push(call as unknown as FakeCall));
    const calls = Array.from({ length: 6 }, (_, i) => new FakeCall(`p${i}`));
    for (const c of calls) wrapped(asCall(c));
    const peers = (): string[] => seen.map((c) => c.peer);
    assert.deepEqual(peers(), ['p0', 'p1'], 'p0 on its token, p1 because only p0 was warming');
    seen[0]?.write();
    assert.deepEqual(peers(), ['p0', 'p1', 'p2'], 'p0 answered: one more may warm up');
    seen[0]?.write();
    assert.deepEqual(peers(), ['p0', 'p1', 'p2'], 'only the first response counts');
    seen[1]?.write();
    seen[2]?.write();
    assert.deepEqual(peers(), ['p0', 'p1', 'p2', 'p3', 'p4']);
    // p3 and p4 never answer: after WARM_UP_MAX_MS they stop counting (and the token is due).
    clock.advance(1000);
    assert.deepEqual(
      peers(),
      calls.map((c) => c.peer),
    );
    assert.equal(gate.stats().admittedEarly, 4);
    assert.equal(gate.stats().waiting, 0);
    clock.advance(5000);
    assert.equal(clock.pendingTimers(), 0);
  });

  it('refuses with RESOURCE_EXHAUSTED only when maxWaiting streams already wait; warns at most once a second', () => {
    const clock = new FakeClock(0);
    const lines: string[] = [];
    const gate = createStreamGate({
      maxRequestsPerSecond: 5,
      maxWaiting: 3,
      clock,
      logger: createLogger({ level: 'debug', sink: (l) => lines.push(l) }),
    });
    const seen: string[] = [];
    const wrapped = gate.wrap((call) => void seen.push(call.getPeer()));
    const calls = Array.from({ length: 7 }, (_, i) => new FakeCall(`p${i}`));
    for (const c of calls) wrapped(asCall(c));
    assert.deepEqual(seen, ['p0']);
    const refused = calls.filter((c) => c.status?.code === grpc.status.RESOURCE_EXHAUSTED).map((c) => c.peer);
    assert.deepEqual(refused, ['p4', 'p5', 'p6'], 'p1..p3 wait; the queue is full after them');
    assert.match(calls[4]?.status?.details ?? '', /3 streams already waiting/);
    assert.equal(gate.stats().rateLimited, 3);
    const warns = lines.map((l) => JSON.parse(l) as { level: string; msg: string }).filter((l) => l.level === 'warn');
    assert.equal(warns.length, 1, 'one warn per second at most');
    clock.advance(600);
    assert.deepEqual(seen, ['p0', 'p1', 'p2', 'p3']);
  });

  it('a stream cancelled while waiting leaves the queue, uses no token and never reaches the handler', () => {
    const clock = new FakeClock(0);
    const gate = createStreamGate({ maxRequestsPerSecond: 1, clock, logger: silentLogger });
    const seen: string[] = [];
    const wrapped = gate.wrap((call) => void seen.push(call.getPeer()));
    wrapped(asCall(new FakeCall('a')));
    const b = new FakeCall('b');
    wrapped(asCall(b)); // waits for the token at 1000 ms
    const c = new FakeCall('c');
    wrapped(asCall(c)); // behind b
    b.emit('cancelled');
    clock.advance(1000);
    assert.deepEqual(seen, ['a', 'c'], 'c takes the token b would have had');
    assert.equal(gate.stats().abandoned, 1);
    assert.equal(gate.stats().waiting, 0);
  });

  it('drain refuses new and waiting streams with UNAVAILABLE; closeAll ends admitted ones with a status', async () => {
    const clock = new FakeClock(0);
    const gate = createStreamGate({ maxRequestsPerSecond: 1, clock, logger: silentLogger });
    const wrapped = gate.wrap(() => {});
    const a = new FakeCall('a');
    const b = new FakeCall('b');
    wrapped(asCall(a));
    wrapped(asCall(b));
    gate.drain();
    assert.equal(b.status?.code, grpc.status.UNAVAILABLE, 'the waiting stream is failed');
    const c = new FakeCall('c');
    wrapped(asCall(c));
    assert.equal(c.status?.code, grpc.status.UNAVAILABLE);
    assert.equal(a.status, undefined, 'admitted streams keep running until closeAll');
    const idle = gate.idle();
    assert.equal(gate.closeAll(grpc.status.UNAVAILABLE, 'server is shutting down'), 1);
    assert.deepEqual(a.status, { code: grpc.status.UNAVAILABLE, details: 'server is shutting down' });
    await idle;
    clock.advance(5000);
    assert.equal(gate.stats().admitted, 1);
    assert.equal(clock.pendingTimers(), 0);
  });

  it('wrapService wraps bidi methods only', () => {
    const gate = createStreamGate({ maxRequestsPerSecond: 100, logger: silentLogger, clock: new FakeClock(0) });
    const unary = (): void => {};
    const bidi = (): void => {};
    const def = {
      Unary: {
        path: '/s/Unary',
        requestStream: false,
        responseStream: false,
        requestSerialize: String,
        requestDeserialize: String,
        responseSerialize: String,
        responseDeserialize: String,
      },
      Bidi: {
        path: '/s/Bidi',
        requestStream: true,
        responseStream: true,
        requestSerialize: String,
        requestDeserialize: String,
        responseSerialize: String,
        responseDeserialize: String,
      },
    } as unknown as grpc.ServiceDefinition;
    const out = gate.wrapService(def, { Unary: unary, Bidi: bidi });
    assert.equal(out.Unary, unary);
    assert.notEqual(out.Bidi, bidi);
  });
});
