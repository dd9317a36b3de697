import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HeldResources } from './held-resources.js';
import type { XdsResource } from './resource.js';

const res = (name: string, version: string): XdsResource => ({ name, version, typeUrl: 'test', value: new Uint8Array(), any: new Uint8Array() });

test('a held list is the same as itself, a reordered copy, and not a list with another version or size', () => {
  const list = [res('a', '1'), res('b', '1')];
  const held = HeldResources.of(list);
  assert.equal(held.sameAs(list), true);
  assert.equal(held.sameAs([res('b', '1'), res('a', '1')]), true);
  assert.equal(held.sameAs([res('a', '1'), res('b', '2')]), false);
  assert.equal(held.sameAs([res('a', '1')]), false);
  assert.equal(held.sameAs([res('a', '1'), res('b', '1'), res('c', '1')]), false);
});

test('an EDS-only patch replaces and adds versions without touching the shared list', () => {
  const list = [res('a', '1'), res('b', '1')];
  const held = HeldResources.of(list).with([res('b', '2'), res('c', '1')]);
  assert.equal(held.version('a'), '1');
  assert.equal(held.version('b'), '2');
  assert.equal(held.version('c'), '1');
  assert.equal(held.version('d'), undefined);
  assert.equal(list[1]?.version, '1');
  assert.equal(held.sameAs([res('c', '1'), res('a', '1'), res('b', '2')]), true);
  assert.equal(held.sameAs(list), false);
  assert.equal(held.sameAs([res('a', '1'), res('b', '2')]), false);
});
