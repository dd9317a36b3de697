import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { Connection } from './connection.js';
import { ConnectionIndex } from './connection-index.js';
import { NameSetPool } from './name-sets.js';
import { TypeUrl } from './type-urls.js';
import type { WatchedResource } from './watched-resource.js';

const conn = (ip: string): Connection => ({ proxy: { ipAddresses: [ip] } }) as unknown as Connection;
const eds = (names: readonly string[], wildcard = false): WatchedResource => ({
  typeUrl: TypeUrl.ClusterLoadAssignment,
  names: new Set(names),
  wildcard,
});

describe('ConnectionIndex', () => {
  it('moves only what a subscription change adds or drops, and forgets a removed stream', () => {
    const idx = new ConnectionIndex();
    const [a, b] = [conn('10.0.0.1'), conn('10.0.0.2')];
    idx.add(a);
    idx.add(b);
    idx.watch(a, TypeUrl.ClusterLoadAssignment, eds(['x', 'y']));
    idx.watch(b, TypeUrl.ClusterLoadAssignment, eds(['y']));
    idx.watch(a, TypeUrl.ClusterLoadAssignment, eds(['y', 'z']));
    assert.deepEqual([...idx.endpointReach(new Set(['x']), new Set())], []);
    assert.deepEqual([...idx.endpointReach(new Set(['z']), new Set())], [[a, 'eds']]);
    assert.deepEqual(new Set(idx.endpointReach(new Set(['y']), new Set()).keys()), new Set([a, b]));
    assert.deepEqual(
      [...idx.endpointReach(new Set(['y']), new Set(['10.0.0.2']))].find(([c]) => c === b),
      [b, 'full'],
    );
    idx.remove(a);
    assert.deepEqual([...idx.endpointReach(new Set(['y', 'z']), new Set(['10.0.0.1']))], [[b, 'eds']]);
  });

  it('reaches exactly the watchers a fresh index of the final subscriptions reaches (any sequence of changes)', () => {
    const names = ['a', 'b', 'c', 'd'];
    const op = fc.record({
      c: fc.integer({ min: 0, max: 2 }),
      names: fc.subarray(names),
      wildcard: fc.boolean(),
      drop: fc.boolean(),
      derive: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(op, { maxLength: 30 }), (ops) => {
        const conns = [conn('10.0.0.1'), conn('10.0.0.2'), conn('10.0.0.3')];
        const idx = new ConnectionIndex();
        const pool = new NameSetPool();
        const last = new Map<Connection, WatchedResource | undefined>();
        for (const o of ops) {
          const prev = last.get(conns[o.c]!);
          // A subscription change derives the new set from the old (the index then moves just the change).
          const derived =
            o.derive && prev
              ? {
                  ...eds([], o.wildcard),
                  names: pool.changed(
                    prev.names,
                    o.names.filter((n) => !prev.names.has(n)),
                    [...prev.names].filter((n) => !o.names.includes(n)),
                  ),
                }
              : undefined;
          const w = o.drop ? undefined : (derived ?? eds(o.names, o.wildcard));
          idx.watch(conns[o.c]!, TypeUrl.ClusterLoadAssignment, w);
          last.set(conns[o.c]!, w);
        }
        for (const n of names) {
          const want = conns.filter((c) => {
            const w = last.get(c);
            return w !== undefined && (w.wildcard || w.names.has(n));
          });
          assert.deepEqual(new Set(idx.endpointReach(new Set([n]), new Set()).keys()), new Set(want), n);
        }
      }),
      { numRuns: 300 },
    );
  });
});
