import assert from 'node:assert/strict';
import { test } from 'node:test';
import { create } from '@bufbuild/protobuf';
import { ListenerSchema, type Listener } from '../../gen/envoy/config/listener/v3/listener_pb.js';
import { ListenerFilterChainMatchPredicateSchema } from '../../gen/envoy/config/listener/v3/listener_components_pb.js';
import { MetadataSchema } from '../../gen/envoy/config/core/v3/base_pb.js';
import { ExtensionConfigSourceSchema } from '../../gen/envoy/config/core/v3/config_source_pb.js';
import { HealthCheck_HttpHealthCheckSchema } from '../../gen/envoy/config/core/v3/health_check_pb.js';
import { UpstreamHttpProtocolOptionsSchema } from '../../gen/envoy/config/core/v3/protocol_pb.js';
import { RouteConfigurationSchema, type RouteConfiguration } from '../../gen/envoy/config/route/v3/route_pb.js';
import { HeaderMatcherSchema, RouteMatchSchema } from '../../gen/envoy/config/route/v3/route_components_pb.js';
import { RouterSchema } from '../../gen/envoy/extensions/filters/http/router/v3/router_pb.js';
import {
  HttpConnectionManager_CodecType,
  HttpConnectionManagerSchema,
} from '../../gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager_pb.js';
import { adsConfigSource, packAny, type Init } from '../../networking/common.js';
import { brokenRules, violationsOf } from './test-helpers.js';

const HCM = 'envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager';

function hcmListener(hcm: Init<typeof HttpConnectionManagerSchema>): Listener {
  return create(ListenerSchema, {
    name: '0.0.0.0_8080',
    address: { address: { case: 'socketAddress', value: { address: '0.0.0.0', portSpecifier: { case: 'portValue', value: 8080 } } } },
    filterChains: [
      {
        filters: [
          {
            name: 'envoy.filters.network.http_connection_manager',
            configType: { case: 'typedConfig', value: packAny(HttpConnectionManagerSchema, hcm) },
          },
        ],
      },
    ],
  });
}

const goodHcm: Init<typeof HttpConnectionManagerSchema> = {
  statPrefix: 'outbound_0.0.0.0_8080',
  routeSpecifier: { case: 'rds', value: { routeConfigName: '8080', configSource: adsConfigSource() } },
  httpFilters: [{ name: 'envoy.filters.http.router', configType: { case: 'typedConfig', value: packAny(RouterSchema, {}) } }],
};

test('a listener with a well-formed HCM (and its router filter) breaks no rule', () => {
  assert.deepEqual(brokenRules(ListenerSchema, hcmListener(goodHcm)), []);
});

test('rules inside an Any nested in a listener: paths name the packed type', () => {
  const listener = hcmListener({
    ...goodHcm,
    statPrefix: '',
    codecType: 7 as HttpConnectionManager_CodecType,
    routeSpecifier: { case: undefined },
    httpFilters: [goodHcm.httpFilters![0]!, { name: '' }],
  });
  const prefix = `filter_chains[0].filters[0].typed_config(${HCM})`;
  assert.deepEqual(brokenRules(ListenerSchema, listener), [
    `${prefix}.codec_type enum.defined_only`,
    `${prefix}.stat_prefix string.min_len`,
    `${prefix}.http_filters[1].name string.min_len`,
    `${prefix}.route_specifier oneof.required`,
  ]);
});

test('message.required inside the Any: RDS without a config_source', () => {
  const listener = hcmListener({ ...goodHcm, routeSpecifier: { case: 'rds', value: { routeConfigName: '8080' } } });
  assert.deepEqual(brokenRules(ListenerSchema, listener), [
    `filter_chains[0].filters[0].typed_config(${HCM}).rds.config_source message.required`,
  ]);
  // The codec_type default (AUTO, 0) is defined: proto3 defaults are checked and pass.
  assert.equal(HttpConnectionManager_CodecType.AUTO, 0);
});

