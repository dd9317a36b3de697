import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { create } from '@bufbuild/protobuf';
import { HealthStatus } from '../gen/envoy/config/core/v3/health_check_pb.js';
import { ClusterLoadAssignmentSchema } from '../gen/envoy/config/endpoint/v3/endpoint_pb.js';
import { RawBufferSchema } from '../gen/envoy/extensions/transport_sockets/raw_buffer/v3/raw_buffer_pb.js';
import { packAny } from '../networking/common.js';
import { resolveCluster } from './cluster.js';
import { formatResult, simulate } from './index.js';
import { assignment, chain, cluster, config, listener, sockAddr, tcpProxy, upstreamTls } from './test-fixtures.js';

const RAW = {
  name: 'envoy.transport_sockets.raw_buffer',
  configType: { case: 'typedConfig' as const, value: packAny(RawBufferSchema, {}) },
};
// Istio's auto-mTLS clusters: mTLS to endpoints labelled tlsMode=istio, plaintext to the rest.
const AUTO_MTLS = [
  {
    name: 'tlsMode-istio',
    match: { tlsMode: 'istio' },
    transportSocket: upstreamTls('istio', 'outbound_.9080_._.reviews.default.svc.cluster.local'),
  },
  { name: 'tlsMode-disabled', match: {}, transportSocket: RAW },
];

describe('cluster resolution', () => {
  it('reads EDS endpoints by service_name, else by the cluster name', () => {
    const c = config({
      clusters: [cluster('outbound|9080||reviews', { serviceName: 'reviews-eds' }), cluster('plain-eds')],
      endpoints: [assignment('reviews-eds', [{ ip: '10.2.0.1', port: 9080 }]), assignment('plain-eds', [{ ip: '10.2.0.2', port: 80 }])],
    });
    assert.equal(resolveCluster(c, 'outbound|9080||reviews', '1.1.1.1:1').endpoint, '10.2.0.1:9080');
    assert.equal(resolveCluster(c, 'plain-eds', '1.1.1.1:1').endpoint, '10.2.0.2:80');
  });

  it('uses inline load assignments for STATIC and DNS clusters', () => {
    const c = config({
      clusters: [
        cluster('dns', { type: 'STRICT_DNS', endpoints: [{ ip: 'api.example.com', port: 443 }] }),
        cluster('v6', { type: 'STATIC', endpoints: [{ ip: '2001:db8::5', port: 80 }] }),
      ],
    });
    assert.equal(resolveCluster(c, 'dns', '1.1.1.1:1').endpoint, 'api.example.com:443');
    assert.equal(resolveCluster(c, 'v6', '1.1.1.1:1').endpoint, '[2001:db8::5]:80');
  });

  it('sends ORIGINAL_DST clusters to the original destination', () => {
    const c = config({ clusters: [cluster('PassthroughCluster', { type: 'ORIGINAL_DST' })] });
    assert.deepEqual(resolveCluster(c, 'PassthroughCluster', '93.184.216.34:443'), { endpoint: '93.184.216.34:443', upstreamTls: 'none' });
  });

  it('STATIC without endpoints is a blackhole; an empty EDS cluster has no healthy upstream; both 503', () => {
    const c = config({
      clusters: [cluster('BlackHoleCluster', { type: 'STATIC' }), cluster('empty')],
      endpoints: [assignment('empty', [])],
    });
    assert.deepEqual(resolveCluster(c, 'BlackHoleCluster', 'x'), { error: 'blackhole', status: 503 });
    assert.deepEqual(resolveCluster(c, 'empty', 'x'), { error: 'no healthy upstream', status: 503 });
    assert.deepEqual(resolveCluster(c, 'missing', 'x'), { error: 'unknown cluster "missing"', status: 503 });
  });

  it('picks the first healthy endpoint of the lowest priority', () => {
    const cla = create(ClusterLoadAssignmentSchema, {
      clusterName: 'svc',
      endpoints: [
        { priority: 1, lbEndpoints: [{ hostIdentifier: { case: 'endpoint', value: { address: sockAddr('10.0.1.1', 80) } } }] },
        {
          priority: 0,
          lbEndpoints: [
            { healthStatus: HealthStatus.UNHEALTHY, hostIdentifier: { case: 'endpoint', value: { address: sockAddr('10.0.0.1', 80) } } },
            { healthStatus: HealthStatus.HEALTHY, hostIdentifier: { case: 'endpoint', value: { address: sockAddr('10.0.0.2', 80) } } },
          ],
        },
      ],
    });
    const c = config({ clusters: [cluster('svc')], endpoints: [cla] });
    assert.equal(resolveCluster(c, 'svc', 'x').endpoint, '10.0.0.2:80');
  });
});

