import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decideDelta, planDelta, splitDelta, type DeltaRequestView } from './delta-decision.js';
import { NameSetPool } from './name-sets.js';
import { internResources, joinResources, makeResource, type XdsResource } from './resource.js';
import { LayeredVersions, OverlayVersions } from './layered-versions.js';
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
    assert.deepEqual(
      plan.changed.map((r) => r.name),
      ['b', 'new'],
    );
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
    assert.deepEqual(
      plan.changed.map((r) => r.name),
      ['a'],
    );
    assert.deepEqual(plan.removed, ['missing']);
  });

  it('initial_resource_versions: the same version is not re-sent, a different one is, a vanished one is removed', () => {
    const d = decideDelta(undefined, req({ initialVersions: { a: res('a').version, b: 'stale', gone: 'x' } }), 0);
    const plan = planDelta(d.next, [res('a'), res('b')]);
    assert.deepEqual(
      plan.changed.map((r) => r.name),
      ['b'],
    );
    assert.deepEqual(plan.removed, ['gone']);
  });

  it('a forced push resends everything in scope', () => {
    const w = holding({ typeUrl: CDS, names: new Set(), wildcard: true }, [res('a')]);
    assert.deepEqual(
      planDelta(w, [res('a')], new Set(), true).changed.map((r) => r.name),
      ['a'],
    );
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
    assert.deepEqual(
      chunks.map((c) => c.resources.map((r) => r.name)),
      [['a', 'b'], ['c']],
    );
    assert.deepEqual(
      chunks.map((c) => c.removed),
      [[], ['gone']],
    );
    assert.ok(chunks.every((c) => c.bytes <= 100));
  });

  it('a single resource over the limit goes alone; nothing is dropped', () => {
    const chunks = splitDelta([big('a', 10), big('huge', 500), big('b', 10)], [], size, 100);
    assert.deepEqual(
      chunks.map((c) => c.resources.map((r) => r.name)),
      [['a'], ['huge'], ['b']],
    );
  });

  it('an empty plan still yields one (empty) response for an answer', () => {
    assert.deepEqual(
      splitDelta([], [], size, 100).map((c) => [c.resources.length, c.removed.length]),
      [[0, 0]],
    );
  });

  it("sized by a list's sum, it splits exactly as resource by resource, and one response carries the plan's own list", () => {
    const summed = { ...size, list: (rs: readonly XdsResource[]) => rs.reduce((n, r) => n + size.resource(r), 0) };
    for (const lens of [[20, 20], [40, 40, 40], [10, 500, 10], [], [30, 30, 29]]) {
      const changed = lens.map((n, i) => big(`r${i}`, n));
      for (const removed of [[], ['gone']]) {
        const view = (cs: ReturnType<typeof splitDelta>) => cs.map((c) => [c.resources.map((r) => r.name), c.removed, c.bytes]);
        assert.deepEqual(
          view(splitDelta(changed, removed, summed, 100)),
          view(splitDelta(changed, removed, size, 100)),
          `${lens.join(',')} ${removed.join(',')}`,
        );
      }
      const one = splitDelta(changed, [], summed, 1000);
      assert.equal(one[0]?.resources, changed);
    }
  });
});

describe('streams in step share their plans and holdings', () => {
  const EDS = TypeUrl.ClusterLoadAssignment;
  const pool = new NameSetPool();
  const nameSet = (names: readonly string[]): ReadonlySet<string> => pool.of(names);

  it('two streams that subscribed alike and got the same list get one plan and hold one map', () => {
    const list = [res('a'), res('b')];
    const [s1, s2] = [1, 2].map(() => decideDelta(undefined, req({ typeUrl: EDS, subscribe: ['a', 'b'] }), 0, pool).next);
    assert.equal(s1!.names, s2!.names, 'pooled names');
    const [p1, p2] = [planDelta(s1!, list), planDelta(s2!, list)];
    assert.equal(p1, p2);
    assert.deepEqual(
      p1.changed.map((r) => r.name),
      ['a', 'b'],
    );
    // Next push: a changed `b` for both, still one plan.
    const after = [list[0]!, res('b', 'b2')];
    const [h1, h2] = [
      { ...s1!, sentVersions: p1.sentVersions },
      { ...s2!, sentVersions: p2.sentVersions },
    ];
    const [q1, q2] = [planDelta(h1, after), planDelta(h2, after)];
    assert.equal(q1, q2);
    assert.deepEqual(
      q1.changed.map((r) => r.name),
      ['b'],
    );
    // A different option (a forced resend) is its own plan.
    assert.deepEqual(
      planDelta(h1, after, undefined, true).changed.map((r) => r.name),
      ['a', 'b'],
    );
    assert.deepEqual(
      planDelta(h1, after).changed.map((r) => r.name),
      ['b'],
      'the memo kept the plain plan',
    );
  });

  it('a subscription that only adds names keeps what the stream holds (same map) and pools the new set', () => {
    const w = holding(decideDelta(undefined, req({ typeUrl: EDS, subscribe: ['a', 'b'] }), 0, pool).next, [res('a'), res('b')]);
    const d1 = decideDelta(w, req({ typeUrl: EDS, subscribe: ['c'], responseNonce: 'n1' }), 0, pool);
    const d2 = decideDelta(w, req({ typeUrl: EDS, subscribe: ['c'], responseNonce: 'n1' }), 0, pool);
    assert.equal(d1.kind, 'subscribe');
    assert.equal(d1.next.sentVersions, w.sentVersions);
    assert.equal(d1.next.names, d2.next.names);
    assert.deepEqual([...d1.next.names], ['a', 'b', 'c']);
    // Answering with just the new name leaves the rest held.
    const plan = planDelta(d1.next, [res('c')], d1.requested, false, nameSet(['c']));
    assert.deepEqual(
      plan.changed.map((r) => r.name),
      ['c'],
    );
    assert.deepEqual([...plan.sentVersions.keys()].sort(), ['a', 'b', 'c']);
    // Dropping a name copies the map without it.
    const d3 = decideDelta(
      { ...d1.next, sentVersions: plan.sentVersions },
      req({ typeUrl: EDS, unsubscribe: ['a'], responseNonce: 'n2' }),
      0,
      pool,
    );
    assert.equal(d3.kind, 'unsubscribe');
    assert.deepEqual([...d3.next.names], ['b', 'c']);
    assert.deepEqual([...(d3.next.sentVersions?.keys() ?? [])].sort(), ['b', 'c']);
    assert.deepEqual([...plan.sentVersions.keys()].sort(), ['a', 'b', 'c'], 'the shared map is not mutated');
  });
});

