import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { flushMicrotasks } from '../../test/fake-clock.js';
import { MeshError } from '../util/errors.js';
import { Semaphore } from './semaphore.js';

describe('Semaphore', () => {
  it('admits up to limit holders and serves waiters FIFO', async () => {
    const s = new Semaphore(2);
    await s.acquire();
    await s.acquire();
    assert.equal(s.tryAcquire(), false);
    const order: number[] = [];
    const w1 = s.acquire().then(() => order.push(1));
    const w2 = s.acquire().then(() => order.push(2));
    assert.equal(s.waiting(), 2);
    s.release();
    await w1;
    assert.equal(s.tryAcquire(), false, 'the released slot went to the waiter');
    s.release();
    await w2;
    assert.deepEqual(order, [1, 2]);
    s.release();
    s.release();
    assert.equal(s.held(), 0);
    await flushMicrotasks();
  });

  it('rejects bad limits and over-release', () => {
    assert.throws(() => new Semaphore(0), MeshError);
    assert.throws(() => new Semaphore(1.5), MeshError);
    const s = new Semaphore(1);
    assert.throws(() => s.release(), MeshError);
  });
});
