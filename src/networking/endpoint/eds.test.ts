import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { create } from '@bufbuild/protobuf';
import { LocalityLoadBalancerSettingSchema } from '../../gen/networking/v1alpha3/destination_rule_pb.js';
import { ClusterLoadAssignmentSchema, type ClusterLoadAssignment } from '../../gen/envoy/config/endpoint/v3/endpoint_pb.js';
import type { LbEndpoint } from '../../gen/envoy/config/endpoint/v3/endpoint_components_pb.js';
import { HealthStatus } from '../../gen/envoy/config/core/v3/health_check_pb.js';
import type { Proxy } from '../../model/proxy.js';
import {
  checked,
  destinationRule,
  proxyOf,
  pushFor,
  serviceEntry,
  workloadEntry,
} from '../../../test/support/networking/cluster-fixtures.js';
import { buildEndpointsFor } from './eds.js';

const HOST = 'reviews.default.svc.cluster.local';
const CLUSTER = `outbound|9080||${HOST}`;
const we = (name: string, address: string, locality: string, extra: Record<string, unknown> = {}, labels: Record<string, string> = {}) =>
  workloadEntry(name, { address, locality, labels: { app: 'reviews', version: 'v1', ...labels }, ...extra });
const REVIEWS = [
  serviceEntry('reviews', HOST, [{ number: 9080, name: 'http', protocol: 'HTTP', targetPort: 8080 }], {
    workloadSelector: { app: 'reviews' },
  }),
  we('reviews-a', '10.1.0.1', 'r1/z1/s1', { serviceAccount: 'reviews', weight: 2 }),
  we('reviews-b', '10.1.0.2', 'r1/z2/s1', {}, { version: 'v2' }),
  we('reviews-c', '10.1.0.3', 'r2/z1/s1', { serviceAccount: 'reviews' }),
  we('reviews-d', '10.1.0.4', 'r1/z1/s1', { serviceAccount: 'reviews' }, { 'security.istio.io/tlsMode': 'disabled' }),
];
const LOCAL = proxyOf('sidecar', { locality: ['r1', 'z1', 's1'], labels: { app: 'client', version: 'v1' } });

function eds(
  objects: Record<string, unknown>[],
  cluster = CLUSTER,
  proxy: Proxy = LOCAL,
  mesh: Parameters<typeof pushFor>[1] = {},
): ClusterLoadAssignment {
  const cla = buildEndpointsFor(pushFor(objects, mesh), proxy, cluster);
  assert.ok(cla, `no assignment for ${cluster}`);
  return checked(ClusterLoadAssignmentSchema, [cla])[0]!;
}

const ip = (e: LbEndpoint) => {
  const a = e.hostIdentifier.case === 'endpoint' ? e.hostIdentifier.value.address?.address : undefined;
  return a?.case === 'socketAddress' ? a.value.address : '?';
};
/** `region/zone@priority: ips (weight)` per locality group. */
const shape = (cla: ClusterLoadAssignment) =>
  cla.endpoints.map(
    (l) => `${l.locality?.region}/${l.locality?.zone}@${l.priority}: ${l.lbEndpoints.map(ip).join(',')} (${l.loadBalancingWeight ?? '-'})`,
  );
const withPolicy = (trafficPolicy: Record<string, unknown>, extra: Record<string, unknown> = {}) => [
  ...REVIEWS,
  destinationRule('reviews', { host: HOST, trafficPolicy, ...extra }),
];
const OUTLIER = { consecutive5xxErrors: 5 };

