import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { DeltaDiscoveryResponseSchema, DiscoveryResponseSchema } from '../gen/envoy/service/discovery/v3/discovery_pb.js';
import {
  discoveryResponseMessage,
  encodeDeltaResponse,
  encodeDiscoveryResponse,
  internResources,
  joinResources,
  makeResource,
} from './resource.js';

// Sizes around the varint boundaries (127/128, 16383/16384) and a multi-byte UTF-8 name.
const resources = [0, 1, 126, 127, 128, 300, 16_383, 16_384, 70_000].map((n, i) =>
  makeResource(
    `rés-${i}`,
    'type.googleapis.com/envoy.config.cluster.v3.Cluster',
    Uint8Array.from({ length: n }, (_, k) => (k * 7 + i) & 0xff),
  ),
);

describe('response encoding (pre-encoded resources spliced into an exact-size buffer)', () => {
  it('a DiscoveryResponse decodes to its fields, and its size is what the message says', () => {
    for (const versionInfo of ['', '2026-12-04T00:00:00.000Z/7']) {
      const r = { versionInfo, typeUrl: 'type.googleapis.com/envoy.config.cluster.v3.Cluster', nonce: 'abc-1', resources };
      const bytes = encodeDiscoveryResponse(r);
      assert.equal(bytes.byteLength, discoveryResponseMessage(r).byteLength);
      const d = fromBinary(DiscoveryResponseSchema, bytes);
      assert.equal(d.versionInfo, versionInfo);
      assert.equal(d.typeUrl, r.typeUrl);
      assert.equal(d.nonce, 'abc-1');
      assert.deepEqual(
        d.resources.map((a) => [a.typeUrl, Buffer.from(a.value).toString('hex')]),
        resources.map((x) => [x.typeUrl, Buffer.from(x.value).toString('hex')]),
      );
    }
  });

  it('a long shared list is the same bytes whether spliced or copied as its recent block, response after response', () => {
    // Non-empty values: protobuf-es leaves an empty Any value out, the splice writes it (both valid).
    const nonEmpty = resources.filter((r) => r.value.byteLength > 0);
    const many = Array.from({ length: 40 }, (_, i) => nonEmpty[i % nonEmpty.length]!).map((r, i) =>
      makeResource(`c${i}`, r.typeUrl, r.value),
    );
    const typeUrl = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';
    const expected = (nonce: string, list: typeof many): Uint8Array =>
      toBinary(
        DiscoveryResponseSchema,
        create(DiscoveryResponseSchema, {
          versionInfo: 'v',
          typeUrl,
          nonce,
          resources: list.map((r) => ({ typeUrl: r.typeUrl, value: r.value })),
        }),
      );
    for (const nonce of ['n-1', 'n-2'])
      assert.deepEqual(
        new Uint8Array(encodeDiscoveryResponse({ versionInfo: 'v', typeUrl, nonce, resources: many })),
        expected(nonce, many),
      );
    const own = [makeResource('inbound|1', typeUrl, Uint8Array.of(9))];
    const joined = joinResources(many, own);
    assert.deepEqual(
      new Uint8Array(encodeDiscoveryResponse({ versionInfo: 'v', typeUrl, nonce: 'n-j', resources: joined })),
      expected('n-j', [...many, ...own]),
      'a joined list, part by part',
    );
    const changed = [...many.slice(1), makeResource('c40', typeUrl, Uint8Array.of(1, 2, 3))];
    assert.deepEqual(
      new Uint8Array(encodeDiscoveryResponse({ versionInfo: 'v', typeUrl, nonce: 'n-3', resources: changed })),
      expected('n-3', changed),
    );
  });

  it('a list grown after use is not sent from its old block', () => {
    const list = Array.from({ length: 20 }, (_, i) => resources[i % resources.length]!);
    const r = { versionInfo: 'v1', typeUrl: 'type.googleapis.com/envoy.config.cluster.v3.Cluster', nonce: 'n-1', resources: list };
    const first = Buffer.from(encodeDiscoveryResponse(r));
    for (let i = 0; i < 3; i++) assert.deepEqual(Buffer.from(encodeDiscoveryResponse(r)), first);
    list.push(resources[1]!); // a list grown after use is not sent from its old block
    const grown = encodeDiscoveryResponse(r);
    assert.equal(grown.byteLength, discoveryResponseMessage(r).byteLength);
    assert.equal(fromBinary(DiscoveryResponseSchema, grown).resources.length, 21);
  });

  it('a DeltaDiscoveryResponse decodes to its resources (name, version, Any) and removed names', () => {
    const bytes = encodeDeltaResponse({ systemVersionInfo: 'v9', typeUrl: 't', nonce: 'n', resources, removed: ['gone', 'ñame'] });
    const d = fromBinary(DeltaDiscoveryResponseSchema, bytes);
    assert.equal(d.systemVersionInfo, 'v9');
    assert.deepEqual(d.removedResources, ['gone', 'ñame']);
    assert.deepEqual(
      d.resources.map((x) => [x.name, x.version, x.resource?.value.byteLength]),
      resources.map((x) => [x.name, x.version, x.value.byteLength]),
    );
  });
});

describe('joinResources', () => {
  it('gives the same frozen array for the same parts, and a new one when a part changes', () => {
    const r = (n: string) => makeResource(n, 'type.googleapis.com/x', new Uint8Array([1]));
    const head = [r('a'), r('b')];
    const tail = [r('c')];
    const one = r('d');
    const joined = joinResources(head, tail);
    assert.deepEqual(
      joined.map((x) => x.name),
      ['a', 'b', 'c'],
    );
    assert.equal(joinResources(head, tail), joined);
    assert.ok(Object.isFrozen(joined));
    assert.deepEqual(
      joinResources(head, one).map((x) => x.name),
      ['a', 'b', 'd'],
    );
    assert.equal(joinResources(head, one), joinResources(head, one));
    assert.notEqual(joinResources(head, [r('c')]), joined);
  });
});

describe('internResources', () => {
  const r = (n: string, byte = 1, type = 'type.googleapis.com/x') => makeResource(n, type, new Uint8Array([byte]));

  it('gives the first list of equal content to later equal lists, so what is joined with them is shared', () => {
    const first = internResources([r('in-a'), r('in-b')]);
    const again = internResources([r('in-a'), r('in-b')]);
    assert.equal(again, first);
    const head = [r('out')];
    assert.equal(joinResources(head, again), joinResources(head, first));
  });

  it('keeps lists apart that differ in a version, a name, the type, the order or the length, and a list from its single resource', () => {
    const base = internResources([r('d-a'), r('d-b')]);
    for (const other of [
      [r('d-a'), r('d-b', 2)],
      [r('d-a'), r('d-c')],
      [r('d-a'), r('d-b', 1, 'type.googleapis.com/y')],
      [r('d-b'), r('d-a')],
      [r('d-a')],
    ]) {
      const got = internResources(other);
      assert.equal(got, other, other.map((x) => `${x.name}@${x.version}`).join(','));
      assert.notEqual(got, base);
    }
    const one = r('d-single');
    assert.equal(internResources(one), one);
    assert.notEqual(internResources([r('d-single')]), one);
    assert.equal(internResources(r('d-single')), one);
  });

  it('leaves long lists (per view, not per workload) alone', () => {
    const long = Array.from({ length: 65 }, (_, i) => r(`l-${i}`));
    assert.equal(internResources(long), long);
    assert.notEqual(internResources(Array.from({ length: 65 }, (_, i) => r(`l-${i}`))), long);
  });
});
