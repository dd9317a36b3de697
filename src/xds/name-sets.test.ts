import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { NameSetPool } from './name-sets.js';

describe('NameSetPool', () => {
  it('a change of a pooled set is one set for every stream that makes it, the one its whole list pools to', () => {
    const pool = new NameSetPool();
    const base = pool.of(['a', 'b', 'c']);
    const next = pool.changed(base, ['d'], ['b']);
    assert.deepEqual([...next], ['a', 'c', 'd']);
    assert.equal(pool.changed(base, ['d'], ['b']), next);
    assert.equal(pool.of(['a', 'c', 'd']), next);
    assert.equal(pool.changed(base, [], []), base);
    // A newline in a name cannot make two changes share a key's set.
    assert.deepEqual([...pool.changed(base, ['x\ny'], [])], ['a', 'b', 'c', 'x\ny']);
    assert.deepEqual([...pool.changed(base, ['x', 'y'], [])], ['a', 'b', 'c', 'x', 'y']);
  });

  it('identical lists share one set; another order or another list gets its own', () => {
    const pool = new NameSetPool();
    const a = pool.of(['x', 'y', 'z']);
    assert.equal(pool.of(['x', 'y', 'z']), a);
    assert.notEqual(pool.of(['z', 'y', 'x']), a);
    assert.deepEqual([...pool.of(['x', 'y'])], ['x', 'y']);
  });

  it('a newline inside a name cannot make two different lists share a set', () => {
    const pool = new NameSetPool();
    const joined = pool.of(['a\nb']);
    const split = pool.of(['a', 'b']);
    assert.notEqual(split, joined);
    assert.deepEqual([...split], ['a', 'b']);
    assert.deepEqual([...joined], ['a\nb']);
  });

  it('duplicates in a request keep their set semantics', () => {
    const pool = new NameSetPool();
    assert.deepEqual([...pool.of(['a', 'a', 'b'])], ['a', 'b']);
    assert.deepEqual([...pool.of(['a', 'a', 'b'])], ['a', 'b']);
  });

  it('holds sets weakly: lists nobody holds any more are dropped after GC', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const pool = new NameSetPool();
    const kept = pool.of(['kept']);
    for (let i = 0; i < 1000; i++) pool.of([`made-up-${i}`]);
    assert.equal(pool.size, 1001);
    for (let round = 0; round < 20 && pool.size > 1; round++) {
      gc();
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(pool.size, 1, 'only the list still held survives');
    assert.equal(pool.of(['kept']), kept);
  });
});
