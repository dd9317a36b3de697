import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { create, fromJson, toBinary, toJson } from '@bufbuild/protobuf';
import { ListenerSchema } from '../gen/envoy/config/listener/v3/listener_pb.js';
import { HttpConnectionManagerSchema } from '../gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager_pb.js';
import { RouterSchema } from '../gen/envoy/extensions/filters/http/router/v3/router_pb.js';
import { packAny } from '../networking/common.js';
import { anyBytesToJson, xdsJsonRegistry } from './json-registry.js';
import { makeResource } from '../xds/resource.js';
import { TypeUrl } from '../xds/type-urls.js';

describe('proto3 JSON with a type registry for Any', () => {
  const hcm = packAny(HttpConnectionManagerSchema, {
    statPrefix: 'x',
    httpFilters: [{ name: 'envoy.filters.http.router', configType: { case: 'typedConfig', value: packAny(RouterSchema, {}) } }],
  });
  const listener = create(ListenerSchema, { name: 'a.default.svc.cluster.local:80', apiListener: { apiListener: hcm } });

  it('prints nested Any as typed objects and parses them back to the same message', () => {
    const registry = xdsJsonRegistry();
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- walking free-form JSON
    const json = toJson(ListenerSchema, listener, { registry }) as Record<string, any>;
    assert.equal(
      json.apiListener.apiListener['@type'],
      'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
    );
    assert.equal(
      json.apiListener.apiListener.httpFilters[0].typedConfig['@type'],
      'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router',
    );
    const back = fromJson(ListenerSchema, json, { registry });
    assert.deepEqual(toBinary(ListenerSchema, back), toBinary(ListenerSchema, listener));
  });

  it('turns a marshalled-once resource into JSON', () => {
    const res = makeResource(listener.name, TypeUrl.Listener, toBinary(ListenerSchema, listener));
    const json = anyBytesToJson(xdsJsonRegistry(), res.any) as Record<string, unknown>;
    assert.equal(json['@type'], TypeUrl.Listener);
    assert.equal(json.name, listener.name);
  });

  it('without the registry, JSON of a nested Any fails loudly rather than printing garbage', () => {
    assert.throws(() => toJson(ListenerSchema, listener));
  });
});
