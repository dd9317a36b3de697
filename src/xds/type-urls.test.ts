import { test } from 'node:test';
import assert from 'node:assert/strict';
import { shortType, TypeUrl } from './type-urls.js';

test('shortType: served types get istiod short names, any other string comes back as it is', () => {
  assert.equal(shortType(TypeUrl.Cluster), 'CDS');
  assert.equal(shortType(TypeUrl.NameTable), 'NDS');
  assert.equal(shortType('type.googleapis.com/garbage'), 'type.googleapis.com/garbage');
  // The xDS fuzzer's counterexample: these found Object.prototype members, and the request failed.
  for (const t of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) assert.equal(shortType(t), t);
});
