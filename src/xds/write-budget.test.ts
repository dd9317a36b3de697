import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WriteBudget } from './write-budget.js';

const settled = async (p: Promise<unknown>): Promise<boolean> => {
  let done = false;
  void p.then(() => (done = true));
  await new Promise((r) => setImmediate(r));
  return done;
};

describe('WriteBudget', () => {
  it('grants what fits at once and makes the rest wait, in arrival order', async () => {
    const b = new WriteBudget(100);
    const r1 = await b.acquire(60);
    const p2 = b.acquire(50);
    const p3 = b.acquire(10);
    assert.equal(await settled(p2), false, 'does not fit');
    assert.equal(await settled(p3), false, 'fits, but may not overtake the older waiter');
    assert.deepEqual(b.stats(), { used: 60, peak: 60, waiting: 2 });
    r1();
    r1(); // a second release gives back nothing
    assert.equal(await settled(p2), true);
    assert.equal(await settled(p3), true);
    assert.deepEqual(b.stats(), { used: 60, peak: 60, waiting: 0 });
  });

  it('lets a response larger than the budget go alone', async () => {
    const b = new WriteBudget(10);
    const big = await b.acquire(1000);
    const small = b.acquire(1);
    assert.equal(await settled(small), false);
    big();
    assert.equal(await settled(small), true);
    assert.equal(b.stats().peak, 1000);
  });

  it('refuses a limit that is not a positive integer', () => {
    assert.throws(() => new WriteBudget(0), /positive integer/);
  });
});
