import assert from 'node:assert/strict';
import { test } from 'node:test';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { anyPack } from '@bufbuild/protobuf/wkt';
import { ClusterSchema } from '../src/gen/envoy/config/cluster/v3/cluster_pb.js';
import { DiscoveryResponseSchema } from '../src/gen/envoy/service/discovery/v3/discovery_pb.js';
import { leanDiscoveryResponse } from '../bench/load-gen/resource-wire.js';
import { Holdings } from '../bench/load-gen/holdings.js';
import { TYPE } from './support/xds-resources.js';

const cluster = (name: string, connectMs: number) =>
  anyPack(ClusterSchema, create(ClusterSchema, { name, connectTimeout: { seconds: BigInt(connectMs) } }));

test("the load generator's lean response decoding reads what protobuf-es reads (version, type, nonce, each resource's value)", () => {
  const bytes = toBinary(
    DiscoveryResponseSchema,
    create(DiscoveryResponseSchema, {
      versionInfo: '2026-12-05T00:00:00Z/7',
      typeUrl: TYPE.CDS,
      nonce: 'n-1',
      resources: [cluster('a', 1), cluster('b', 2)],
      controlPlane: { identifier: 'x' },
    }),
  );
  const full = fromBinary(DiscoveryResponseSchema, bytes);
  const lean = leanDiscoveryResponse(bytes);
  assert.deepEqual([lean.versionInfo, lean.typeUrl, lean.nonce], [full.versionInfo, full.typeUrl, full.nonce]);
  assert.deepEqual(
    lean.resources.map((r) => [r.typeUrl, Buffer.from(r.value).toString('hex')]),
    full.resources.map((r) => [r.typeUrl, Buffer.from(r.value).toString('hex')]),
  );
});

test('held resources are shared by content: same bytes (by comparison or by hash) one object, changed bytes a new one', () => {
  const resp = (value: Uint8Array) => ({
    typeUrl: TYPE.CDS,
    versionInfo: '1',
    items: [{ name: undefined, value }],
    removed: [],
    full: true,
    bytes: 0,
    at: 0,
    ack: () => {},
  });
  const [a1, a2, b] = [cluster('a', 1), cluster('a', 1), cluster('a', 2)].map((x) => Uint8Array.from(x.value));
  const p = new Holdings();
  const q = new Holdings();
  p.apply(resp(a1!));
  assert.equal(q.apply(resp(a2!)), true);
  assert.equal(p.of(TYPE.CDS).get('a'), q.of(TYPE.CDS).get('a'), 'equal bytes: one held resource');
  assert.equal(q.apply(resp(b!)), true, 'changed bytes are a change');
  assert.notEqual(q.of(TYPE.CDS).get('a'), p.of(TYPE.CDS).get('a'));
  assert.equal(p.apply(resp(Uint8Array.from(a1!))), false, 'the same bytes again change nothing');
  assert.equal(q.apply(resp(Uint8Array.from(a1!))), true);
  assert.equal(q.of(TYPE.CDS).get('a'), p.of(TYPE.CDS).get('a'), 'back to the first content: the first object (by hash)');
});
