import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { create, fromJson, type JsonObject, type JsonValue } from '@bufbuild/protobuf';
import { validateBootstrapConfig } from '@grpc/grpc-js-xds/build/src/xds-bootstrap.js';
import { BootstrapSchema } from '../gen/envoy/config/bootstrap/v3/bootstrap_pb.js';
import { NodeSchema } from '../gen/envoy/config/core/v3/base_pb.js';
import { ApiConfigSource_ApiType } from '../gen/envoy/config/core/v3/config_source_pb.js';
import { parseProxy } from '../model/proxy.js';
import { xdsJsonRegistry } from '../model/json-registry.js';
import { assertValid } from '../xds/pgv/index.js';
import { envoyValidationRegistry } from '../model/json-registry.js';
import { buildEnvoyBootstrap } from './envoy-bootstrap.js';
import { buildGrpcBootstrap } from './grpc-bootstrap.js';
import { msToNanos, protoDurationJson } from '../util/duration.js';
import { buildNode, nodeMetadataFromEnv, type NodeFacts } from './node-identity.js';

const facts = (mode: 'grpc' | 'envoy', extra: Record<string, unknown> = {}): NodeFacts => ({
  mode,
  proxyType: 'sidecar',
  podName: 'client-7d4b9',
  namespace: 'foo',
  podIp: '10.0.0.7',
  serviceAccount: 'client',
  labels: { app: 'client', version: 'v1' },
  trustDomain: 'cluster.local',
  domain: 'cluster.local',
  clusterId: 'Kubernetes',
  istiodSAN: 'istiod.istio-system.svc',
  extraMetadata: extra,
});

describe('buildNode', () => {
  it('builds the node id, identity and metadata as Istio agent does, and meshpilot parses them back', () => {
    const node = buildNode(facts('grpc', { ISTIO_VERSION: '1.24.0', NAMESPACE: 'spoofed' }));
    assert.equal(node.id, 'sidecar~10.0.0.7~client-7d4b9.foo~foo.svc.cluster.local');
    assert.equal(node.identity, 'spiffe://cluster.local/ns/foo/sa/client');
    assert.equal(node.cluster, 'client.foo');
    assert.equal(node.metadata.GENERATOR, 'grpc');
    assert.equal(node.metadata.NAMESPACE, 'foo', 'pod facts win over stray ISTIO_META_ values');
    assert.equal(node.metadata.ISTIO_VERSION, '1.24.0');
    const proxy = parseProxy(create(NodeSchema, { id: node.id, metadata: node.metadata as JsonObject }));
    assert.ok(proxy.ok);
    assert.equal(proxy.value.metadata.generator, 'grpc');
    assert.equal(proxy.value.namespace, 'foo');
    assert.deepEqual(proxy.value.labels, { app: 'client', version: 'v1' });
    assert.deepEqual(proxy.value.ipAddresses, ['10.0.0.7']);
  });

  it('reads ISTIO_META_* as strings and ISTIO_METAJSON_* as JSON', () => {
    assert.deepEqual(
      nodeMetadataFromEnv({ ISTIO_META_CLUSTER_ID: 'c1', ISTIO_METAJSON_ANNOTATIONS: '{"a":"b"}', PATH: '/bin', ISTIO_META_: 'x' }),
      {
        CLUSTER_ID: 'c1',
        ANNOTATIONS: { a: 'b' },
      },
    );
    assert.throws(() => nodeMetadataFromEnv({ ISTIO_METAJSON_LABELS: '{' }), /ISTIO_METAJSON_LABELS: not JSON/);
  });
});

