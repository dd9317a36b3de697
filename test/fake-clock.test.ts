import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from './fake-clock.js';

describe('FakeClock', () => {
  it('fires due timers in due-time order, ties in creation order, with now() at the due time', () => {
    const c = new FakeClock(100);
    const log: string[] = [];
    c.setTimeout(() => log.push(`b@${c.now()}`), 20);
    c.setTimeout(() => log.push(`a@${c.now()}`), 10);
    c.setTimeout(() => log.push(`b2@${c.now()}`), 20);
    c.advance(15);
    assert.deepEqual(log, ['a@110']);
    assert.equal(c.now(), 115);
    c.advance(5);
    assert.deepEqual(log, ['a@110', 'b@120', 'b2@120']);
  });

  it('fires timers set while advancing when they fall inside the window; clearTimeout cancels', () => {
    const c = new FakeClock();
    const log: number[] = [];
    c.setTimeout(() => c.setTimeout(() => log.push(c.now()), 5), 5);
    const h = c.setTimeout(() => log.push(-1), 7);
    c.clearTimeout(h);
    c.advance(10);
    assert.deepEqual(log, [10]);
    assert.equal(c.pendingTimers(), 0);
  });
});