describe('EDS', () => {
  it('groups by locality with summed weights; tlsMode metadata only for sidecar endpoints; telemetry workload label', () => {
    const cla = eds(REVIEWS);
    assert.equal(cla.clusterName, CLUSTER);
    assert.deepEqual(shape(cla), ['r1/z1@0: 10.1.0.1,10.1.0.4 (3)', 'r1/z2@0: 10.1.0.2 (1)', 'r2/z1@0: 10.1.0.3 (1)']);
    const [a, d] = cla.endpoints[0]!.lbEndpoints;
    const port = a!.hostIdentifier.case === 'endpoint' ? a!.hostIdentifier.value.address?.address : undefined;
    assert.equal(port?.case === 'socketAddress' && port.value.portSpecifier.value, 8080, 'the target port');
    // WorkloadEntry endpoints carry no health (istiod: UNKNOWN; only Kubernetes endpoints are HEALTHY).
    assert.deepEqual([a!.healthStatus, a!.loadBalancingWeight], [HealthStatus.UNKNOWN, 2]);
    assert.deepEqual(a!.metadata?.filterMetadata, {
      'envoy.transport_socket_match': { tlsMode: 'istio' },
      istio: { workload: 'reviews-a;default;reviews;v1;Kubernetes' },
    });
    assert.equal(d!.metadata?.filterMetadata['envoy.transport_socket_match'], undefined, 'tlsMode label disabled');
    assert.equal(
      cla.endpoints[1]!.lbEndpoints[0]!.metadata?.filterMetadata['envoy.transport_socket_match'],
      undefined,
      'no service account: no sidecar',
    );
  });

  it('subsets filter by labels; a DestinationRule TLS mode other than ISTIO_MUTUAL drops the tlsMode metadata', () => {
    assert.deepEqual(
      shape(
        eds(
          [...REVIEWS, destinationRule('reviews', { host: HOST, subsets: [{ name: 'v2', labels: { version: 'v2' } }] })],
          `outbound|9080|v2|${HOST}`,
        ),
      ),
      ['r1/z2@0: 10.1.0.2 (1)'],
    );
    const plain = eds(withPolicy({ tls: { mode: 'DISABLE' } }));
    assert.ok(
      plain.endpoints.flatMap((l) => l.lbEndpoints).every((e) => e.metadata?.filterMetadata['envoy.transport_socket_match'] === undefined),
    );
  });

  it('with outlier detection, priorities by locality relative to the proxy (mesh locality LB is on by default)', () => {
    assert.deepEqual(shape(eds(withPolicy({ outlierDetection: OUTLIER }))), [
      'r1/z1@0: 10.1.0.1,10.1.0.4 (3)',
      'r1/z2@1: 10.1.0.2 (1)',
      'r2/z1@2: 10.1.0.3 (1)',
    ]);
    assert.deepEqual(
      shape(eds(withPolicy({ outlierDetection: OUTLIER }), CLUSTER, proxyOf('sidecar', { locality: ['r2', 'z1', 's1'] }))).map(
        (s) => s.split(':')[0],
      ),
      ['r1/z1@1', 'r1/z2@1', 'r2/z1@0'],
    );
    assert.ok(
      shape(eds(REVIEWS)).every((s) => s.includes('@0')),
      'no failover without outlier detection',
    );
    assert.ok(
      shape(
        eds(withPolicy({ outlierDetection: OUTLIER }), CLUSTER, LOCAL, {
          localityLbSetting: create(LocalityLoadBalancerSettingSchema, { enabled: false }),
        }),
      ).every((s) => s.includes('@0')),
    );
    const off = withPolicy({ outlierDetection: OUTLIER, loadBalancer: { localityLbSetting: { enabled: false } } });
    assert.ok(
      shape(eds(off)).every((s) => s.includes('@0')),
      'the rule turns locality LB off',
    );
  });

  it('failover: the region the rule names ranks above other regions', () => {
    const objects = [...REVIEWS, we('reviews-e', '10.1.0.5', 'r3/z1/s1')];
    const plain = shape(eds([...objects, destinationRule('reviews', { host: HOST, trafficPolicy: { outlierDetection: OUTLIER } })]));
    assert.deepEqual(
      plain.slice(2).map((s) => s.split(':')[0]),
      ['r2/z1@2', 'r3/z1@2'],
    );
    const ruled = shape(
      eds([
        ...objects,
        destinationRule('reviews', {
          host: HOST,
          trafficPolicy: { outlierDetection: OUTLIER, loadBalancer: { localityLbSetting: { failover: [{ from: 'r1', to: 'r3' }] } } },
        }),
      ]),
    );
    assert.deepEqual(
      ruled.map((s) => s.split(':')[0]),
      ['r1/z1@0', 'r1/z2@1', 'r2/z1@3', 'r3/z1@2'],
    );
  });

  it('distribute: locality weights from the matching rule, unlisted localities emptied (no outlier detection needed)', () => {
    const cla = eds(
      withPolicy({ loadBalancer: { localityLbSetting: { distribute: [{ from: 'r1/z1/*', to: { 'r1/z1/*': 80, 'r1/z2/*': 20 } }] } } }),
    );
    assert.deepEqual(shape(cla), ['r1/z1@0: 10.1.0.1,10.1.0.4 (80)', 'r1/z2@0: 10.1.0.2 (20)', 'r2/z1@0:  (1)']);
    const other = eds(withPolicy({ loadBalancer: { localityLbSetting: { distribute: [{ from: 'r9/*', to: { 'r1/*': 100 } }] } } }));
    assert.deepEqual(shape(other), shape(eds(REVIEWS)), 'no rule for the proxy locality: unchanged');
  });

  it('failoverPriority: localities split by how many labels each endpoint shares with the proxy', () => {
    const cla = eds(
      withPolicy({
        outlierDetection: OUTLIER,
        loadBalancer: { localityLbSetting: { failoverPriority: ['version', 'topology.kubernetes.io/region'] } },
      }),
    );
    assert.deepEqual(shape(cla), ['r1/z1@0: 10.1.0.1,10.1.0.4 (3)', 'r1/z2@2: 10.1.0.2 (1)', 'r2/z1@1: 10.1.0.3 (1)']);
  });

  it('SNI-DNAT clusters carry only mTLS endpoints (AUTO_PASSTHROUGH must not reach plaintext workloads)', () => {
    const cla = eds(REVIEWS, `outbound_.9080_._.${HOST}`, proxyOf('router', { namespace: 'istio-system' }));
    assert.equal(cla.clusterName, `outbound_.9080_._.${HOST}`);
    assert.deepEqual(shape(cla), ['r1/z1@0: 10.1.0.1 (2)', 'r1/z2@0:  (-)', 'r2/z1@0: 10.1.0.3 (1)']);
  });

  it('names: undefined for non-outbound names; empty for unknown services and ports and for DNS services', () => {
    const objects = [
      ...REVIEWS,
      serviceEntry('ext', 'ext.example.com', [{ number: 443, name: 'tls', protocol: 'TLS' }], {
        resolution: 'DNS',
        location: 'MESH_EXTERNAL',
        endpoints: [{ address: 'a.example.com' }],
      }),
      serviceEntry('mixed', 'mixed.example.com', [{ number: 80, name: 'http', protocol: 'HTTP' }], {
        endpoints: [{ address: '192.0.2.7' }, { address: '192.0.2.8', labels: { app: 'x' } }],
      }),
    ];
    const push = pushFor(objects);
    for (const name of ['inbound|9080||', 'BlackHoleCluster', 'outbound|99999||x'])
      assert.equal(buildEndpointsFor(push, LOCAL, name), undefined, name);
    for (const name of ['outbound|443||ext.example.com', 'outbound|1||' + HOST, 'outbound|80||nope.example.com']) {
      assert.deepEqual(buildEndpointsFor(push, LOCAL, name)?.endpoints, [], name);
    }
    const mixed = eds(objects, 'outbound|80||mixed.example.com');
    assert.deepEqual(
      mixed.endpoints.flatMap((l) => l.lbEndpoints.map((e) => e.metadata?.filterMetadata.istio?.workload)),
      ['mixed-0;default;mixed-0;;Kubernetes', 'mixed-1;default;x;;Kubernetes'],
      'inline endpoints are named <serviceentry>-<index>',
    );
  });
});
