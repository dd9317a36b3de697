import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fromBinary } from '@bufbuild/protobuf';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import { pushOf } from '../../../test/support/config-fixture.js';
import { BootstrapConfigDumpSchema } from '../../gen/envoy/admin/v3/config_dump_pb.js';
import { ClientConfigSchema } from '../../gen/envoy/service/status/v3/csds_pb.js';
import { pushRequest } from '../../model/push-request.js';
import { GeneratorRegistry } from '../generator.js';
import { TypeUrl } from '../type-urls.js';
import { XdsStats } from '../xds-stats.js';
import { buildConfigDump } from './config-dump.js';
import { synczGenerator } from './debug-generators.js';
import { metricsObserver } from './metrics-observer.js';
import { findConnection, syncStatus, syncz } from './syncz.js';
import { testConnection } from './test-connections.js';

describe('syncz', () => {
  it('derives SYNCED / STALE / NACKED / NOT SENT and istiod nonce fields', () => {
    const c = testConnection('a');
    c.setWatched(TypeUrl.Cluster, {
      typeUrl: TypeUrl.Cluster,
      names: new Set(),
      wildcard: true,
      nonceSent: 'n1',
      nonceAcked: 'n1',
      versionSent: 'v1',
      versionAcked: 'v1',
    });
    c.setWatched(TypeUrl.Listener, { typeUrl: TypeUrl.Listener, names: new Set(['x:80']), wildcard: false, nonceSent: 'n2' });
    c.setWatched(TypeUrl.RouteConfiguration, {
      typeUrl: TypeUrl.RouteConfiguration,
      names: new Set(['r']),
      wildcard: false,
      nonceSent: 'n3',
      lastError: { nonce: 'n3', message: 'bad', code: 3, at: 0 },
    });
    c.setWatched(TypeUrl.ClusterLoadAssignment, { typeUrl: TypeUrl.ClusterLoadAssignment, names: new Set(['e']), wildcard: false });
    const [e] = syncz([c]);
    assert.equal(e?.cluster_sent, 'n1');
    assert.equal(e?.cluster_acked, 'n1');
    assert.equal(e?.listener_sent, 'n2');
    assert.equal(e?.listener_acked, undefined);
    assert.deepEqual(Object.fromEntries(Object.entries(e?.types ?? {}).map(([k, v]) => [k, v.status])), {
      CDS: 'SYNCED',
      LDS: 'STALE',
      RDS: 'NACKED',
      EDS: 'NOT SENT',
    });
    assert.equal(e?.types.RDS?.lastNack?.message, 'bad');
    assert.equal(syncStatus(undefined), 'NOT SENT');
  });

  it('says what a proxy without Istio extensions gets its config without; nothing for istio-proxy', () => {
    const [stock, istio] = syncz([
      testConnection('a', { n: 1, configTypes: ['envoy.extensions.filters.http.router.v3.Router'] }),
      testConnection('a', { n: 2 }),
    ]);
    assert.match(stock?.extensions ?? '', /^envoy lacks istio\.metadata_exchange, istio\.alpn, istio\.stats: generated without them/);
    assert.equal(istio?.extensions, undefined);
  });

  it('finds a connection by node id, connection id or pod.namespace; newest first', () => {
    const old = testConnection('a', { n: 1, connectedAt: 1 });
    const neu = testConnection('a', { n: 2, connectedAt: 2 });
    const other = testConnection('b', { namespace: 'prod' });
    const all = [old, neu, other];
    assert.equal(findConnection(all, neu.proxy.id), neu);
    assert.equal(findConnection(all, old.id), old);
    assert.equal(findConnection(all, 'b.prod'), other);
    assert.equal(findConnection(all, 'nope.default'), undefined);
    assert.equal(findConnection(all, ''), undefined);
  });
});

describe('metricsObserver and XdsStats', () => {
  it('records queue time (not push time: the server measures that), oversized responses and cache totals across PushContexts', async () => {
    const stats = new XdsStats();
    const clock = {
      t: 0,
      now() {
        return this.t;
      },
    };
    const obs = metricsObserver(() => stats, clock);
    const c = testConnection('a');
    const req = pushRequest({ full: true, reason: 'config', start: 0 });
    clock.t = 100;
    obs.responseSent?.(c, { typeUrl: TypeUrl.Cluster, nonce: 'n', version: 'v', bytes: 1, resources: 1, req, delta: false });
    clock.t = 150;
    obs.responseSent?.(c, { typeUrl: TypeUrl.Listener, nonce: 'm', version: 'v', bytes: 1, resources: 1, req, delta: false });
    clock.t = 170;
    obs.proxyPushed?.(c, req, 40);
    stats.recordOversizedResponse('CDS', 5_000_000);
    let cache = { size: 3, hits: 5, misses: 2, evictions: 1 };
    const first = { stats: () => cache };
    stats.observeCache(() => first);
    assert.deepEqual(stats.cacheTotals(), { hits: 5, misses: 2, evictions: 1, size: 3 });
    const second = { stats: () => ({ size: 1, hits: 1, misses: 1, evictions: 0 }) };
    stats.observeCache(() => second);
    cache = { size: 3, hits: 6, misses: 2, evictions: 1 }; // final counts of the replaced cache
    assert.deepEqual(stats.cacheTotals(), { hits: 7, misses: 3, evictions: 1, size: 1 });

    const text = await stats.registry.metrics();
    assert.match(text, /^pilot_proxy_queue_time_sum 0\.06$/m);
    assert.match(text, /^pilot_proxy_queue_time_bucket\{le="0\.1"\} 1$/m);
    assert.doesNotMatch(text, /^pilot_xds_push_time_sum/m, 'push time is recorded once, by the server');
    assert.match(text, /^meshpilot_xds_oversized_responses_total\{type="cds"\} 1$/m);
    assert.match(text, /^xds_cache_reads\{type="hit"\} 7$/m);
    assert.match(text, /^xds_cache_reads\{type="miss"\} 3$/m);
    assert.match(text, /^xds_cache_evictions 1$/m);
    assert.match(text, /^xds_cache_size 1$/m);
  });
});

describe('debug types: what meshctl reads', () => {
  it("syncz names a proxy without CLUSTER_ID by the control plane's cluster and carries its user agent", () => {
    const conn = testConnection('a');
    const push = pushOf([]);
    const ds = { connectionList: () => [conn], push: () => push };
    const [res] = synczGenerator(ds, undefined, undefined, 'east').generate(
      conn.proxy,
      { names: new Set() } as never,
      push,
      pushRequest({ full: true, reason: 'debug', start: 0 }),
    );
    const cc = fromBinary(ClientConfigSchema, res!.value);
    assert.equal(cc.node?.id, conn.proxy.id);
    assert.deepEqual(cc.node?.metadata, { NAMESPACE: 'default', CLUSTER_ID: 'east' });
    assert.equal(cc.node?.userAgentName, 'envoy');
  });

  it("the config dump's bootstrap is the node the proxy introduced itself with", () => {
    const conn = testConnection('a');
    const dump = buildConfigDump(conn, pushOf([]), new GeneratorRegistry(), { now: 0 });
    const boot = dump.configs[0] ? anyUnpack(dump.configs[0], BootstrapConfigDumpSchema) : undefined;
    assert.equal(boot?.bootstrap?.node?.id, conn.proxy.id);
    assert.equal(boot?.bootstrap?.node?.userAgentName, 'envoy');
    assert.deepEqual(boot?.bootstrap?.node?.metadata, { GENERATOR: 'grpc', NAMESPACE: 'default' });
  });
});
