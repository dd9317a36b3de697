import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Cluster_DiscoveryType, Cluster_LbPolicy, ClusterSchema, type Cluster } from '../../gen/envoy/config/cluster/v3/cluster_pb.js';
import { buildBlackHoleCluster, buildInboundPassthroughCluster, buildPassthroughCluster } from './fixed-clusters.js';
import { buildSidecarClusters } from './proxy-clusters.js';
import { buildInboundClusters } from './inbound-clusters.js';
import {
  byName,
  checked,
  destinationRule,
  get,
  httpOptionsOf,
  proxyOf,
  pushFor,
  serviceEntry,
  workloadEntry,
} from '../../../test/support/networking/cluster-fixtures.js';

const typeOf = (c: Cluster) => (c.clusterDiscoveryType.case === 'type' ? c.clusterDiscoveryType.value : undefined);
const bind = (c: Cluster) => {
  const a = c.upstreamBindConfig?.sourceAddress;
  return [a?.address, ...(c.upstreamBindConfig?.extraSourceAddresses.map((x) => x.address?.address) ?? [])];
};

const WORKLOAD = [
  serviceEntry(
    'reviews',
    'reviews.default.svc.cluster.local',
    [
      { number: 9080, name: 'http', protocol: 'HTTP', targetPort: 8080 },
      { number: 9090, name: 'grpc', protocol: 'GRPC' },
      { number: 7000, name: 'sniffed' },
    ],
    { workloadSelector: { app: 'reviews' } },
  ),
  serviceEntry('reviews-alias', 'reviews.alias.example', [{ number: 9080, name: 'http', protocol: 'HTTP', targetPort: 8080 }], {
    workloadSelector: { app: 'reviews' },
  }),
  workloadEntry('reviews-v1', { address: '10.1.0.1', serviceAccount: 'reviews', labels: { app: 'reviews' } }),
];

describe('fixed clusters', () => {
  const push = pushFor([], { connectTimeoutMs: 2500 });

  it('BlackHoleCluster: STATIC with no endpoints, the mesh connect timeout', () => {
    const [c] = checked(ClusterSchema, [buildBlackHoleCluster(push)]);
    assert.deepEqual(
      [c!.name, typeOf(c!), c!.loadAssignment, c!.altStatName],
      ['BlackHoleCluster', Cluster_DiscoveryType.STATIC, undefined, 'BlackHoleCluster;'],
    );
    assert.deepEqual([c!.connectTimeout?.seconds, c!.connectTimeout?.nanos], [2n, 500_000_000]);
  });

  it('PassthroughCluster: ORIGINAL_DST, client protocol with a 5 minute idle timeout, max circuit breakers', () => {
    const [c] = checked(ClusterSchema, [buildPassthroughCluster(push)]);
    assert.deepEqual(
      [typeOf(c!), c!.lbPolicy, c!.connectTimeout?.seconds],
      [Cluster_DiscoveryType.ORIGINAL_DST, Cluster_LbPolicy.CLUSTER_PROVIDED, 2n],
    );
    const opts = httpOptionsOf(c!)!;
    assert.equal(opts.upstreamProtocolOptions.case, 'useDownstreamProtocolConfig');
    assert.equal(opts.commonHttpProtocolOptions?.idleTimeout?.seconds, 300n);
    assert.equal(c!.circuitBreakers?.thresholds[0]?.maxConnections, 4294967295);
    assert.equal(c!.upstreamBindConfig, undefined);
  });

  it('InboundPassthroughCluster: bound to 127.0.0.6, and also ::6 on a dual-stack proxy', () => {
    const [v4, dual, v6] = checked(ClusterSchema, [
      buildInboundPassthroughCluster(push, proxyOf('sidecar')),
      buildInboundPassthroughCluster(push, proxyOf('sidecar', { ip: '10.0.0.1,fd00::1' })),
      buildInboundPassthroughCluster(push, proxyOf('sidecar', { ip: 'fd00::1' })),
    ]);
    assert.deepEqual(
      [v4!.name, typeOf(v4!), v4!.lbPolicy],
      ['InboundPassthroughCluster', Cluster_DiscoveryType.ORIGINAL_DST, Cluster_LbPolicy.CLUSTER_PROVIDED],
    );
    assert.deepEqual(bind(v4!), ['127.0.0.6']);
    assert.deepEqual(bind(dual!), ['127.0.0.6', '::6']);
    assert.deepEqual(bind(v6!), ['::6']);
  });
});