describe('gRPC xDS bootstrap', () => {
  const node = buildNode(facts('grpc'));
  const bootstrap = buildGrpcBootstrap({
    node,
    serverUri: 'unix:///run/agent/XDS',
    certDir: '/var/lib/istio/data',
    refreshIntervalMs: 900_000,
  });

  it('has Istio agent shape: insecure server over the agent socket, file_watcher "default", inbound template', () => {
    assert.deepEqual(bootstrap.xds_servers, [
      { server_uri: 'unix:///run/agent/XDS', channel_creds: [{ type: 'insecure' }], server_features: ['xds_v3'] },
    ]);
    assert.equal(bootstrap.server_listener_resource_name_template, 'xds.istio.io/grpc/lds/inbound/%s');
    assert.deepEqual(bootstrap.certificate_providers, {
      default: {
        plugin_name: 'file_watcher',
        config: {
          certificate_file: '/var/lib/istio/data/cert-chain.pem',
          private_key_file: '/var/lib/istio/data/key.pem',
          ca_certificate_file: '/var/lib/istio/data/root-cert.pem',
          refresh_interval: '900s',
        },
      },
    });
    assert.deepEqual((bootstrap.node as { locality: unknown }).locality, {});
  });

  it('is accepted by grpc-js-xds bootstrap validation', () => {
    const info = validateBootstrapConfig(JSON.parse(JSON.stringify(bootstrap)));
    assert.equal(info.xdsServers[0]?.server_uri, 'unix:///run/agent/XDS');
    assert.equal(info.node.id, node.id);
    assert.equal(info.serverListenerResourceNameTemplate, 'xds.istio.io/grpc/lds/inbound/%s');
    const provider = info.certificateProviders.default;
    assert.equal(provider?.pluginName, 'file_watcher');
    assert.equal(provider?.config.refreshIntervalMs, 900_000);
  });

  it('has no certificate provider without a cert directory', () => {
    assert.equal(buildGrpcBootstrap({ node, serverUri: 'x:1', refreshIntervalMs: 1000 }).certificate_providers, undefined);
  });

  it('formats durations as proto3 JSON', () => {
    assert.deepEqual(
      [900_000, 500, 1500, 0].map((ms) => protoDurationJson(msToNanos(ms))),
      ['900s', '0.500s', '1.500s', '0s'],
    );
  });
});

