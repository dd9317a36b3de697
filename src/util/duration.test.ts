import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseDurationMs } from './duration.js';

describe('parseDurationMs', () => {
  it('reads Go durations, compound ones included; a bare number is ms', () => {
    assert.equal(parseDurationMs('100ms', 'x'), 100);
    assert.equal(parseDurationMs('10s', 'x'), 10_000);
    assert.equal(parseDurationMs('30m0s', 'x'), 1_800_000);
    assert.equal(parseDurationMs('1m30s', 'x'), 90_000);
    assert.equal(parseDurationMs('1.5h', 'x'), 5_400_000);
    assert.equal(parseDurationMs('250', 'x'), 250);
    for (const bad of ['', 'abc', '10 s', '5d', 's', '1m30']) assert.throws(() => parseDurationMs(bad, '--f'), /--f: .* is not a duration/);
  });
});
