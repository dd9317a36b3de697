import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Backoff } from './backoff.js';

test('backoff doubles up to its ceiling, with jitter on top, and starts over after reset', () => {
  const b = new Backoff({ initialMs: 100, maxMs: 1000, jitter: 0 });
  assert.deepEqual(
    [1, 2, 3, 4, 5, 6].map(() => b.next()),
    [100, 200, 400, 800, 1000, 1000],
  );
  b.reset();
  assert.equal(b.next(), 100);
  const j = new Backoff({ initialMs: 100, maxMs: 1000, jitter: 0.5 });
  for (let i = 0; i < 20; i++) {
    const d = j.next();
    assert.ok(d >= 100 && d <= 1000, String(d));
  }
});
