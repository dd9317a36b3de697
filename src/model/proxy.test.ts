import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { create } from '@bufbuild/protobuf';
import { NodeSchema } from '../gen/envoy/config/core/v3/base_pb.js';
import { isProxyless, parseProxy } from './proxy.js';

describe('parseProxy', () => {
  it('parses istiod node ids, metadata and locality', () => {
    const node = create(NodeSchema, {
      id: 'sidecar~10.1.2.3~reviews-v1-abc.bookinfo~bookinfo.svc.cluster.local',
      metadata: { GENERATOR: 'grpc', LABELS: { app: 'reviews', version: 'v1' }, CLUSTER_ID: 'Kubernetes', ISTIO_VERSION: '1.28.0' },
      locality: { region: 'us-east1', zone: 'b' },
    });
    const r = parseProxy(node);
    assert.ok(r.ok);
    const p = r.value;
    assert.equal(p.type, 'sidecar');
    assert.deepEqual(p.ipAddresses, ['10.1.2.3']);
    assert.equal(p.podName, 'reviews-v1-abc.bookinfo');
    assert.equal(p.namespace, 'bookinfo');
    assert.equal(p.dnsDomain, 'bookinfo.svc.cluster.local');
    assert.deepEqual(p.labels, { app: 'reviews', version: 'v1' });
    assert.equal(p.metadata.clusterId, 'Kubernetes');
    assert.equal(p.metadata.istioVersion, '1.28.0');
    assert.deepEqual(p.locality, { region: 'us-east1', zone: 'b', subzone: '' });
    assert.ok(isProxyless(p));
  });

  it("INSTANCE_IPS gives every address (a dual-stack pod); one that is no IP leaves the id's", () => {
    const id = 'sidecar~10.0.0.7~app-0.default~default.svc.cluster.local';
    const ips = (v: string | string[]): readonly string[] => {
      const r = parseProxy(create(NodeSchema, { id, metadata: { INSTANCE_IPS: v } }));
      assert.ok(r.ok);
      return r.value.ipAddresses;
    };
    assert.deepEqual(ips('10.0.0.7,fd00::7'), ['10.0.0.7', 'fd00::7']);
    assert.deepEqual(ips(['10.0.0.7', 'fd00::7']), ['10.0.0.7', 'fd00::7']);
    assert.deepEqual(ips('10.0.0.7,not-an-ip'), ['10.0.0.7']);
  });

  it('metadata NAMESPACE wins over the id', () => {
    const r = parseProxy(create(NodeSchema, { id: 'router~1.1.1.1~gw.a~a.svc.cluster.local', metadata: { NAMESPACE: 'b' } }));
    assert.ok(r.ok);
    assert.equal(r.value.namespace, 'b');
    assert.equal(r.value.type, 'router');
    assert.ok(!isProxyless(r.value));
  });

  it('rejects a missing node, a malformed id and an unknown proxy type with a message naming the id', () => {
    for (const [node, needle] of [
      [undefined, 'node.id'],
      [create(NodeSchema, { id: 'not-an-istio-id' }), 'not-an-istio-id'],
      [create(NodeSchema, { id: 'gateway~1.1.1.1~a.b~b.svc.cluster.local' }), 'unknown proxy type "gateway"'],
    ] as const) {
      const r = parseProxy(node);
      assert.ok(!r.ok);
      assert.match(r.errors[0]!.message, new RegExp(needle.replace(/[.*"]/g, '\\$&')));
    }
  });
});
