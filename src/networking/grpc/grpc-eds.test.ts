/**
 * Proxyless gRPC EDS across networks: istiod serves gRPC clients its one EDS generator (the
 * EndpointBuilder with EndpointsByNetworkFilter), so a client gets another network's endpoints as
 * that network's east-west gateway, exactly as an Envoy sidecar does.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { create, fromBinary, toJson, type JsonValue } from '@bufbuild/protobuf';
import { NodeSchema } from '../../gen/envoy/config/core/v3/base_pb.js';
import { ClusterLoadAssignmentSchema } from '../../gen/envoy/config/endpoint/v3/endpoint_pb.js';
import { parseMeshNetworks } from '../../config/index.js';
import { defaultMeshConfig } from '../../config/mesh/mesh-config.js';
import { DEFAULT_NETWORK_SETTINGS, parseProxy, PushContext, pushRequest, type Proxy } from '../../model/index.js';
import type { WatchedResourceView } from '../../xds/generator.js';
import { TypeUrl } from '../../xds/type-urls.js';
import { snapshotOf } from '../../../test/support/config-fixture.js';
import { serviceEntry, workloadEntry } from '../../../test/support/networking/cluster-fixtures.js';
import { grpcEndpointGenerator } from './grpc-generators.js';

const HOST = 'api.example.com';
const CLUSTER = `outbound|80||${HOST}`;
const OBJECTS = [
  serviceEntry('api', HOST, [{ number: 80, name: 'grpc', protocol: 'GRPC', targetPort: 8080 }], { workloadSelector: { app: 'api' } }),
  workloadEntry('a1', { address: '10.1.0.1', network: 'n1', serviceAccount: 'api', labels: { app: 'api' } }),
  workloadEntry('b1', { address: '10.2.0.1', network: 'n2', serviceAccount: 'api', labels: { app: 'api' } }),
  workloadEntry('b2', { address: '10.2.0.2', network: 'n2', serviceAccount: 'api', weight: 3, labels: { app: 'api' } }),
  // No service account: no sidecar, no mTLS, so no gateway can route to it (AUTO_PASSTHROUGH reads Istio mTLS's SNI).
  workloadEntry('b3', { address: '10.2.0.3', network: 'n2', labels: { app: 'api' } }),
  // n3 has no gateway.
  workloadEntry('c1', { address: '10.3.0.1', network: 'n3', serviceAccount: 'api', labels: { app: 'api' } }),
];

const MESH_NETWORKS = `
networks:
  n2:
    gateways:
      - address: 192.0.2.2
        port: 15443
`;

function push(meshNetworks: string): PushContext {
  const networks = { ...DEFAULT_NETWORK_SETTINGS, meshNetworks: parseMeshNetworks(meshNetworks, 'test').meshNetworks };
  return new PushContext({ version: 'v1', mesh: defaultMeshConfig(), config: snapshotOf(OBJECTS), networks });
}

function grpcClient(ip: string, network: string): Proxy {
  const id = `sidecar~${ip}~client.default~default.svc.cluster.local`;
  const r = parseProxy(create(NodeSchema, { id, metadata: { GENERATOR: 'grpc', NETWORK: network } }));
  assert.ok(r.ok);
  return r.value;
}

const watch = (names: string[]): WatchedResourceView => ({
  typeUrl: TypeUrl.ClusterLoadAssignment,
  names: new Set(names),
  wildcard: false,
});
const REQ = pushRequest({ full: true, start: 0 });

function eds(p: PushContext, client: Proxy, names = [CLUSTER]): Record<string, JsonValue> {
  const out: Record<string, JsonValue> = {};
  for (const r of grpcEndpointGenerator.generate(client, watch(names), p, REQ))
    out[r.name] = toJson(ClusterLoadAssignmentSchema, fromBinary(ClusterLoadAssignmentSchema, r.value));
  return out;
}

/** One lb_endpoint as proto3 JSON: a WorkloadEntry's (health UNKNOWN, left out) or a gateway's (no workload). */
function lb(address: string, port: number, weight: number, workload: string, mtls = true): JsonValue {
  return {
    endpoint: { address: { socketAddress: { address, portValue: port } } },
    metadata: {
      filterMetadata: { ...(mtls ? { 'envoy.transport_socket_match': { tlsMode: 'istio' } } : {}), istio: { workload } },
    },
    loadBalancingWeight: weight,
  };
}

