import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decideDelta, planDelta, splitDelta, type DeltaRequestView } from './delta-decision.js';
import { NameSetPool } from './name-sets.js';
import { makeResource, type XdsResource } from './resource.js';
import { TypeUrl } from './type-urls.js';
import type { WatchedResource } from './watched-resource.js';

const CDS = TypeUrl.Cluster;
const RDS = TypeUrl.RouteConfiguration;

function req(over: Partial<DeltaRequestView>): DeltaRequestView {
  return { typeUrl: CDS, subscribe: [], unsubscribe: [], initialVersions: {}, responseNonce: '', ...over };
}

function res(name: string, content = name): XdsResource {
  return makeResource(name, CDS, new TextEncoder().encode(content));
}

/** The state after the server sent `rs` (what sendType records). */
function holding(w: WatchedResource, rs: readonly XdsResource[], nonce = 'n1'): WatchedResource {
  return { ...w, nonceSent: nonce, versionSent: 'v1', sentVersions: new Map(rs.map((r) => [r.name, r.version])), alwaysRespond: false };
}

describe('decideDelta (istiod shouldRespondDelta)', () => {
  it('first request: empty subscribe on CDS is wildcard, on RDS it is not; "*" is wildcard anywhere; always answered', () => {
    const cds = decideDelta(undefined, req({}), 0);
    assert.equal(cds.kind, 'initial');
    assert.equal(cds.respond, true);
    assert.equal(cds.next.wildcard, true);
    assert.equal(cds.next.alwaysRespond, true);
    assert.equal(decideDelta(undefined, req({ typeUrl: RDS }), 0).next.wildcard, false);
    const star = decideDelta(undefined, req({ typeUrl: RDS, subscribe: ['*', 'r1'] }), 0);
    assert.equal(star.next.wildcard, true);
    assert.deepEqual([...star.next.names], ['r1']);
    const named = decideDelta(undefined, req({ subscribe: ['a', 'b'] }), 0);
    assert.equal(named.next.wildcard, false);
    assert.deepEqual([...named.requested].sort(), ['a', 'b']);
  });

  it('a reconnect keeps initial_resource_versions (in scope only) as what the client holds', () => {
    const d = decideDelta(undefined, req({ subscribe: ['a'], initialVersions: { a: 'va', stray: 'vs' } }), 0);
    assert.equal(d.kind, 'reconnect');
    assert.equal(d.respond, true);
    assert.deepEqual([...(d.next.sentVersions ?? [])], [['a', 'va']]);
  });

  it('an ACK gets no response; a NACK is recorded, counted by the caller, and never answered', () => {
    const w = holding(decideDelta(undefined, req({ subscribe: ['a'] }), 0).next, [res('a')]);
    const ack = decideDelta(w, req({ responseNonce: 'n1' }), 1);
    assert.equal(ack.kind, 'ack');
    assert.equal(ack.respond, false);
    assert.equal(ack.next.nonceAcked, 'n1');
    assert.equal(ack.next.versionAcked, 'v1');
    const nack = decideDelta(w, req({ responseNonce: 'n1', errorDetail: { code: 3, message: 'bad' } }), 2);
    assert.equal(nack.kind, 'nack');
    assert.equal(nack.respond, false);
    assert.deepEqual(nack.next.lastError, { nonce: 'n1', message: 'bad', code: 3, at: 2 });
  });

  it('subscribing a new name is answered with that name requested; re-subscribing a known one is not', () => {
    const w = holding(decideDelta(undefined, req({ subscribe: ['a'] }), 0).next, [res('a')]);
    const d = decideDelta(w, req({ subscribe: ['a', 'b'], responseNonce: 'n1' }), 1);
    assert.equal(d.kind, 'subscribe');
    assert.equal(d.respond, true);
    assert.deepEqual([...d.requested], ['b']);
    assert.deepEqual([...d.next.names].sort(), ['a', 'b']);
    assert.equal(decideDelta(w, req({ subscribe: ['a'] }), 1).respond, false);
  });

  it('unsubscribe forgets the name (no response, and no removal later)', () => {
    const w = holding(decideDelta(undefined, req({ subscribe: ['a', 'b'] }), 0).next, [res('a'), res('b')]);
    const d = decideDelta(w, req({ unsubscribe: ['b'] }), 1);
    assert.equal(d.kind, 'unsubscribe');
    assert.equal(d.respond, false);
    assert.deepEqual([...d.next.names], ['a']);
    assert.deepEqual([...(d.next.sentVersions ?? new Map()).keys()], ['a']);
    const plan = planDelta(d.next, [res('a')]);
    assert.deepEqual(plan.removed, [], 'no removed_resources for an unsubscribed name');
  });

  it('subscription changes in a request with an old nonce are still applied', () => {
    const w = holding(decideDelta(undefined, req({ subscribe: ['a'] }), 0).next, [res('a')], 'n2');
    const d = decideDelta(w, req({ subscribe: ['c'], responseNonce: 'n1' }), 1);
    assert.equal(d.respond, true);
    assert.ok(d.next.names.has('c'));
  });

  it('alwaysRespond answers an ACK-looking request while set', () => {
    const w: WatchedResource = { ...decideDelta(undefined, req({ subscribe: ['a'] }), 0).next, nonceSent: 'n1' };
    assert.equal(decideDelta(w, req({ responseNonce: 'n1' }), 1).respond, true);
  });
});

