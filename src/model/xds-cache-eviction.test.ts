/**
 * Batch LRU eviction (the xDS fuzzer's 60,000 made-up EDS names filled the cache, and evicting one
 * entry at a time made every later insert cost O(size); bench/soak.ts cache-evict has the figure).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { XdsCache } from './xds-cache.js';

test('a full cache evicts its oldest 1/16 at once, keeps recently used entries, and never exceeds its size', () => {
  const cache = new XdsCache(32);
  for (let i = 0; i < 32; i++) cache.getOrBuild(`k${i}`, () => i);
  cache.getOrBuild('k0', () => assert.fail('k0 is cached')); // k0 becomes the most recent
  cache.getOrBuild('k32', () => 32);
  assert.equal(cache.stats().size, 31);
  assert.equal(cache.stats().evictions, 2);
  assert.ok(!cache.has('k1') && !cache.has('k2'), 'the two least recently used are gone');
  assert.ok(cache.has('k0') && cache.has('k3') && cache.has('k32'));
  for (let i = 33; i < 1000; i++) {
    cache.getOrBuild(`k${i}`, () => i);
    assert.ok(cache.stats().size <= 32);
  }
  assert.ok(cache.has('k999'));
});
