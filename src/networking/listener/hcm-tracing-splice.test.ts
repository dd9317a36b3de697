import assert from 'node:assert/strict';
import { test } from 'node:test';
import { create, toBinary } from '@bufbuild/protobuf';
import { ListenerSchema } from '../../gen/envoy/config/listener/v3/listener_pb.js';
import {
  HttpConnectionManager_TracingSchema,
  HttpConnectionManagerSchema,
} from '../../gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager_pb.js';
import { makeResource } from '../../xds/resource.js';
import { TypeUrl } from '../../xds/type-urls.js';
import { packAny, type Init } from '../common.js';
import { tcpProxyFilter } from './tcp-proxy.js';
import { listenerWithHcmTracing, withHcmTracing } from './hcm-tracing-splice.js';

type TracingInit = Init<typeof HttpConnectionManager_TracingSchema>;
const TRACING: TracingInit = {
  randomSampling: { value: 1 },
  customTags: [{ tag: 'istio.canonical_service', type: { case: 'literal', value: { value: 'reviews' } } }],
};

/** A listener with HCMs in a filter chain and in the default chain, and a tcp_proxy chain between them. */
function listener(tracing?: TracingInit): Uint8Array {
  const hcm = (rds: string) => ({
    name: 'envoy.filters.network.http_connection_manager',
    configType: {
      case: 'typedConfig' as const,
      value: packAny(HttpConnectionManagerSchema, {
        statPrefix: `outbound_0.0.0.0_${rds};`, // field 2: before tracing
        routeSpecifier: { case: 'rds', value: { routeConfigName: rds } }, // 3
        httpFilters: [{ name: 'envoy.filters.http.router' }], // 5
        ...(tracing ? { tracing } : {}), // 7
        normalizePath: true, // 30: after it
        upgradeConfigs: [{ upgradeType: 'websocket' }], // 23
      }),
    },
  });
  return toBinary(
    ListenerSchema,
    create(ListenerSchema, {
      name: '0.0.0.0_80',
      filterChains: [{ filters: [hcm('80')] }, { name: 'tcp', filters: [tcpProxyFilter('tcp', { cluster: 'PassthroughCluster' })] }],
      defaultFilterChain: { filters: [hcm('8080')] },
      trafficDirection: 2,
    }),
  );
}

test('tracing laid into every HCM of an encoded listener gives the bytes of encoding it with the tracing set', () => {
  const tracing = toBinary(HttpConnectionManager_TracingSchema, create(HttpConnectionManager_TracingSchema, TRACING));
  assert.deepEqual(listenerWithHcmTracing(listener(), tracing), listener(TRACING));
});

test('a listener without an HCM is left as it is (the same bytes, the same resource)', () => {
  const bytes = toBinary(
    ListenerSchema,
    create(ListenerSchema, {
      name: 'virtualOutbound',
      filterChains: [{ filters: [tcpProxyFilter('x', { cluster: 'PassthroughCluster' })] }],
    }),
  );
  const tracing = toBinary(HttpConnectionManager_TracingSchema, create(HttpConnectionManager_TracingSchema, TRACING));
  assert.equal(listenerWithHcmTracing(bytes, tracing), bytes);
  const tcpOnly = makeResource('virtualOutbound', TypeUrl.Listener, bytes);
  const http = makeResource('0.0.0.0_80', TypeUrl.Listener, listener());
  const [a, b] = withHcmTracing([tcpOnly, http], tracing);
  assert.equal(a, tcpOnly);
  assert.deepEqual(b?.value, listener(TRACING));
  assert.notEqual(b?.version, http.version);
});

test('a shared listener that already carries tracing is refused, not traced twice', () => {
  const tracing = toBinary(HttpConnectionManager_TracingSchema, create(HttpConnectionManager_TracingSchema, TRACING));
  assert.throws(() => listenerWithHcmTracing(listener(TRACING), tracing), /already carries tracing/);
});

test('spliced lists are memoized on the shared list and the tracing bytes; no tracing is the shared list itself', () => {
  const shared = Object.freeze([makeResource('0.0.0.0_80', TypeUrl.Listener, listener())]);
  const t1 = toBinary(HttpConnectionManager_TracingSchema, create(HttpConnectionManager_TracingSchema, TRACING));
  const t2 = toBinary(
    HttpConnectionManager_TracingSchema,
    create(HttpConnectionManager_TracingSchema, { ...TRACING, randomSampling: { value: 5 } }),
  );
  assert.equal(withHcmTracing(shared, undefined), shared);
  assert.equal(withHcmTracing(shared, t1), withHcmTracing(shared, t1));
  assert.notEqual(withHcmTracing(shared, t1), withHcmTracing(shared, t2));
  assert.notDeepEqual(withHcmTracing(shared, t1)[0]?.value, withHcmTracing(shared, t2)[0]?.value);
});