describe('planDelta (per-resource versions)', () => {
  it('sends only resources whose version differs, and removals for held names that are gone', () => {
    const w = holding({ typeUrl: CDS, names: new Set(), wildcard: true }, [res('a'), res('b'), res('gone')]);
    const plan = planDelta(w, [res('a'), res('b', 'b2'), res('new')]);
    assert.deepEqual(plan.changed.map((r) => r.name), ['b', 'new']);
    assert.deepEqual(plan.removed, ['gone']);
    assert.deepEqual([...plan.sentVersions.keys()], ['a', 'b', 'new']);
  });

  it('nothing changed → empty plan (the caller skips the push)', () => {
    const w = holding({ typeUrl: CDS, names: new Set(['a']), wildcard: false }, [res('a')]);
    const plan = planDelta(w, [res('a')]);
    assert.deepEqual([plan.changed.length, plan.removed.length], [0, 0]);
  });

  it('a named watch ignores resources it did not subscribe to; a requested name that does not exist is removed', () => {
    const w: WatchedResource = { typeUrl: CDS, names: new Set(['a', 'missing']), wildcard: false };
    const plan = planDelta(w, [res('a'), res('other')], new Set(['missing']));
    assert.deepEqual(plan.changed.map((r) => r.name), ['a']);
    assert.deepEqual(plan.removed, ['missing']);
  });

  it('initial_resource_versions: the same version is not re-sent, a different one is, a vanished one is removed', () => {
    const d = decideDelta(undefined, req({ initialVersions: { a: res('a').version, b: 'stale', gone: 'x' } }), 0);
    const plan = planDelta(d.next, [res('a'), res('b')]);
    assert.deepEqual(plan.changed.map((r) => r.name), ['b']);
    assert.deepEqual(plan.removed, ['gone']);
  });

  it('a forced push resends everything in scope', () => {
    const w = holding({ typeUrl: CDS, names: new Set(), wildcard: true }, [res('a')]);
    assert.deepEqual(planDelta(w, [res('a')], new Set(), true).changed.map((r) => r.name), ['a']);
  });
});

describe('splitDelta (response size guard)', () => {
  const size = { envelope: 10, resource: (r: XdsResource) => r.value.byteLength, removed: (n: string) => n.length };
  const big = (name: string, n: number): XdsResource => res(name, 'x'.repeat(n));

  it('keeps one response under the limit', () => {
    const chunks = splitDelta([big('a', 20), big('b', 20)], ['r'], size, 100);
    assert.equal(chunks.length, 1);
    assert.equal(chunks[0]?.bytes, 10 + 20 + 20 + 1);
  });

  it('splits greedily in order so each response is within the limit; removals ride last', () => {
    const chunks = splitDelta([big('a', 40), big('b', 40), big('c', 40)], ['gone'], size, 100);
    assert.deepEqual(chunks.map((c) => c.resources.map((r) => r.name)), [['a', 'b'], ['c']]);
    assert.deepEqual(chunks.map((c) => c.removed), [[], ['gone']]);
    assert.ok(chunks.every((c) => c.bytes <= 100));
  });

  it('a single resource over the limit goes alone; nothing is dropped', () => {
    const chunks = splitDelta([big('a', 10), big('huge', 500), big('b', 10)], [], size, 100);
    assert.deepEqual(chunks.map((c) => c.resources.map((r) => r.name)), [['a'], ['huge'], ['b']]);
  });

  it('an empty plan still yields one (empty) response for an answer', () => {
    assert.deepEqual(splitDelta([], [], size, 100).map((c) => [c.resources.length, c.removed.length]), [[0, 0]]);
  });
});

