import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { create } from '@bufbuild/protobuf';
import { NodeSchema } from '../gen/envoy/config/core/v3/base_pb.js';
import { lackingSummary, parseProxyExtensions } from './proxy-extensions.js';

/** A node listing one extension per config type, as Envoy fills Node.extensions. */
const node = (typeUrls: readonly string[], extra: readonly string[] = []) =>
  create(NodeSchema, {
    id: 'sidecar~10.0.0.1~a.ns~ns.svc.cluster.local',
    userAgentName: 'envoy',
    userAgentVersionType: { case: 'userAgentBuildVersion', value: { version: { majorNumber: 1, minorNumber: 40, patch: 0 } } },
    extensions: [
      ...typeUrls.map((t, i) => ({ name: `ext-${i}`, category: 'envoy.filters.http', typeUrls: [t] })),
      ...extra.map((name) => ({ name, category: 'envoy.filters.http' })),
    ],
  });

const ISTIO_TYPES = [
  'io.istio.http.peer_metadata.Config',
  'envoy.tcp.metadataexchange.config.MetadataExchange',
  'istio.envoy.config.filter.http.alpn.v2alpha1.FilterConfig',
  'stats.PluginConfig',
];

describe('parseProxyExtensions', () => {
  it('takes a node that lists nothing for istio-proxy (as istiod does)', () => {
    const x = parseProxyExtensions(node([]));
    assert.equal(x.declared, false);
    assert.deepEqual(x.lacking, []);
    assert.ok(x.supports('istio.metadata_exchange') && x.supports('istio.stats'));
    assert.equal(x.key, '');
    assert.equal(lackingSummary(x), undefined);
  });

  it('takes a node whose extensions carry no config types for istio-proxy too (it cannot say)', () => {
    assert.deepEqual(parseProxyExtensions(node([], ['envoy.filters.http.router'])).lacking, []);
  });

  it('reads stock Envoy (no Istio config type) as lacking every Istio filter', () => {
    const x = parseProxyExtensions(
      node(['envoy.extensions.filters.http.router.v3.Router', 'envoy.extensions.filters.http.grpc_stats.v3.FilterConfig']),
    );
    assert.equal(x.declared, true);
    assert.deepEqual(x.lacking, ['istio.metadata_exchange', 'istio.alpn', 'istio.stats']);
    assert.ok(!x.supports('istio.alpn'));
    assert.equal(x.key, 'lacks:istio.metadata_exchange,istio.alpn,istio.stats');
    assert.match(
      lackingSummary(x) ?? '',
      /^envoy 1\.40\.0 lacks istio\.metadata_exchange, istio\.alpn, istio\.stats: generated without them/,
    );
  });

  it('reads istio-proxy listing its config types as lacking none (the same cache key as an undeclared one)', () => {
    const x = parseProxyExtensions(node(['envoy.extensions.filters.http.router.v3.Router', ...ISTIO_TYPES]));
    assert.deepEqual(x.lacking, []);
    assert.equal(x.key, '');
  });

  it('needs every config type of a filter: HTTP peer metadata without the TCP exchange is not metadata exchange', () => {
    const x = parseProxyExtensions(node(ISTIO_TYPES.filter((t) => t !== 'envoy.tcp.metadataexchange.config.MetadataExchange')));
    assert.deepEqual(x.lacking, ['istio.metadata_exchange']);
  });
});