test('listener filter name min_len and socket address port lte 65535', () => {
  const listener = create(ListenerSchema, {
    address: { address: { case: 'socketAddress', value: { address: '', portSpecifier: { case: 'portValue', value: 65_536 } } } },
    filterChains: [{ filters: [{ name: 'envoy.filters.network.tcp_proxy' }, { name: '' }] }],
  });
  assert.deepEqual(brokenRules(ListenerSchema, listener), [
    'address.socket_address.address string.min_len',
    'address.socket_address.port_value uint32.lte',
    'filter_chains[0].filters[1].name string.min_len',
  ]);
  const v = violationsOf(ListenerSchema, listener)[1]!;
  assert.match(v.message, /less than or equal to 65535, got 65536/);
});

function routeConfig(init: Init<typeof RouteConfigurationSchema>): RouteConfiguration {
  return create(RouteConfigurationSchema, { name: '8080', ...init });
}

test('VirtualHost domains: min_items and each item a loose HTTP_HEADER_VALUE', () => {
  const rc = routeConfig({
    virtualHosts: [
      { name: 'a', domains: [] },
      { name: 'b', domains: ['ok.example', 'bad\r\nhost'] },
      { name: '', domains: ['*'] },
    ],
  });
  assert.deepEqual(brokenRules(RouteConfigurationSchema, rc), [
    'virtual_hosts[0].domains repeated.min_items',
    'virtual_hosts[1].domains[1] string.well_known_regex',
    'virtual_hosts[2].name string.min_len',
  ]);
});

test('Route: match is required, the action oneof is required, RouteAction needs a cluster specifier', () => {
  const rc = routeConfig({
    virtualHosts: [
      {
        name: 'vh',
        domains: ['*'],
        routes: [
          {},
          { match: { pathSpecifier: { case: 'prefix', value: '/' } }, action: { case: 'route', value: {} } },
          {
            match: { pathSpecifier: { case: 'prefix', value: '/' } },
            action: { case: 'route', value: { clusterSpecifier: { case: 'weightedClusters', value: { clusters: [] } } } },
          },
          { match: { pathSpecifier: { case: 'prefix', value: '/' } }, action: { case: 'directResponse', value: { status: 199 } } },
          { match: { pathSpecifier: { case: 'prefix', value: '/' } }, action: { case: 'directResponse', value: { status: 600 } } },
        ],
      },
    ],
  });
  const r = 'virtual_hosts[0].routes';
  assert.deepEqual(brokenRules(RouteConfigurationSchema, rc), [
    `${r}[0].match message.required`,
    `${r}[0].action oneof.required`,
    `${r}[1].route.cluster_specifier oneof.required`,
    `${r}[2].route.weighted_clusters.clusters repeated.min_items`,
    `${r}[3].direct_response.status uint32.gte`,
    `${r}[4].direct_response.status uint32.lt`,
  ]);
  const msg = violationsOf(RouteConfigurationSchema, rc)[4]!.message;
  assert.match(msg, /inside range \[200, 600\), got 199/);
});

test('RouteMatch path_separated_prefix pattern is matched with RE2', () => {
  const m = (p: string) => create(RouteMatchSchema, { pathSpecifier: { case: 'pathSeparatedPrefix', value: p } });
  assert.deepEqual(brokenRules(RouteMatchSchema, m('/api')), []);
  assert.deepEqual(brokenRules(RouteMatchSchema, m('/api/')), ['path_separated_prefix string.pattern']);
  assert.deepEqual(brokenRules(RouteMatchSchema, m('/api?x')), ['path_separated_prefix string.pattern']);
});

test('HeaderMatcher name: min_len plus a loose (strict: false) HTTP_HEADER_NAME', () => {
  const h = (name: string) => create(HeaderMatcherSchema, { name, headerMatchSpecifier: { case: 'presentMatch', value: true } });
  assert.deepEqual(brokenRules(HeaderMatcherSchema, h('x-user')), []);
  assert.deepEqual(brokenRules(HeaderMatcherSchema, h('with space')), [], 'loose only forbids NUL, CR, LF');
  assert.deepEqual(brokenRules(HeaderMatcherSchema, h('')), ['name string.min_len']);
  assert.deepEqual(brokenRules(HeaderMatcherSchema, h('a\nb')), ['name string.well_known_regex']);
  assert.match(violationsOf(HeaderMatcherSchema, h('a\nb'))[0]!.message, /loose HTTP_HEADER_NAME \(value "a\\nb"\)/);
});

