import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { boundedErrors, boundedString, ERROR_BOUNDS, errorsDigest } from './error-bounds.js';
import type { ConfigError } from './config.js';

describe('error bounds', () => {
  it('cuts a long string and says how much was cut', () => {
    const s = boundedString('x'.repeat(5000), 100);
    assert.equal(s, `${'x'.repeat(100)}…(4900 more characters)`);
    assert.equal(boundedString('short', 100), 'short');
  });

  it('bounds every string of an error and keeps the first errors with a summary', () => {
    const big = 'n'.repeat(1_000_000);
    const errors: ConfigError[] = Array.from({ length: 50 }, (_, i) => ({
      origin: { file: 'bad.yaml', line: i + 1 },
      kind: 'VirtualService',
      namespace: big,
      name: big,
      path: `spec.hosts[${i}]`,
      message: `invalid host ${big}`,
    }));
    const kept = boundedErrors(errors, 20);
    assert.equal(kept.length, 21);
    assert.equal(kept[0]?.origin.line, 1);
    assert.equal(kept[19]?.path, 'spec.hosts[19]');
    assert.deepEqual(kept[20], {
      origin: { file: 'bad.yaml', line: 21 },
      message: '30 more errors not shown (only the first 20 are kept)',
    });
    for (const e of kept.slice(0, 20)) {
      assert.ok(e.message.length <= ERROR_BOUNDS.maxMessageChars + 40, `message of ${e.message.length} characters`);
      assert.ok((e.name?.length ?? 0) <= ERROR_BOUNDS.maxFieldChars + 40);
      assert.ok((e.namespace?.length ?? 0) <= ERROR_BOUNDS.maxFieldChars + 40);
      assert.match(e.name ?? '', /…\(999488 more characters\)$/);
    }
  });

  it('digests equal error sets equally and different ones differently', () => {
    const a: ConfigError[] = [{ origin: { file: 'a.yaml', line: 1 }, message: 'm' }];
    assert.equal(errorsDigest(a), errorsDigest([{ origin: { file: 'a.yaml', line: 1 }, message: 'm' }]));
    assert.notEqual(errorsDigest(a), errorsDigest([{ origin: { file: 'a.yaml', line: 2 }, message: 'm' }]));
  });
});