describe('inbound clusters', () => {
  it('inbound|<port>|| per workload port: ORIGINAL_DST bound to 127.0.0.6, never cleaned up, protocol from the service port', () => {
    const push = pushFor(WORKLOAD);
    const proxy = proxyOf('sidecar', { ip: '10.1.0.1' });
    const out = byName(buildInboundClusters({ push, proxy, instances: push.serviceInstances(proxy) }));
    assert.deepEqual(
      [...out.keys()],
      ['inbound|7000||', 'inbound|8080||', 'inbound|9090||'],
      'one per distinct workload port, the alias shares 8080',
    );
    const http = get(out, 'inbound|8080||');
    assert.deepEqual(
      [typeOf(http), http.lbPolicy, http.connectTimeout?.seconds],
      [Cluster_DiscoveryType.ORIGINAL_DST, Cluster_LbPolicy.CLUSTER_PROVIDED, 10n],
    );
    assert.deepEqual(bind(http), ['127.0.0.6']);
    assert.equal(http.cleanupInterval?.seconds, 9223372035n);
    assert.equal(http.altStatName, 'inbound|8080||;');
    assert.deepEqual(
      (http.metadata?.filterMetadata.istio?.services as { host: string }[]).map((s) => s.host),
      ['reviews.default.svc.cluster.local', 'reviews.alias.example'],
    );
    const grpc = httpOptionsOf(get(out, 'inbound|9090||'))!.upstreamProtocolOptions;
    assert.equal(grpc.case === 'explicitHttpConfig' && grpc.value.protocolConfig.case, 'http2ProtocolOptions');
    assert.equal(httpOptionsOf(get(out, 'inbound|7000||'))!.upstreamProtocolOptions.case, 'useDownstreamProtocolConfig');
    assert.equal(httpOptionsOf(http), undefined);
  });

  it("the service's DestinationRule connectionPool applies server side too; nothing else of it does", () => {
    const push = pushFor([
      ...WORKLOAD,
      destinationRule('reviews', {
        host: 'reviews.default.svc.cluster.local',
        trafficPolicy: {
          connectionPool: { tcp: { maxConnections: 42 }, http: { idleTimeout: '15s' } },
          outlierDetection: { consecutive5xxErrors: 3 },
          loadBalancer: { simple: 'RANDOM' },
          tls: { mode: 'ISTIO_MUTUAL' },
        },
      }),
    ]);
    const proxy = proxyOf('sidecar', { ip: '10.1.0.1' });
    const c = get(byName(buildInboundClusters({ push, proxy, instances: push.serviceInstances(proxy) })), 'inbound|9090||');
    assert.equal(c.circuitBreakers?.thresholds[0]?.maxConnections, 42);
    assert.equal(httpOptionsOf(c)?.commonHttpProtocolOptions?.idleTimeout?.seconds, 15n);
    assert.deepEqual([c.outlierDetection, c.transportSocket, c.lbPolicy], [undefined, undefined, Cluster_LbPolicy.CLUSTER_PROVIDED]);
    assert.equal(c.metadata?.filterMetadata.istio?.config, '/apis/networking.istio.io/v1/namespaces/default/destination-rule/reviews');
  });

  it('inboundTrafficPolicy LOCALHOST: STATIC to 127.0.0.1:<port>, no bind address', () => {
    const push = pushFor(WORKLOAD, { inboundTrafficPolicy: 'LOCALHOST' });
    const proxy = proxyOf('sidecar', { ip: '10.1.0.1' });
    const c = get(byName(buildInboundClusters({ push, proxy, instances: push.serviceInstances(proxy) })), 'inbound|8080||');
    assert.equal(typeOf(c), Cluster_DiscoveryType.STATIC);
    const ep = c.loadAssignment?.endpoints[0]?.lbEndpoints[0]?.hostIdentifier;
    const addr = ep?.case === 'endpoint' ? ep.value.address?.address : undefined;
    assert.deepEqual(addr?.case === 'socketAddress' && [addr.value.address, addr.value.portSpecifier.value], ['127.0.0.1', 8080]);
    assert.equal(c.upstreamBindConfig, undefined);
  });

  it("a sidecar's whole CDS in istiod's order", () => {
    const push = pushFor(WORKLOAD);
    const proxy = proxyOf('sidecar', { ip: '10.1.0.1' });
    const names = checked(
      ClusterSchema,
      buildSidecarClusters({ push, proxy, services: push.sidecarScope(proxy).services, instances: push.serviceInstances(proxy) }),
    ).map((c) => c.name);
    assert.deepEqual(names, [
      'outbound|9080||reviews.default.svc.cluster.local',
      'outbound|9090||reviews.default.svc.cluster.local',
      'outbound|7000||reviews.default.svc.cluster.local',
      'outbound|9080||reviews.alias.example',
      'BlackHoleCluster',
      'PassthroughCluster',
      'inbound|7000||',
      'inbound|8080||',
      'inbound|9090||',
      'InboundPassthroughCluster',
    ]);
  });
});