describe('Envoy bootstrap', () => {
  const node = buildNode(facts('envoy'));
  const json = buildEnvoyBootstrap({
    node,
    xdsSocket: './etc/istio/proxy/XDS',
    sdsSocket: './var/run/secrets/workload-spiffe-uds/socket',
    xdsApi: 'DELTA_GRPC',
  });

  it('decodes as envoy.config.bootstrap.v3.Bootstrap (no unknown fields) and keeps every validate rule', () => {
    const roundTripped = JSON.parse(JSON.stringify(json)) as JsonValue;
    const b = fromJson(BootstrapSchema, roundTripped, { registry: xdsJsonRegistry() });
    assertValid(BootstrapSchema, b, envoyValidationRegistry());
    assert.equal(b.node?.id, node.id);
    assert.equal(b.node?.cluster, 'client.foo');
    const ads = b.dynamicResources?.adsConfig;
    assert.equal(ads?.apiType, ApiConfigSource_ApiType.DELTA_GRPC);
    const target = ads?.grpcServices[0]?.targetSpecifier;
    assert.equal(target?.case === 'envoyGrpc' && target.value.clusterName, 'xds-grpc');
    assert.equal(b.dynamicResources?.ldsConfig?.configSourceSpecifier.case, 'ads');
    assert.equal(b.dynamicResources?.cdsConfig?.configSourceSpecifier.case, 'ads');
  });

  it('points sds-grpc and xds-grpc at the agent sockets (absolute paths) over HTTP/2', () => {
    const b = fromJson(BootstrapSchema, JSON.parse(JSON.stringify(json)) as JsonValue, { registry: xdsJsonRegistry() });
    const pipeOf = (name: string): string | undefined => {
      const c = b.staticResources?.clusters.find((x) => x.name === name);
      const addr = c?.loadAssignment?.endpoints[0]?.lbEndpoints[0]?.hostIdentifier;
      return addr?.case === 'endpoint' && addr.value.address?.address.case === 'pipe' ? addr.value.address.address.value.path : undefined;
    };
    assert.equal(pipeOf('sds-grpc'), path.resolve('./var/run/secrets/workload-spiffe-uds/socket'));
    assert.equal(pipeOf('xds-grpc'), path.resolve('./etc/istio/proxy/XDS'));
    for (const name of ['sds-grpc', 'xds-grpc']) {
      const c = b.staticResources?.clusters.find((x) => x.name === name);
      assert.equal(
        c?.typedExtensionProtocolOptions['envoy.extensions.upstreams.http.v3.HttpProtocolOptions']?.typeUrl,
        'type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
      );
    }
    assert.equal(b.staticResources?.listeners[0]?.address?.address.case, 'socketAddress');
  });

  it("has Istio's agent cluster and the 15021 listener routing /healthz/ready to it; ports follow the options", () => {
    const custom = buildEnvoyBootstrap({
      node,
      xdsSocket: '/x',
      sdsSocket: '/s',
      xdsApi: 'GRPC',
      adminPort: 25000,
      prometheusPort: 25090,
      statusPort: 25020,
      envoyStatusPort: 25021,
    });
    for (const [bootstrap, ports] of [
      [json, [15000, 15090, 15020, 15021]],
      [custom, [25000, 25090, 25020, 25021]],
    ] as const) {
      const b = fromJson(BootstrapSchema, JSON.parse(JSON.stringify(bootstrap)) as JsonValue, { registry: xdsJsonRegistry() });
      assertValid(BootstrapSchema, b, envoyValidationRegistry());
      type Addr = { socket_address?: { port_value?: number } };
      type Static = {
        clusters: { name: string; load_assignment: { endpoints: { lb_endpoints: { endpoint: { address: Addr } }[] }[] } }[];
        listeners: { name: string; address: Addr }[];
      };
      const sr = bootstrap.static_resources as Static;
      const endpointPort = (name: string): number | undefined =>
        sr.clusters.find((c) => c.name === name)?.load_assignment.endpoints[0]?.lb_endpoints[0]?.endpoint.address.socket_address
          ?.port_value;
      const listenerPort = (name: string): number | undefined =>
        sr.listeners.find((l) => l.name === name)?.address.socket_address?.port_value;
      const adminPort = (bootstrap.admin as { address: Addr }).address.socket_address?.port_value;
      assert.deepEqual(
        [adminPort, listenerPort('prometheus'), endpointPort('agent'), listenerPort('status'), endpointPort('prometheus_stats')],
        [ports[0], ports[1], ports[2], ports[3], ports[0]],
      );
      const hcm = JSON.stringify((bootstrap.static_resources as { listeners: unknown[] }).listeners[1]);
      assert.match(hcm, /"prefix":"\/healthz\/ready"},"route":\{"cluster":"agent"\}/);
    }
  });

  it('statusPort 0 (no status server): no agent cluster and no health listener', () => {
    const none = buildEnvoyBootstrap({ node, xdsSocket: '/x', sdsSocket: '/s', xdsApi: 'GRPC', statusPort: 0 });
    const sr = none.static_resources as { clusters: { name: string }[]; listeners: { name: string }[] };
    assert.deepEqual(
      [sr.clusters.map((c) => c.name), sr.listeners.map((l) => l.name)],
      [['prometheus_stats', 'sds-grpc', 'xds-grpc'], ['prometheus']],
    );
  });

  it('uses SotW ADS when asked', () => {
    const sotw = buildEnvoyBootstrap({ node, xdsSocket: '/x', sdsSocket: '/s', xdsApi: 'GRPC' });
    const b = fromJson(BootstrapSchema, JSON.parse(JSON.stringify(sotw)) as JsonValue, { registry: xdsJsonRegistry() });
    assert.equal(b.dynamicResources?.adsConfig?.apiType, ApiConfigSource_ApiType.GRPC);
  });
});
