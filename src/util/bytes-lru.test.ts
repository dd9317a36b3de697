import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BytesLru } from './bytes-lru.js';

describe('BytesLru', () => {
  it('evicts the least recently used entries once their bytes pass the bound; a value over the bound is not kept', () => {
    const lru = new BytesLru<string, number>(10);
    lru.set('a', 1, 4);
    lru.set('b', 2, 4);
    assert.equal(lru.get('a'), 1, 'a is now the most recent');
    lru.set('c', 3, 4);
    assert.deepEqual([lru.get('a'), lru.get('b'), lru.get('c')], [1, undefined, 3]);
    lru.set('a', 4, 7);
    assert.deepEqual([lru.get('a'), lru.get('c')], [4, undefined], 'replacing a key counts its new size');
    lru.set('big', 5, 11);
    assert.deepEqual([lru.get('big'), lru.get('a')], [undefined, 4]);
  });
});
