import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseGoDuration, protoDurationJson } from './durations.js';

test('Go durations, as istiod reads them', () => {
  const cases: [string, bigint | undefined][] = [
    ['0', 0n],
    ['5s', 5_000_000_000n],
    ['30ms', 30_000_000n],
    ['3m', 180_000_000_000n],
    ['1h30m', 5_400_000_000_000n],
    ['1.5s', 1_500_000_000n],
    ['.5s', 500_000_000n],
    ['100us', 100_000n],
    ['100µs', 100_000n],
    ['-2s', -2_000_000_000n],
    ['0.000000001s', 1n],
    ['', undefined],
    ['5', undefined],
    ['5x', undefined],
    ['s', undefined],
    ['1s ', undefined],
    ['9999999999h', undefined],
  ];
  for (const [text, nanos] of cases) assert.equal(parseGoDuration(text), nanos, text);
});

test('proto3 JSON form', () => {
  assert.equal(protoDurationJson(0n), '0s');
  assert.equal(protoDurationJson(180_000_000_000n), '180s');
  assert.equal(protoDurationJson(30_000_000n), '0.030s');
  assert.equal(protoDurationJson(1_000_100_000n), '1.000100s');
  assert.equal(protoDurationJson(1n), '0.000000001s');
  assert.equal(protoDurationJson(-1_500_000_000n), '-1.500s');
});