describe('lists joined from a shared head and a proxy tail', () => {
  const wildcard = (): WatchedResource => decideDelta(undefined, req({}), 0).next;
  const after = (w: WatchedResource, sent: ReadonlyMap<string, string>): WatchedResource => ({
    ...w,
    sentVersions: sent,
    alwaysRespond: false,
  });
  const names = (rs: readonly XdsResource[]): string[] => rs.map((r) => r.name).sort();

  it('streams share the head plan and hold one head map; each holds only its tail apart', () => {
    const head = [res('out|a'), res('out|b')];
    const [t1, t2] = [[res('in|1')], [res('in|2')]];
    const [w1, w2] = [wildcard(), wildcard()];
    const [p1, p2] = [planDelta(w1, joinResources(head, t1)), planDelta(w2, joinResources(head, t2))];
    assert.deepEqual(names(p1.changed), ['in|1', 'out|a', 'out|b']);
    assert.ok(p1.sentVersions instanceof LayeredVersions && p2.sentVersions instanceof LayeredVersions);
    assert.equal(p1.sentVersions.head, p2.sentVersions.head, 'one head map for both');
    // A new service in the head: both streams get just it, from one shared head plan.
    const head2 = [...head, res('out|c')];
    const [q1, q2] = [
      planDelta(after(w1, p1.sentVersions), joinResources(head2, t1)),
      planDelta(after(w2, p2.sentVersions), joinResources(head2, t2)),
    ];
    assert.deepEqual(names(q1.changed), ['out|c']);
    assert.equal(q1.changed, q2.changed, 'the head plan is shared');
    assert.deepEqual(q1.removed, []);
    assert.deepEqual([...q1.sentVersions.keys()].sort(), ['in|1', 'out|a', 'out|b', 'out|c']);
  });

  it('streams whose tails are alike (one interned list) share the whole plan and hold one object, push after push', () => {
    const head = [res('out|a'), res('out|b')];
    const tail = internResources([res('in|passthrough')]);
    const [w1, w2] = [wildcard(), wildcard()];
    const [p1, p2] = [planDelta(w1, joinResources(head, tail)), planDelta(w2, joinResources(head, tail))];
    assert.equal(p1, p2, 'one plan');
    const head2 = [...head, res('out|c')];
    const [q1, q2] = [
      planDelta(after(w1, p1.sentVersions), joinResources(head2, tail)),
      planDelta(after(w2, p2.sentVersions), joinResources(head2, tail)),
    ];
    assert.equal(q1, q2, 'still one plan: what they held was one object');
    assert.deepEqual(names(q1.changed), ['out|c']);
    // A third stream with its own tail plans apart, and holds its own.
    const w3 = after(wildcard(), p1.sentVersions);
    const q3 = planDelta(w3, joinResources(head2, [res('in|8080')]));
    assert.notEqual(q3, q1);
    assert.deepEqual(names(q3.changed), ['in|8080', 'out|c']);
    assert.deepEqual(q3.removed, ['in|passthrough']);
  });

  it('equals the plan of the same list unjoined, for any held state (property)', () => {
    let seed = 7;
    const rand = (n: number): number => (seed = (seed * 1103515245 + 12345) % 2147483648) % n;
    const pick = (prefix: string): XdsResource[] =>
      Array.from({ length: rand(5) }, (_, i) => res(`${prefix}${i + rand(3)}`, `v${rand(2)}`)).filter(
        (r, i, a) => a.findIndex((x) => x.name === r.name) === i,
      );
    for (let i = 0; i < 300; i++) {
      // Names may move between the parts (the shared pool `m`).
      const head = [...pick('h'), ...(rand(2) ? pick('m') : [])];
      const tail = [...pick('t'), ...(rand(2) ? pick('m').filter((r) => !head.some((h) => h.name === r.name)) : [])];
      const prevHead = [...pick('h'), ...pick('m')];
      const prevTail = pick('t').concat(pick('m').filter((r) => !prevHead.some((h) => h.name === r.name)));
      const w0 = wildcard();
      // Held: nothing, a plain map (a reconnect's initial versions), or a layered one (an earlier joined push).
      const kind = rand(3);
      const held =
        kind === 0
          ? undefined
          : kind === 1
            ? new Map([...prevHead, ...prevTail].map((r) => [r.name, r.version]))
            : planDelta(w0, joinResources(prevHead, prevTail)).sentVersions;
      const w = held ? after(w0, held) : w0;
      const forced = rand(4) === 0;
      const parted = planDelta(w, joinResources(head, tail), undefined, forced);
      const plain = planDelta(w, [...head, ...tail], undefined, forced);
      const entries = (m: ReadonlyMap<string, string>): string[] => [...m].map(([k, v]) => `${k}=${v}`).sort();
      assert.deepEqual(names(parted.changed), names(plain.changed), `changed, case ${i}`);
      assert.deepEqual([...parted.removed].sort(), [...plain.removed].sort(), `removed, case ${i}`);
      assert.deepEqual(entries(parted.sentVersions), entries(plain.sentVersions), `held, case ${i}`);
      assert.equal(parted.sentVersions.size, plain.sentVersions.size);
    }
  });
});