test('strict HTTP_HEADER_NAME with ignore_empty, strict HTTP_HEADER_VALUE', () => {
  const o = (h: string) => create(UpstreamHttpProtocolOptionsSchema, { overrideAutoSniHeader: h });
  assert.deepEqual(brokenRules(UpstreamHttpProtocolOptionsSchema, o('')), [], 'ignore_empty');
  assert.deepEqual(brokenRules(UpstreamHttpProtocolOptionsSchema, o(':authority')), []);
  assert.deepEqual(brokenRules(UpstreamHttpProtocolOptionsSchema, o('x-sni')), []);
  assert.deepEqual(brokenRules(UpstreamHttpProtocolOptionsSchema, o('x sni')), ['override_auto_sni_header string.well_known_regex']);
  assert.deepEqual(brokenRules(UpstreamHttpProtocolOptionsSchema, o('x:sni')), ['override_auto_sni_header string.well_known_regex']);

  const hc = (path: string) => create(HealthCheck_HttpHealthCheckSchema, { path });
  assert.deepEqual(brokenRules(HealthCheck_HttpHealthCheckSchema, hc('/healthz\tx')), [], 'tab is allowed in values');
  assert.deepEqual(brokenRules(HealthCheck_HttpHealthCheckSchema, hc('/a\u0001b')), ['path string.well_known_regex']);
  assert.deepEqual(brokenRules(HealthCheck_HttpHealthCheckSchema, hc('')), ['path string.min_len']);
});

test('map keys rules and Any map values (Metadata)', () => {
  const md = create(MetadataSchema, {
    filterMetadata: { '': { a: 1 }, istio: { b: 2 } },
    typedFilterMetadata: { x: { typeUrl: 'type.googleapis.com/not.Registered', value: new Uint8Array() } },
  });
  const violations = violationsOf(MetadataSchema, md);
  assert.deepEqual(
    violations.map((v) => `${v.path} ${v.rule}`),
    ['filter_metadata[""] string.min_len', 'typed_filter_metadata["x"] any.unknown_type'],
  );
  assert.match(violations[0]!.message, /^map key: value length must be at least 1/);
});

test('bool const: ListenerFilterChainMatchPredicate any_match must be true', () => {
  const p = (anyMatch: boolean) => create(ListenerFilterChainMatchPredicateSchema, { rule: { case: 'anyMatch', value: anyMatch } });
  assert.deepEqual(brokenRules(ListenerFilterChainMatchPredicateSchema, p(true)), []);
  assert.deepEqual(brokenRules(ListenerFilterChainMatchPredicateSchema, p(false)), ['any_match bool.const']);
  // A nested or_match with one rule breaks min_items 2; recursion reaches the nested predicate too.
  const nested = create(ListenerFilterChainMatchPredicateSchema, {
    rule: { case: 'orMatch', value: { rules: [{ rule: { case: 'anyMatch', value: false } }] } },
  });
  assert.deepEqual(brokenRules(ListenerFilterChainMatchPredicateSchema, nested), [
    'or_match.rules repeated.min_items',
    'or_match.rules[0].any_match bool.const',
  ]);
});

test('any.required on a plain message field is honoured as required (ExtensionConfigSource.config_source)', () => {
  assert.deepEqual(brokenRules(ExtensionConfigSourceSchema, create(ExtensionConfigSourceSchema, { typeUrls: ['x'] })), [
    'config_source any.required',
  ]);
  assert.deepEqual(
    brokenRules(ExtensionConfigSourceSchema, create(ExtensionConfigSourceSchema, { configSource: adsConfigSource(), typeUrls: ['x'] })),
    [],
  );
});
