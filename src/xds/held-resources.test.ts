import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HeldResources } from './held-resources.js';
import { joinResources, type XdsResource } from './resource.js';

const res = (name: string, version: string): XdsResource => ({
  name,
  version,
  typeUrl: 'test',
  value: new Uint8Array(),
  any: new Uint8Array(),
  entry: new Uint8Array(),
});

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

test('changedIn: the names a new list changes or adds; for lists joined from a shared head, one answer per head pair', () => {
  const head = [res('a', '1'), res('b', '1')];
  const head2 = [res('a', '1'), res('b', '2'), res('n', '1')];
  const [own1, own2] = [[res('in|1', '1')], [res('in|2', '1')]];
  const [p1, p2] = [HeldResources.of(joinResources(head, own1)), HeldResources.of(joinResources(head, own2))];
  const c1 = p1.changedIn(joinResources(head2, own1));
  assert.deepEqual([...c1].sort(), ['b', 'n']);
  assert.equal(p2.changedIn(joinResources(head2, own2)), c1, 'shared between proxies with their own tails');
  assert.deepEqual(
    [...p1.changedIn(joinResources(head2, [res('in|1', '2')]))].sort(),
    ['b', 'in|1', 'n'],
    'a changed tail is compared whole',
  );
  assert.deepEqual(
    [
      ...HeldResources.of(head)
        .with([res('b', '2')])
        .changedIn(head2),
    ],
    ['n'],
  );
});
