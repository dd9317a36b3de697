import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { FakeClock } from '../../test/fake-clock.js';
import { createLogger, silentLogger } from '../util/log.js';
import { createStreamGate, tokenBucket, type BidiHandler } from './stream-limiter.js';

describe('tokenBucket (burst 1)', () => {
  it('grants the first token at once, then one per 1/rate, refusing past the wait bound without reserving', () => {
    const b = tokenBucket(5); // 200 ms apart
    assert.equal(b.reserve(0, 1000)?.delayMs, 0);
    assert.equal(b.reserve(0, 1000)?.delayMs, 200);
    assert.equal(b.reserve(0, 1000)?.delayMs, 400);
    assert.equal(b.reserve(0, 1000)?.delayMs, 600);
    assert.equal(b.reserve(0, 1000)?.delayMs, 800);
    assert.equal(b.reserve(0, 1000)?.delayMs, 1000);
    assert.equal(b.reserve(0, 1000), undefined, 'would wait 1200 ms');
    assert.equal(b.reserve(0, 1000), undefined, 'a refusal reserves nothing');
    // Later, the queue has moved on: the next slot is at 1200.
    assert.equal(b.reserve(500, 1000)?.delayMs, 700);
  });

  it('does not accumulate burst while idle (burst is 1)', () => {
    const b = tokenBucket(10);
    assert.equal(b.reserve(0, 0)?.delayMs, 0);
    assert.equal(b.reserve(60_000, 0)?.delayMs, 0);
    assert.equal(b.reserve(60_000, 0), undefined, 'a second token at the same instant would need a wait');
    assert.equal(b.reserve(60_100, 0)?.delayMs, 0);
  });

  it('cancel gives back the last slot only', () => {
    const b = tokenBucket(1);
    b.reserve(0, 5000);
    const second = b.reserve(0, 5000);
    assert.equal(second?.delayMs, 1000);
    second?.cancel();
    assert.equal(b.reserve(0, 5000)?.delayMs, 1000, 'the slot at 1000 is free again');
    const stale = b.reserve(0, 5000); // 2000
    b.reserve(0, 5000); // 3000
    stale?.cancel(); // a later slot depends on the timeline: no-op
    assert.equal(b.reserve(0, 5000)?.delayMs, 4000);
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
  getPath(): string {
    return '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources';
  }
}

function asCall(c: FakeCall): grpc.ServerDuplexStream<unknown, unknown> {
  return c as unknown as grpc.ServerDuplexStream<unknown, unknown>;
}

describe('createStreamGate', () => {
  it('admits at the rate, waits up to 1 s, refuses the rest with RESOURCE_EXHAUSTED before the handler sees them', () => {
    const clock = new FakeClock(0);
    const lines: string[] = [];
    const gate = createStreamGate({ maxRequestsPerSecond: 5, clock, logger: createLogger({ level: 'debug', sink: (l) => lines.push(l) }) });
    const seen: string[] = [];
    const handler: BidiHandler<unknown, unknown> = (call) => void seen.push(call.getPeer());
    const wrapped = gate.wrap(handler);
    const calls = Array.from({ length: 10 }, (_, i) => new FakeCall(`p${i}`));
    for (const c of calls) wrapped(asCall(c));

    assert.deepEqual(seen, ['p0'], 'only the first is admitted at once');
    const refused = calls.filter((c) => c.status?.code === grpc.status.RESOURCE_EXHAUSTED).map((c) => c.peer);
    assert.deepEqual(refused, ['p6', 'p7', 'p8', 'p9'], 'slots 0..1000 ms are taken by p0..p5');
    assert.match(calls[6]?.status?.details ?? '', /rate limit exceeded/);
    assert.deepEqual(gate.stats(), { admitted: 1, rateLimited: 4, refusedDraining: 0, abandoned: 0, waiting: 5, active: 1 });

    clock.advance(1000);
    assert.deepEqual(seen, ['p0', 'p1', 'p2', 'p3', 'p4', 'p5']);
    assert.equal(gate.stats().active, 6);

    const warns = lines.map((l) => JSON.parse(l) as { level: string; msg: string }).filter((l) => l.level === 'warn');
    assert.equal(warns.length, 1, 'one warn per second at most');
    const debugs = lines.filter((l) => l.includes('"level":"debug"') && l.includes('rate limit'));
    assert.equal(debugs.length, 4, 'every refusal at debug');
  });

  it('a stream cancelled while waiting gives its slot back and never reaches the handler', () => {
    const clock = new FakeClock(0);
    const gate = createStreamGate({ maxRequestsPerSecond: 1, clock, logger: silentLogger });
    const seen: string[] = [];
    const wrapped = gate.wrap((call) => void seen.push(call.getPeer()));
    wrapped(asCall(new FakeCall('a')));
    const b = new FakeCall('b');
    wrapped(asCall(b)); // waits 1000 ms
    b.emit('cancelled');
    const c = new FakeCall('c');
    wrapped(asCall(c)); // takes b's slot
    clock.advance(1000);
    assert.deepEqual(seen, ['a', 'c']);
    assert.equal(gate.stats().abandoned, 1);
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
      Unary: { path: '/s/Unary', requestStream: false, responseStream: false, requestSerialize: String, requestDeserialize: String, responseSerialize: String, responseDeserialize: String },
      Bidi: { path: '/s/Bidi', requestStream: true, responseStream: true, requestSerialize: String, requestDeserialize: String, responseSerialize: String, responseDeserialize: String },
    } as unknown as grpc.ServiceDefinition;
    const out = gate.wrapService(def, { Unary: unary, Bidi: bidi });
    assert.equal(out.Unary, unary);
    assert.notEqual(out.Bidi, bidi);
  });
});