describe('upstream transport socket', () => {
  it('chooses Istio mTLS or plaintext per endpoint through transport_socket_matches', () => {
    const c = config({
      clusters: [cluster('reviews', { matches: AUTO_MTLS }), cluster('legacy', { matches: AUTO_MTLS })],
      endpoints: [
        assignment('reviews', [{ ip: '10.3.0.1', port: 9080, tlsMode: 'istio' }]),
        assignment('legacy', [{ ip: '10.3.0.2', port: 9080 }]),
      ],
    });
    assert.deepEqual(resolveCluster(c, 'reviews', 'x'), {
      endpoint: '10.3.0.1:9080',
      upstreamTls: 'istio',
      upstreamSni: 'outbound_.9080_._.reviews.default.svc.cluster.local',
    });
    assert.deepEqual(resolveCluster(c, 'legacy', 'x'), { endpoint: '10.3.0.2:9080', upstreamTls: 'none' });
  });

  it('falls back to the cluster transport_socket when no match applies', () => {
    const c = config({
      clusters: [
        cluster('egress', {
          type: 'STRICT_DNS',
          endpoints: [{ ip: 'api.example.com', port: 443 }],
          transportSocket: upstreamTls('simple', 'api.example.com'),
        }),
        cluster('only-istio', {
          type: 'STATIC',
          endpoints: [{ ip: '10.4.0.1', port: 80 }],
          matches: [AUTO_MTLS[0]!],
          transportSocket: upstreamTls('simple'),
        }),
      ],
    });
    assert.deepEqual(resolveCluster(c, 'egress', 'x'), {
      endpoint: 'api.example.com:443',
      upstreamTls: 'tls',
      upstreamSni: 'api.example.com',
    });
    assert.equal(resolveCluster(c, 'only-istio', 'x').upstreamTls, 'tls');
  });

  it('is reported through simulate for TCP', () => {
    const c = config({
      listeners: [listener('l', '0.0.0.0', 9080, { chains: [chain('c', [tcpProxy('reviews')])] })],
      clusters: [cluster('reviews', { matches: AUTO_MTLS })],
      endpoints: [assignment('reviews', [{ ip: '10.3.0.1', port: 9080, tlsMode: 'istio' }])],
    });
    const r = simulate(c, { address: '10.3.0.1', port: 9080, protocol: 'tcp', listenerPort: 9080 });
    assert.equal(r.upstreamTls, 'istio', formatResult(r));
    assert.equal(r.endpoint, '10.3.0.1:9080');
  });

  it('weighted tcp_proxy clusters report their weights', () => {
    const c = config({
      listeners: [
        listener('l', '0.0.0.0', 9080, {
          chains: [
            chain('c', [
              tcpProxy([
                { cluster: 'v1', weight: 80 },
                { cluster: 'v2', weight: 20 },
              ]),
            ]),
          ],
        }),
      ],
      clusters: [
        cluster('v1', { type: 'STATIC', endpoints: [{ ip: '10.5.0.1', port: 1 }] }),
        cluster('v2', { type: 'STATIC', endpoints: [{ ip: '10.5.0.2', port: 2 }] }),
      ],
    });
    const r = simulate(c, { address: '10.3.0.1', port: 9080, protocol: 'tcp', listenerPort: 9080 });
    assert.deepEqual(r.weights, [
      { cluster: 'v1', weight: 80 },
      { cluster: 'v2', weight: 20 },
    ]);
    assert.equal(r.cluster, 'v1');
    assert.equal(r.endpoint, '10.5.0.1:1');
  });
});
