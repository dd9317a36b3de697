import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { create, toJson } from '@bufbuild/protobuf';
import { NodeSchema } from '../../gen/envoy/config/core/v3/base_pb.js';
import { LbEndpointSchema, type LbEndpoint } from '../../gen/envoy/config/endpoint/v3/endpoint_components_pb.js';
import { parseMeshNetworks } from '../../config/index.js';
import { defaultMeshConfig } from '../../config/mesh/mesh-config.js';
import { DEFAULT_NETWORK_SETTINGS, parseProxy, PushContext, type Proxy } from '../../model/index.js';
import { snapshotOf } from '../../../test/support/config-fixture.js';
import { serviceEntry, workloadEntry } from '../../../test/support/networking/cluster-fixtures.js';
import { buildEndpointsFor } from './eds.js';

const HOST = 'api.example.com';
const CLUSTER = `outbound|80||${HOST}`;
const OBJECTS = [
  serviceEntry('api', HOST, [{ number: 80, name: 'http', protocol: 'HTTP', targetPort: 8080 }], { workloadSelector: { app: 'api' } }),
  workloadEntry('a1', { address: '10.1.0.1', network: 'n1', serviceAccount: 'api', labels: { app: 'api' } }),
  workloadEntry('b1', { address: '10.2.0.1', network: 'n2', serviceAccount: 'api', labels: { app: 'api' } }),
  workloadEntry('b2', { address: '10.2.0.2', network: 'n2', serviceAccount: 'api', weight: 3, labels: { app: 'api' } }),
  // No sidecar: no gateway routes to it.
  workloadEntry('b3', { address: '10.2.0.3', network: 'n2', labels: { app: 'api' } }),
  workloadEntry('c1', { address: '10.3.0.1', network: 'n3', serviceAccount: 'api', labels: { app: 'api' } }),
];

function push(meshNetworks: string): PushContext {
  const networks = { ...DEFAULT_NETWORK_SETTINGS, meshNetworks: parseMeshNetworks(meshNetworks, 'test').meshNetworks };
  return new PushContext({ version: 'v1', mesh: defaultMeshConfig(), config: snapshotOf(OBJECTS), networks });
}

function proxy(type: 'sidecar' | 'router', ip: string, metadata: Record<string, string>): Proxy {
  const r = parseProxy(create(NodeSchema, { id: `${type}~${ip}~client.default~default.svc.cluster.local`, metadata }));
  assert.ok(r.ok);
  return r.value;
}

const hostPort = (e: LbEndpoint): string => {
  const a = e.hostIdentifier.case === 'endpoint' ? e.hostIdentifier.value.address?.address : undefined;
  return a?.case === 'socketAddress' ? `${a.value.address}:${a.value.portSpecifier.value}` : '?';
};
/** `address:port×weight` of every endpoint, and the locality weight. */
function shape(p: PushContext, who: Proxy): string {
  const cla = buildEndpointsFor(p, who, CLUSTER);
  assert.ok(cla);
  return cla.endpoints
    .map((l) => `${l.lbEndpoints.map((e) => `${hostPort(e)}×${e.loadBalancingWeight}`).join(' ')} (${l.loadBalancingWeight ?? '-'})`)
    .join(' | ');
}

const GATEWAYS = `
networks:
  n2:
    gateways:
      - address: 192.0.2.2
        port: 15443
      - address: 192.0.2.3
        port: 15443
  n3:
    gateways:
      - address: 2001:db8::3
        port: 15443
      - address: 192.0.2.4
        port: 15008
`;

describe('split-horizon EDS', () => {
  it('without any gateway every endpoint is sent as it is', () => {
    assert.equal(
      shape(push('networks: {n2: {endpoints: [{fromCidr: 10.2.0.0/16}]}}'), proxy('sidecar', '10.1.0.9', { NETWORK: 'n1' })),
      '10.1.0.1:8080×1 10.2.0.1:8080×1 10.2.0.2:8080×3 10.2.0.3:8080×1 10.3.0.1:8080×1 (7)',
    );
  });

  it("another network's mTLS endpoints become its gateways, weights scaled by the lcm of gateway counts and shared", () => {
    // lcm(2 gateways of n2, 2 of n3) = 2: a1 2; n2's mTLS endpoints (1+3)·2 = 8 over 2 gateways; b3 (plaintext) dropped;
    // n3 (an IPv4 proxy): only its IPv4 gateway, c1's 2.
    assert.equal(
      shape(push(GATEWAYS), proxy('sidecar', '10.1.0.9', { NETWORK: 'n1' })),
      '10.1.0.1:8080×2 192.0.2.2:15443×4 192.0.2.3:15443×4 192.0.2.4:15008×2 (12)',
    );
  });

  it("the proxy's own network stays direct; a network without gateways too", () => {
    assert.equal(
      shape(push(GATEWAYS), proxy('sidecar', '10.2.0.9', { NETWORK: 'n2' })),
      '10.1.0.1:8080×2 10.2.0.1:8080×2 10.2.0.2:8080×6 10.2.0.3:8080×2 192.0.2.4:15008×2 (14)',
    );
  });

  it('a proxy without a network goes through the gateway of every endpoint network that has one', () => {
    assert.equal(
      shape(push(GATEWAYS), proxy('sidecar', '10.9.0.9', {})),
      '10.1.0.1:8080×2 192.0.2.2:15443×4 192.0.2.3:15443×4 192.0.2.4:15008×2 (12)',
    );
  });

  it('an IPv6 proxy reaches only IPv6 gateways; a dual-stack one all', () => {
    assert.equal(shape(push(GATEWAYS), proxy('sidecar', 'fd00::9', { NETWORK: 'n1' })), '10.1.0.1:8080×2 2001:db8::3:15443×2 (4)');
    assert.match(
      shape(push(GATEWAYS), proxy('sidecar', '10.1.0.9,fd00::9', { NETWORK: 'n1' })),
      /192\.0\.2\.4:15008×1 2001:db8::3:15443×1/,
    );
  });

  it('ISTIO_META_REQUESTED_NETWORK_VIEW hides the networks not asked for', () => {
    assert.equal(
      shape(push(GATEWAYS), proxy('router', '10.1.0.9', { NETWORK: 'n1', REQUESTED_NETWORK_VIEW: 'n1,n3' })),
      '10.1.0.1:8080×2 192.0.2.4:15008×2 (4)',
    );
  });

  it('the gateway endpoint carries mTLS metadata and the telemetry label of its (empty) cluster, no health status', () => {
    const cla = buildEndpointsFor(push(GATEWAYS), proxy('sidecar', '10.1.0.9', { NETWORK: 'n1' }), CLUSTER);
    const gw = cla?.endpoints[0]?.lbEndpoints.find((e) => hostPort(e) === '192.0.2.2:15443');
    assert.ok(gw);
    assert.deepEqual(toJson(LbEndpointSchema, gw), {
      endpoint: { address: { socketAddress: { address: '192.0.2.2', portValue: 15443 } } },
      metadata: { filterMetadata: { 'envoy.transport_socket_match': { tlsMode: 'istio' }, istio: { workload: ';;;;' } } },
      loadBalancingWeight: 4,
    });
  });
});
