import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { backoffDelayMs, jitterOffset, rotationDelayMs } from './rotation.js';

describe('rotationDelayMs', () => {
  const H = 3_600_000;

  it('renews when the grace-period ratio of the lifetime is left (0.5 → half way)', () => {
    assert.equal(rotationDelayMs(0, 24 * H, 0, 0.5), 12 * H);
    assert.equal(rotationDelayMs(0, 24 * H, 0, 0.25), 18 * H);
    assert.equal(rotationDelayMs(0, 24 * H, 0, 0.75), 6 * H);
  });

  it('counts from now, and is 0 once due or past expiry', () => {
    assert.equal(rotationDelayMs(0, 24 * H, 10 * H, 0.5), 2 * H);
    assert.equal(rotationDelayMs(0, 24 * H, 13 * H, 0.5), 0);
    assert.equal(rotationDelayMs(0, 24 * H, 30 * H, 0.5), 0);
  });

  it('applies a jitter offset to the ratio', () => {
    assert.equal(rotationDelayMs(0, 100_000, 0, 0.5, 0.01), 49_000);
    assert.equal(rotationDelayMs(0, 100_000, 0, 0.5, -0.01), 51_000);
  });
});

describe('jitterOffset', () => {
  it('spans [-jitter, +jitter]', () => {
    assert.equal(
      jitterOffset(0.01, () => 0),
      -0.01,
    );
    assert.equal(
      jitterOffset(0.01, () => 0.5),
      0,
    );
    assert.ok(Math.abs(jitterOffset(0.01, () => 0.999999) - 0.01) < 1e-6);
  });
});

describe('backoffDelayMs', () => {
  it('doubles per attempt up to the maximum, with the upper half jittered', () => {
    const top = (): number => 1 - Number.EPSILON;
    assert.deepEqual(
      [0, 1, 2, 3, 4, 10].map((n) => backoffDelayMs(n, 500, 4000, top)),
      [500, 1000, 2000, 4000, 4000, 4000],
    );
    assert.deepEqual(
      [0, 1, 2].map((n) => backoffDelayMs(n, 500, 4000, () => 0)),
      [250, 500, 1000],
    );
  });

  it('never overflows for large attempt counts', () => {
    assert.equal(
      backoffDelayMs(5000, 500, 30_000, () => 0.5),
      22_500,
    );
  });
});