const cla = (lbEndpoints: JsonValue[], weight: number): JsonValue => ({
  clusterName: CLUSTER,
  endpoints: [{ locality: {}, lbEndpoints, loadBalancingWeight: weight }],
});

describe('proxyless gRPC EDS across networks', () => {
  it("a client in n1: n2's mTLS endpoints become n2's gateway weighted by their sum, n3 (no gateway) is sent as it is", () => {
    assert.deepEqual(eds(push(MESH_NETWORKS), grpcClient('10.1.0.9', 'n1')), {
      [CLUSTER]: cla(
        [
          lb('10.1.0.1', 8080, 1, 'a1;default;api;;Kubernetes'),
          lb('10.3.0.1', 8080, 1, 'c1;default;api;;Kubernetes'),
          // b1 (1) + b2 (3); b3 has no mTLS and is dropped.
          lb('192.0.2.2', 15443, 4, ';;;;'),
        ],
        6,
      ),
    });
  });

  it('a client in n2: its own network and the networks without a gateway are sent directly', () => {
    assert.deepEqual(eds(push(MESH_NETWORKS), grpcClient('10.2.0.9', 'n2')), {
      [CLUSTER]: cla(
        [
          lb('10.1.0.1', 8080, 1, 'a1;default;api;;Kubernetes'),
          lb('10.2.0.1', 8080, 1, 'b1;default;api;;Kubernetes'),
          lb('10.2.0.2', 8080, 3, 'b2;default;api;;Kubernetes'),
          lb('10.2.0.3', 8080, 1, 'b3;default;api;;Kubernetes', false),
          lb('10.3.0.1', 8080, 1, 'c1;default;api;;Kubernetes'),
        ],
        7,
      ),
    });
  });

  it("without a gateway in any network, every endpoint is sent as it is; an unknown service's name gets an empty assignment", () => {
    const unknown = 'outbound|80||nope.example.com';
    const got = eds(push('networks: {n2: {endpoints: [{fromCidr: 10.2.0.0/16}]}}'), grpcClient('10.1.0.9', 'n1'), [CLUSTER, unknown]);
    assert.deepEqual(Object.keys(got), [CLUSTER, unknown]);
    assert.deepEqual(got[unknown], { clusterName: unknown });
    const addresses = JSON.stringify(got[CLUSTER]).match(/"address":"[^"]+"/g);
    assert.deepEqual(
      addresses,
      ['10.1.0.1', '10.2.0.1', '10.2.0.2', '10.2.0.3', '10.3.0.1'].map((a) => `"address":"${a}"`),
    );
  });

  it('each client gets the gateways of its own IP family, though both share a network and a namespace (the cache key holds the family)', () => {
    const p = push(`
networks:
  n2:
    gateways:
      - address: 192.0.2.2
        port: 15443
      - address: 2001:db8::2
        port: 15443
`);
    const gateways = (client: Proxy): string[] => JSON.stringify(eds(p, client)).match(/"address":"(192\.0\.2\.2|2001:db8::2)"/g) ?? [];
    assert.deepEqual(gateways(grpcClient('10.1.0.9', 'n1')), ['"address":"192.0.2.2"']);
    assert.deepEqual(gateways(grpcClient('2001:db8:1::9', 'n1')), ['"address":"2001:db8::2"']);
  });

  it('clients in different networks do not share a cached assignment', () => {
    const p = push(MESH_NETWORKS);
    const n1 = JSON.stringify(eds(p, grpcClient('10.1.0.9', 'n1')));
    assert.notEqual(JSON.stringify(eds(p, grpcClient('10.2.0.9', 'n2'))), n1);
    assert.equal(JSON.stringify(eds(p, grpcClient('10.1.0.8', 'n1'))), n1);
  });
});
