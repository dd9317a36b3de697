import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { create, equals, fromBinary, toBinary } from '@bufbuild/protobuf';
import fc from 'fast-check';
import type { Node } from '../gen/envoy/config/core/v3/base_pb.js';
import { DeltaDiscoveryRequestSchema, DiscoveryRequestSchema } from '../gen/envoy/service/discovery/v3/discovery_pb.js';
import { DecodedByBytes, decodeDeltaDiscoveryRequest, decodeDiscoveryRequest, NameListMemo } from './request-decode.js';

const clusterNames = (n: number): string[] =>
  Array.from({ length: n }, (_, i) => `outbound|8080|v${i % 2}|svc-${i}.ns-1.svc.cluster.local`);

describe('decodeDiscoveryRequest', () => {
  it('equals protobuf-es fromBinary for any request (node, error_detail, names, odd strings)', () => {
    const memo = new NameListMemo({ maxBytes: 1 << 20 });
    const request = fc.record({
      versionInfo: fc.string(),
      typeUrl: fc.constantFrom('type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment', '', 'x'),
      responseNonce: fc.string(),
      resourceNames: fc.oneof(
        fc.array(fc.string({ unit: 'grapheme' }), { maxLength: 40 }),
        fc.integer({ min: 0, max: 30 }).map(clusterNames),
      ),
      // Absent half the time: the shared-names path is the ACK shape (no node, no error_detail).
      // A node long enough to be shared by its bytes, or a short one.
      node: fc.option(fc.record({ id: fc.string(), cluster: fc.oneof(fc.string(), fc.string({ minLength: 300, maxLength: 400 })) }), {
        nil: undefined,
        freq: 2,
      }),
      errorDetail: fc.option(fc.record({ code: fc.integer({ min: 0, max: 16 }), message: fc.string() }), { nil: undefined, freq: 2 }),
    });
    const nodes = new DecodedByBytes<Node>({ maxBytes: 1 << 20 });
    fc.assert(
      fc.property(request, (init) => {
        const bytes = toBinary(DiscoveryRequestSchema, create(DiscoveryRequestSchema, init));
        for (let i = 0; i < 3; i++) {
          const got = decodeDiscoveryRequest(bytes, memo, i === 0 ? undefined : nodes);
          assert.ok(equals(DiscoveryRequestSchema, got, fromBinary(DiscoveryRequestSchema, bytes)));
        }
      }),
      { numRuns: 300 },
    );
    assert.ok(memo.hits > 0, 'repeated lists were shared');
    assert.ok(nodes.hits > 0, 'repeated nodes were shared');
  });

  it('an ACK repeating a long list gets the same (frozen) names without decoding them again', () => {
    const memo = new NameListMemo({ maxBytes: 1 << 20 });
    const ack = (nonce: string): Uint8Array =>
      toBinary(
        DiscoveryRequestSchema,
        create(DiscoveryRequestSchema, { typeUrl: 't', versionInfo: 'v', responseNonce: nonce, resourceNames: clusterNames(300) }),
      );
    const a = decodeDiscoveryRequest(ack('1'), memo);
    const b = decodeDiscoveryRequest(ack('2'), memo);
    assert.equal(b.responseNonce, '2');
    assert.deepEqual(b.resourceNames, clusterNames(300));
    assert.equal(memo.misses, 1);
    assert.equal(memo.hits, 1);
    assert.ok(a.resourceNames.every((n, i) => n === b.resourceNames[i]));
  });

  it('lists of one length and the same ends, differing inside, are each decoded and each held', () => {
    const memo = new NameListMemo({ maxBytes: 1 << 20 });
    const list = (middle: string): Uint8Array => {
      const names = clusterNames(300);
      names[150] = `outbound|8080||${middle}.ns-1.svc.cluster.local`;
      return toBinary(DiscoveryRequestSchema, create(DiscoveryRequestSchema, { typeUrl: 't', resourceNames: names }));
    };
    const [a, b] = [list('aaa'), list('bbb')];
    assert.equal(a.byteLength, b.byteLength);
    for (let round = 0; round < 2; round++) {
      assert.equal(decodeDiscoveryRequest(a, memo).resourceNames[150], 'outbound|8080||aaa.ns-1.svc.cluster.local');
      assert.equal(decodeDiscoveryRequest(b, memo).resourceNames[150], 'outbound|8080||bbb.ns-1.svc.cluster.local');
    }
    assert.deepEqual([memo.misses, memo.hits], [2, 2]);
  });

  it('a list cut inside an entry fails as protobuf-es fails it', () => {
    const memo = new NameListMemo({ maxBytes: 1 << 20 });
    // resource_names is the last field written: the cut falls inside the last name.
    const whole = toBinary(DiscoveryRequestSchema, create(DiscoveryRequestSchema, { versionInfo: 'v', resourceNames: clusterNames(20) }));
    const cut = whole.subarray(0, whole.byteLength - 3);
    assert.throws(() => fromBinary(DiscoveryRequestSchema, cut));
    assert.throws(() => decodeDiscoveryRequest(cut, memo));
  });

  it('keeps at most maxBytes of lists, oldest out first', () => {
    const memo = new NameListMemo({ maxBytes: 40_000 });
    const list = (k: number): Uint8Array =>
      toBinary(DiscoveryRequestSchema, create(DiscoveryRequestSchema, { resourceNames: clusterNames(300).map((n) => `${k}-${n}`) }));
    for (let k = 0; k < 5; k++) decodeDiscoveryRequest(list(k), memo);
    const misses = memo.misses;
    decodeDiscoveryRequest(list(4), memo);
    assert.equal(memo.misses, misses, 'the newest list is still held');
    decodeDiscoveryRequest(list(0), memo);
    assert.equal(memo.misses, misses + 1, 'the oldest list was dropped');
  });
});

