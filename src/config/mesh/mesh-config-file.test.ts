import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseMeshConfig } from './mesh-config-file.js';

describe('parseMeshConfig', () => {
  it("an empty document is istiod's defaults", () => {
    const c = parseMeshConfig('', 'test', 'cluster.local');
    const { telemetry, ...rest } = c.mesh;
    assert.deepEqual(rest, {
      trustDomain: 'cluster.local',
      rootNamespace: 'istio-system',
      domain: 'cluster.local',
      connectTimeoutMs: 10_000,
      outboundTrafficPolicy: 'ALLOW_ANY',
    });
    assert.deepEqual(
      telemetry.extensionProviders.map((p) => `${p.name}:${p.provider.case ?? ''}`),
      ['prometheus:prometheus', 'stackdriver:stackdriver', 'envoy:envoyFileAccessLog'],
    );
    assert.equal(telemetry.enableTracing, true);
    assert.equal(telemetry.accessLogFile, '');
    assert.deepEqual(c.discoverySelectors, []);
    assert.deepEqual(c.ignoredFields, []);
  });

  it('takes the fields meshpilot uses and lists the valid ones it ignores', () => {
    const c = parseMeshConfig(
      [
        'trustDomain: corp.example',
        'rootNamespace: mesh-root',
        'connectTimeout: 2.5s',
        'outboundTrafficPolicy: {mode: REGISTRY_ONLY}',
        'enableAutoMtls: false',
        'accessLogFile: /dev/stdout',
        'enableTracing: false',
        'extensionProviders: [{name: envoy, envoyFileAccessLog: {path: /tmp/a.log}}, {name: zipkin, zipkin: {service: zipkin.istio-system.svc.cluster.local, port: 9411}}]',
        'defaultProviders: {metrics: [prometheus]}',
        'defaultConfig: {discoveryAddress: "istiod.istio-system.svc:15012"}',
        'discoverySelectors:',
        '- matchLabels: {env: prod}',
        '- matchExpressions: [{key: app, operator: In, values: [a, b]}]',
      ].join('\n'),
      'test',
      'corp.local',
    );
    const { telemetry, ...rest } = c.mesh;
    assert.deepEqual(rest, {
      trustDomain: 'corp.example',
      rootNamespace: 'mesh-root',
      domain: 'corp.local',
      connectTimeoutMs: 2500,
      outboundTrafficPolicy: 'REGISTRY_ONLY',
      enableAutoMtls: false,
      discoveryAddress: 'istiod.istio-system.svc:15012',
    });
    // istiod's ApplyMeshConfig: a provider of a default's name replaces it, others are added.
    assert.deepEqual(
      telemetry.extensionProviders.map((p) => `${p.name}:${p.provider.case ?? ''}`),
      ['prometheus:prometheus', 'stackdriver:stackdriver', 'envoy:envoyFileAccessLog', 'zipkin:zipkin'],
    );
    assert.equal(
      telemetry.extensionProviders[2]?.provider.case === 'envoyFileAccessLog' && telemetry.extensionProviders[2].provider.value.path,
      '/tmp/a.log',
    );
    assert.deepEqual(telemetry.defaultProviders, { metrics: ['prometheus'], tracing: [], accessLogging: [] });
    assert.equal(telemetry.enableTracing, false);
    assert.equal(telemetry.accessLogFile, '/dev/stdout');
    assert.deepEqual(c.discoverySelectors, [
      { matchLabels: { env: 'prod' }, matchExpressions: [] },
      { matchLabels: {}, matchExpressions: [{ key: 'app', operator: 'In', values: ['a', 'b'] }] },
    ]);
    // defaultConfig is the injector's; only its discoveryAddress is read here (a default cluster-local host).
    assert.deepEqual(c.ignoredFields, ['defaultConfig']);
  });

  it('refuses what istiod refuses, naming where and what', () => {
    const where = 'ConfigMap istio-system/istio key mesh';
    assert.throws(
      () => parseMeshConfig('trustDomian: x', where, 'cluster.local'),
      (e: Error) => e.message.startsWith(where) && /trustDomian/.test(e.message),
    );
    assert.throws(() => parseMeshConfig('connectTimeout: soon', where, 'cluster.local'), /field connectTimeout: .*Duration.*"soon"/);
    assert.throws(() => parseMeshConfig('connectTimeout: 0s', where, 'cluster.local'), /connectTimeout must be more than 0/);
    assert.throws(
      () => parseMeshConfig('outboundTrafficPolicy: {mode: SOMETIMES}', where, 'cluster.local'),
      /field outboundTrafficPolicy: .*SOMETIMES/,
    );
    assert.throws(() => parseMeshConfig('- a list', where, 'cluster.local'), /a mapping of MeshConfig fields/);
    assert.throws(() => parseMeshConfig('a: [', where, 'cluster.local'), /not YAML/);
    // The limits every config file is read under: nesting is refused before the parser recurses.
    const deep = `defaultConfig:\n  proxyMetadata: ${'['.repeat(150)}${']'.repeat(150)}\n`;
    assert.throws(() => parseMeshConfig(deep, where, 'cluster.local'), {
      message: `${where}:2: nesting deeper than 100 levels`,
    });
    assert.throws(
      () => parseMeshConfig('discoverySelectors: [{matchExpressions: [{key: a, operator: Near}]}]', where, 'cluster.local'),
      /discoverySelectors\[0\]\.matchExpressions\[0\]\.operator: "Near"/,
    );
  });
});