describe('partial regeneration (only)', () => {
  let seed = 11;
  const rand = (n: number): number => (seed = (seed * 1103515245 + 12345) % 2147483648) % n;
  const entries = (m: ReadonlyMap<string, string>): string[] => [...m].map(([k, v]) => `${k}=${v}`).sort();

  it('OverlayVersions behaves as the plain map it stands for, over any sequence of changes (property)', () => {
    for (let i = 0; i < 200; i++) {
      const model = new Map<string, string>();
      for (let n = rand(150); n > 0; n--) model.set(`c${rand(200)}`, `v${rand(3)}`);
      let held: ReadonlyMap<string, string> = new Map(model);
      for (let step = rand(12); step > 0; step--) {
        const changes = new Map<string, string>();
        const deletes: string[] = [];
        for (let n = rand(20); n > 0; n--) changes.set(`c${rand(220)}`, `v${rand(3)}`);
        for (let n = rand(20); n > 0; n--) {
          const name = `c${rand(220)}`;
          if (!changes.has(name)) deletes.push(name);
        }
        for (const name of deletes) model.delete(name);
        for (const [name, version] of changes) model.set(name, version);
        held = OverlayVersions.over(held, changes, deletes);
        assert.deepEqual(entries(held), entries(model), `entries, case ${i}`);
        assert.equal(held.size, model.size, `size, case ${i}`);
        for (let n = 0; n < 220; n += 7) assert.equal(held.get(`c${n}`), model.get(`c${n}`), `get c${n}, case ${i}`);
      }
      if (held instanceof OverlayVersions) assert.ok(!(held.base instanceof OverlayVersions), 'overlays do not stack');
    }
  });

  it('plans what copying the held map would: changed, removed and held (property)', () => {
    const eds = (name: string, v: string): XdsResource => makeResource(name, TypeUrl.ClusterLoadAssignment, new TextEncoder().encode(v));
    for (let i = 0; i < 300; i++) {
      const held = new Map<string, string>();
      for (let n = rand(60); n > 0; n--) held.set(`e${rand(80)}`, eds('x', `v${rand(2)}`).version);
      const only = new Set(Array.from({ length: 1 + rand(6) }, () => `e${rand(90)}`));
      const requested = new Set([...only].filter(() => rand(2) === 0));
      const resources = [...only].filter(() => rand(4) !== 0).map((n) => eds(n, `v${rand(2)}`));
      const w: WatchedResource = {
        ...decideDelta(undefined, req({ typeUrl: TypeUrl.ClusterLoadAssignment, subscribe: [...held.keys(), ...only] }), 0).next,
        sentVersions: held,
      };
      const plan = planDelta(w, resources, requested, false, only);
      // The reference: the held map copied outside `only`, then the regenerated names.
      const next = new Map([...held].filter(([n]) => !only.has(n)));
      for (const r of resources) next.set(r.name, r.version);
      const changed = resources.filter((r) => held.get(r.name) !== r.version).map((r) => r.name);
      const removed = [...held.keys()].filter((n) => !next.has(n)).concat([...requested].filter((n) => !next.has(n) && !held.has(n)));
      assert.deepEqual(
        plan.changed.map((r) => r.name),
        changed,
        `changed, case ${i}`,
      );
      assert.deepEqual([...plan.removed].sort(), [...new Set(removed)].sort(), `removed, case ${i}`);
      assert.deepEqual(entries(plan.sentVersions), entries(next), `held, case ${i}`);
    }
  });
});
