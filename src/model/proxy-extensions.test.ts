import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { create } from '@bufbuild/protobuf';
import { NodeSchema } from '../gen/envoy/config/core/v3/base_pb.js';
import { lackingSummary, parseProxyExtensions } from './proxy-extensions.js';

const node = (names: readonly string[]) => create(NodeSchema, {
  id: 'sidecar~10.0.0.1~a.ns~ns.svc.cluster.local',
  userAgentName: 'envoy',
  userAgentVersionType: { case: 'userAgentBuildVersion', value: { version: { majorNumber: 1, minorNumber: 40, patch: 0 } } },
  extensions: names.map((name) => ({ name, category: 'envoy.filters.http' })),
});

describe('parseProxyExtensions', () => {
  it('takes a node that lists nothing for istio-proxy (as istiod does)', () => {
    const x = parseProxyExtensions(node([]));
    assert.equal(x.declared, false);
    assert.deepEqual(x.lacking, []);
    assert.ok(x.supports('istio.metadata_exchange') && x.supports('anything'));
    assert.equal(x.key, '');
    assert.equal(lackingSummary(x), undefined);
  });

  it('reads stock Envoy (no istio.* extension) as lacking every Istio extension', () => {
    const x = parseProxyExtensions(node(['envoy.filters.http.router', 'envoy.filters.http.grpc_stats']));
    assert.equal(x.declared, true);
    assert.deepEqual(x.lacking, ['istio.metadata_exchange', 'istio.alpn', 'istio.stats']);
    assert.ok(x.supports('envoy.filters.http.grpc_stats'));
    assert.ok(!x.supports('istio.alpn'));
    assert.equal(x.key, 'lacks:istio.metadata_exchange,istio.alpn,istio.stats');
    assert.match(lackingSummary(x) ?? '', /^envoy 1\.40\.0 lacks istio\.metadata_exchange, istio\.alpn, istio\.stats: generated without them/);
  });

  it('reads istio-proxy listing its extensions as lacking none (same cache key as an undeclared one)', () => {
    const x = parseProxyExtensions(node(['istio.metadata_exchange', 'istio.alpn', 'istio.stats', 'envoy.filters.http.router']));
    assert.deepEqual(x.lacking, []);
    assert.equal(x.key, '');
  });
});