describe('decodeDeltaDiscoveryRequest', () => {
  it('equals protobuf-es fromBinary for any request (node, initial versions, error_detail, both lists)', () => {
    const names = new NameListMemo({ maxBytes: 1 << 20 });
    const nodes = new DecodedByBytes<Node>({ maxBytes: 1 << 20 });
    const list = fc.oneof(fc.array(fc.string({ unit: 'grapheme' }), { maxLength: 20 }), fc.integer({ min: 0, max: 30 }).map(clusterNames));
    const request = fc.record({
      typeUrl: fc.constantFrom('type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment', '', 'x'),
      responseNonce: fc.string(),
      resourceNamesSubscribe: list,
      resourceNamesUnsubscribe: list,
      node: fc.option(fc.record({ id: fc.string(), cluster: fc.string({ minLength: 300, maxLength: 400 }) }), { nil: undefined, freq: 2 }),
      initialResourceVersions: fc.oneof(fc.constant({}), fc.dictionary(fc.string(), fc.string())),
      errorDetail: fc.option(fc.record({ code: fc.integer({ min: 0, max: 16 }), message: fc.string() }), { nil: undefined, freq: 3 }),
    });
    fc.assert(
      fc.property(request, (init) => {
        const bytes = toBinary(DeltaDiscoveryRequestSchema, create(DeltaDiscoveryRequestSchema, init));
        for (let i = 0; i < 2; i++) {
          const got = decodeDeltaDiscoveryRequest(bytes, names, nodes);
          assert.ok(equals(DeltaDiscoveryRequestSchema, got, fromBinary(DeltaDiscoveryRequestSchema, bytes)));
        }
      }),
      { numRuns: 300 },
    );
    assert.ok(names.hits > 0 && nodes.hits > 0, 'repeated lists and nodes were shared');
  });

  it('a subscription list and a repeated node are decoded once for every client that sends the same bytes', () => {
    const names = new NameListMemo({ maxBytes: 1 << 20 });
    const nodes = new DecodedByBytes<Node>({ maxBytes: 1 << 20 });
    const node = {
      id: 'sidecar~10.0.0.1~a.ns~ns.svc.cluster.local',
      metadata: { NAMESPACE: 'ns', LABELS: { app: `a-${'x'.repeat(300)}` } },
    };
    const sub = (nonce: string): Uint8Array =>
      toBinary(
        DeltaDiscoveryRequestSchema,
        create(DeltaDiscoveryRequestSchema, { typeUrl: 't', responseNonce: nonce, node, resourceNamesSubscribe: clusterNames(300) }),
      );
    const a = decodeDeltaDiscoveryRequest(sub('1'), names, nodes);
    const b = decodeDeltaDiscoveryRequest(sub('2'), names, nodes);
    assert.equal(b.responseNonce, '2');
    assert.equal(a.resourceNamesSubscribe, b.resourceNamesSubscribe);
    assert.equal(a.node, b.node);
    assert.deepEqual([names.misses, names.hits, nodes.misses, nodes.hits], [1, 1, 1, 1]);
  });
});
