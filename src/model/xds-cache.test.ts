import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { XdsCache } from './xds-cache.js';

const inv = (tokens: string[], kinds: string[] = []): { tokens: Set<string>; kinds: Set<string> } => ({
  tokens: new Set(tokens),
  kinds: new Set(kinds),
});

describe('XdsCache', () => {
  it('keeps a value until a change touches a token its build recorded', () => {
    const cache = new XdsCache();
    let builds = 0;
    const get = (): string =>
      cache.getOrBuild('rds|a', () => {
        builds++;
        cache.record('VirtualService@a.svc');
        cache.record('ServiceEntry@a.svc');
        return 'routes';
      });
    get();
    get();
    assert.equal(builds, 1);
    assert.equal(cache.invalidate(inv(['VirtualService@b.svc', 'DestinationRule@a.svc'])), 0);
    get();
    assert.equal(builds, 1, 'unrelated tokens leave it');
    assert.equal(cache.invalidate(inv(['VirtualService@a.svc'])), 1);
    get();
    assert.equal(builds, 2);
    assert.deepEqual(
      { hits: cache.stats().hits, misses: cache.stats().misses, invalidated: cache.stats().invalidated },
      { hits: 2, misses: 2, invalidated: 1 },
    );
  });

  it("passes a nested value's dependencies to the enclosing build, on a miss and on a hit", () => {
    const cache = new XdsCache();
    const inner = (): number =>
      cache.getOrBuild('cluster|a', () => {
        cache.record('DestinationRule@a.svc');
        return 1;
      });
    inner(); // cached alone first: the outer build below reuses it as a hit
    cache.getOrBuild('cds|all', () => inner() + 1);
    assert.ok(cache.has('cds|all'));
    cache.invalidate(inv(['DestinationRule@a.svc']));
    assert.ok(!cache.has('cluster|a'));
    assert.ok(!cache.has('cds|all'), 'the list that embeds the cluster goes with it');
  });

  it('records a reused value as one token naming its entry, and removes the reusers with it, however deep', () => {
    const cache = new XdsCache();
    const cluster = (h: string): string =>
      cache.getOrBuild(`cluster|${h}`, () => {
        cache.record(`ServiceEntry@${h}`);
        cache.record(`DestinationRule@${h}`);
        return h;
      });
    const list = (): string => cache.getOrBuild('cds|view', () => ['a', 'b', 'c'].map(cluster).join(','));
    cache.getOrBuild('cds|proxy', () => {
      cache.record('instances@10.0.0.1');
      return list();
    });
    const deps = new Map([...cache.entriesForDebug()].map(([k, , d]) => [k, [...d].sort()]));
    assert.deepEqual(deps.get('cds|view'), ['#cluster|a', '#cluster|b', '#cluster|c']);
    assert.deepEqual(deps.get('cds|proxy'), ['#cds|view', 'instances@10.0.0.1']);
    assert.equal(cache.invalidate(inv(['DestinationRule@b'])), 3, 'the cluster, the list that reused it and the proxy list');
    assert.deepEqual([...cache.entriesForDebug()].map(([k]) => k).sort(), ['cluster|a', 'cluster|c']);
    assert.equal(cache.stats().invalidated, 3);
    // Built again: the list reuses the two survivors and rebuilds the third.
    assert.equal(list(), 'a,b,c');
    assert.equal(cache.invalidate(inv([], ['ServiceEntry'])), 4);
  });

  it('does not keep a value whose reused entry was evicted while it was built (its token would stand for nothing)', () => {
    const cache = new XdsCache(16);
    cache.getOrBuild('inner', () => cache.record('DestinationRule@a'));
    const outer = cache.getOrBuild('outer', () => {
      cache.getOrBuild('inner', () => assert.fail('inner is cached'));
      // Enough new entries to evict the oldest batch, inner among them.
      for (let i = 0; i < 16; i++) cache.getOrBuild(`filler-${i}`, () => i);
      return 'outer';
    });
    assert.equal(outer, 'outer');
    assert.ok(!cache.has('inner'), 'evicted during the build');
    assert.ok(!cache.has('outer'), 'not kept: it could not be invalidated through inner');
  });

  it('invalidates every token of a kind for a change that cannot be narrowed', () => {
    const cache = new XdsCache();
    cache.getOrBuild('a', () => cache.record('VirtualService@a.svc'));
    cache.getOrBuild('b', () => cache.record('VirtualService/ns/b'));
    cache.getOrBuild('c', () => cache.record('DestinationRule@a.svc'));
    assert.equal(cache.invalidate(inv([], ['VirtualService'])), 2);
    assert.ok(cache.has('c'));
  });

  it('lets a superseded snapshot read values built from it or older that survived the invalidations, never newer ones', () => {
    const cache = new XdsCache();
    const old = cache.epoch;
    cache.getOrBuild(
      'scope',
      () => {
        cache.record('Sidecar@*');
        return 'scope-v1';
      },
      old,
    );
    cache.invalidate({ tokens: new Set(['VirtualService@a.example.com']), kinds: new Set() });
    const next = cache.epoch;
    assert.ok(next > old);
    assert.deepEqual(cache.peekAsOf('scope', old), { value: 'scope-v1' }, 'untouched by the change: valid for the old snapshot');
    cache.getOrBuild(
      'routes',
      () => {
        cache.record('VirtualService@a.example.com');
        return 'routes-after';
      },
      next,
    );
    assert.equal(cache.peekAsOf('routes', old), undefined, 'built from the newer snapshot');
    assert.deepEqual(cache.peekAsOf('routes', next), { value: 'routes-after' });
    cache.invalidate({ tokens: new Set(['Sidecar@*']), kinds: new Set() });
    assert.equal(cache.peekAsOf('scope', old), undefined, 'invalidated since');
  });

  it('does not keep a value built from a snapshot older than the last invalidation', () => {
    const cache = new XdsCache();
    const oldEpoch = cache.epoch;
    cache.invalidate(inv(['x']));
    assert.equal(
      cache.getOrBuild('k', () => 'stale', oldEpoch),
      'stale',
    );
    assert.ok(!cache.has('k'), 'a build from the superseded snapshot is returned but not cached');
    cache.getOrBuild('k', () => 'fresh', cache.epoch);
    assert.ok(cache.has('k'));
  });

  it('forgets the entries of a token without a new epoch: the values they held are still true', () => {
    const cache = new XdsCache();
    const build = (key: string, token: string): string => cache.getOrBuild(key, () => (cache.record(token), key));
    build('CDS|in|10.0.0.1', 'instances@10.0.0.1');
    cache.getOrBuild('CDS|outer', () => build('instances|10.0.0.1', 'instances@10.0.0.1'));
    build('CDS|in|10.0.0.2', 'instances@10.0.0.2');
    const epoch = cache.epoch;
    assert.equal(cache.forget(['instances@10.0.0.1']), 3, 'the entry, the nested one and the one that read it');
    assert.equal(cache.epoch, epoch);
    assert.deepEqual(
      [...cache.entriesForDebug()].map(([k]) => k),
      ['CDS|in|10.0.0.2'],
    );
    assert.equal(cache.stats().invalidated, 0, 'not counted as invalidation: nothing changed');
  });

  it('evicts the least recently used entry and forgets its tokens', () => {
    const cache = new XdsCache(2);
    cache.getOrBuild('a', () => cache.record('t@a'));
    cache.getOrBuild('b', () => cache.record('t@b'));
    cache.getOrBuild('a', () => assert.fail('a is cached'));
    cache.getOrBuild('c', () => cache.record('t@c'));
    assert.ok(!cache.has('b') && cache.has('a') && cache.has('c'));
    assert.equal(cache.stats().evictions, 1);
    assert.equal(cache.invalidate(inv(['t@b'])), 0);
  });

  it('a build that throws caches nothing and leaves the collector stack balanced', () => {
    const cache = new XdsCache();
    assert.throws(() =>
      cache.getOrBuild('bad', () => {
        throw new Error('boom');
      }),
    );
    assert.ok(!cache.has('bad'));
    cache.getOrBuild('ok', () => cache.record('t@ok'));
    assert.equal(cache.invalidate(inv(['t@ok'])), 1);
  });
});