describe('streams in step share their plans and holdings', () => {
  const EDS = TypeUrl.ClusterLoadAssignment;
  const pool = new NameSetPool();
  const nameSet = (names: readonly string[]): ReadonlySet<string> => pool.of(names);

  it('two streams that subscribed alike and got the same list get one plan and hold one map', () => {
    const list = [res('a'), res('b')];
    const [s1, s2] = [1, 2].map(() => decideDelta(undefined, req({ typeUrl: EDS, subscribe: ['a', 'b'] }), 0, nameSet).next);
    assert.equal(s1!.names, s2!.names, 'pooled names');
    const [p1, p2] = [planDelta(s1!, list), planDelta(s2!, list)];
    assert.equal(p1, p2);
    assert.deepEqual(p1.changed.map((r) => r.name), ['a', 'b']);
    // Next push: a changed `b` for both, still one plan.
    const after = [list[0]!, res('b', 'b2')];
    const [h1, h2] = [{ ...s1!, sentVersions: p1.sentVersions }, { ...s2!, sentVersions: p2.sentVersions }];
    const [q1, q2] = [planDelta(h1, after), planDelta(h2, after)];
    assert.equal(q1, q2);
    assert.deepEqual(q1.changed.map((r) => r.name), ['b']);
    // A different option (a forced resend) is its own plan.
    assert.deepEqual(planDelta(h1, after, undefined, true).changed.map((r) => r.name), ['a', 'b']);
    assert.deepEqual(planDelta(h1, after).changed.map((r) => r.name), ['b'], 'the memo kept the plain plan');
  });

  it('a subscription that only adds names keeps what the stream holds (same map) and pools the new set', () => {
    const w = holding(decideDelta(undefined, req({ typeUrl: EDS, subscribe: ['a', 'b'] }), 0, nameSet).next, [res('a'), res('b')]);
    const d1 = decideDelta(w, req({ typeUrl: EDS, subscribe: ['c'], responseNonce: 'n1' }), 0, nameSet);
    const d2 = decideDelta(w, req({ typeUrl: EDS, subscribe: ['c'], responseNonce: 'n1' }), 0, nameSet);
    assert.equal(d1.kind, 'subscribe');
    assert.equal(d1.next.sentVersions, w.sentVersions);
    assert.equal(d1.next.names, d2.next.names);
    assert.deepEqual([...d1.next.names], ['a', 'b', 'c']);
    // Answering with just the new name leaves the rest held.
    const plan = planDelta(d1.next, [res('c')], d1.requested, false, nameSet(['c']));
    assert.deepEqual(plan.changed.map((r) => r.name), ['c']);
    assert.deepEqual([...plan.sentVersions.keys()].sort(), ['a', 'b', 'c']);
    // Dropping a name copies the map without it.
    const d3 = decideDelta({ ...d1.next, sentVersions: plan.sentVersions }, req({ typeUrl: EDS, unsubscribe: ['a'], responseNonce: 'n2' }), 0, nameSet);
    assert.equal(d3.kind, 'unsubscribe');
    assert.deepEqual([...d3.next.names], ['b', 'c']);
    assert.deepEqual([...(d3.next.sentVersions?.keys() ?? [])].sort(), ['b', 'c']);
    assert.deepEqual([...plan.sentVersions.keys()].sort(), ['a', 'b', 'c'], 'the shared map is not mutated');
  });
});
