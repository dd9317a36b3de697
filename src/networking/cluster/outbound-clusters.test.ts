import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Cluster_DiscoveryType, Cluster_LbPolicy, type Cluster } from '../../gen/envoy/config/cluster/v3/cluster_pb.js';
import { buildOutboundClusters } from './outbound-clusters.js';
import {
  byName,
  destinationRule,
  get,
  httpOptionsOf,
  proxyOf,
  pushFor,
  serviceEntry,
  tlsOf,
  workloadEntry,
} from '../../../test/support/networking/cluster-fixtures.js';

const HOST = 'reviews.default.svc.cluster.local';
const MAX = 4294967295;
const PORTS = [
  { number: 9080, name: 'http', protocol: 'HTTP' },
  { number: 9090, name: 'grpc', protocol: 'GRPC' },
  { number: 9000, name: 'tcp', protocol: 'TCP' },
  { number: 7000, name: 'sniffed' },
];
const REVIEWS = [
  serviceEntry('reviews', HOST, PORTS, { workloadSelector: { app: 'reviews' } }),
  workloadEntry('reviews-v1', {
    address: '10.1.0.1',
    serviceAccount: 'reviews',
    labels: { app: 'reviews', version: 'v1' },
    locality: 'r1/z1/s1',
  }),
  workloadEntry('reviews-v2', { address: '10.1.0.2', labels: { app: 'reviews', version: 'v2' }, locality: 'r1/z2' }),
];

function clusters(
  objects: Record<string, unknown>[],
  opts: Parameters<typeof pushFor>[1] = {},
  proxy = proxyOf('sidecar'),
): Map<string, Cluster> {
  const push = pushFor(objects, opts);
  return byName(buildOutboundClusters({ push, proxy, services: push.sidecarScope(proxy).services }));
}

const name = (port: number, subset = '') => `outbound|${port}|${subset}|${HOST}`;
const thresholds = (c: Cluster) => c.circuitBreakers?.thresholds[0];

describe('outbound clusters', () => {
  it('an EDS cluster per port, in istiod shape: ADS, mesh connect timeout, LEAST_REQUEST, max circuit breakers', () => {
    const out = clusters(REVIEWS);
    assert.deepEqual([...out.keys()], [name(9080), name(9090), name(9000), name(7000)]);
    const c = get(out, name(9080));
    assert.equal(c.clusterDiscoveryType.case === 'type' && c.clusterDiscoveryType.value, Cluster_DiscoveryType.EDS);
    assert.equal(c.edsClusterConfig?.serviceName, name(9080));
    assert.equal(c.edsClusterConfig?.edsConfig?.configSourceSpecifier.case, 'ads');
    assert.equal(c.edsClusterConfig?.edsConfig?.initialFetchTimeout?.seconds, 0n, 'waits for the first EDS answer');
    assert.equal(c.connectTimeout?.seconds, 10n);
    assert.equal(c.lbPolicy, Cluster_LbPolicy.LEAST_REQUEST);
    assert.deepEqual(
      [
        thresholds(c)?.maxConnections,
        thresholds(c)?.maxPendingRequests,
        thresholds(c)?.maxRequests,
        thresholds(c)?.maxRetries,
        thresholds(c)?.trackRemaining,
      ],
      [MAX, MAX, MAX, MAX, false],
    );
    assert.equal(c.altStatName, `${name(9080)};`);
    assert.ok(c.commonLbConfig, 'istiod always sets common_lb_config');
    assert.deepEqual(c.metadata?.filterMetadata.istio, { services: [{ host: HOST, name: HOST, namespace: 'default' }] });
    assert.equal(c.outlierDetection, undefined);
  });

  it('upstream protocol: explicit HTTP/2 for gRPC, client protocol for a sniffed port on sidecars only, none for HTTP/1 and TCP', () => {
    const sidecar = clusters(REVIEWS);
    assert.equal(httpOptionsOf(get(sidecar, name(9080))), undefined);
    assert.equal(httpOptionsOf(get(sidecar, name(9000))), undefined);
    const grpc = httpOptionsOf(get(sidecar, name(9090)))!.upstreamProtocolOptions;
    assert.equal(grpc.case === 'explicitHttpConfig' && grpc.value.protocolConfig.case, 'http2ProtocolOptions');
    assert.equal(httpOptionsOf(get(sidecar, name(7000)))!.upstreamProtocolOptions.case, 'useDownstreamProtocolConfig');
    const gateway = clusters(REVIEWS, {}, proxyOf('router', { namespace: 'istio-system' }));
    assert.equal(httpOptionsOf(get(gateway, name(7000))), undefined, 'gateways do not sniff, so no use_downstream_protocol');
  });

  it('subsets and port-level settings merge as istiod: a port-level entry replaces the whole policy, subsets override what they set', () => {
    const dr = destinationRule('reviews', {
      host: HOST,
      trafficPolicy: {
        loadBalancer: { simple: 'ROUND_ROBIN' },
        connectionPool: { tcp: { maxConnections: 10 } },
        portLevelSettings: [{ port: { number: 9090 }, loadBalancer: { simple: 'RANDOM' } }],
      },
      subsets: [
        { name: 'v1', labels: { version: 'v1' } },
        {
          name: 'v2',
          labels: { version: 'v2' },
          trafficPolicy: {
            loadBalancer: { consistentHash: { ringHash: { minimumRingSize: 2048 } } },
            portLevelSettings: [{ port: { number: 9000 }, connectionPool: { tcp: { maxConnections: 3 } } }],
          },
        },
      ],
    });
    const out = clusters([...REVIEWS, dr]);
    assert.equal(out.size, 12, 'default + two subsets per port');
    assert.equal(get(out, name(9080)).lbPolicy, Cluster_LbPolicy.ROUND_ROBIN);
    assert.equal(thresholds(get(out, name(9080)))?.maxConnections, 10);
    assert.equal(get(out, name(9090)).lbPolicy, Cluster_LbPolicy.RANDOM);
    assert.equal(thresholds(get(out, name(9090)))?.maxConnections, MAX, 'the port-level entry does not inherit connectionPool');

    const v1 = get(out, name(9080, 'v1'));
    assert.equal(v1.lbPolicy, Cluster_LbPolicy.ROUND_ROBIN);
    assert.equal(v1.edsClusterConfig?.serviceName, name(9080, 'v1'));
    assert.deepEqual(v1.metadata?.filterMetadata.istio?.subset, 'v1');
    assert.equal(v1.metadata?.filterMetadata.istio?.config, '/apis/networking.istio.io/v1/namespaces/default/destination-rule/reviews');
    assert.equal(tlsOf(v1.transportSocketMatches[0]?.transportSocket).sni, `outbound_.9080_.v1_.${HOST}`);

    const v2 = get(out, name(9080, 'v2'));
    assert.equal(v2.lbPolicy, Cluster_LbPolicy.RING_HASH);
    assert.equal(v2.lbConfig.case === 'ringHashLbConfig' && v2.lbConfig.value.minimumRingSize, 2048n);
    assert.equal(thresholds(v2)?.maxConnections, 10, 'inherited from the top level');
    const v2tcp = get(out, name(9000, 'v2'));
    assert.equal(v2tcp.lbPolicy, Cluster_LbPolicy.LEAST_REQUEST, "the subset's port-level entry replaces its load balancer too");
    assert.equal(thresholds(v2tcp)?.maxConnections, 3);
    assert.equal(get(out, name(9090, 'v2')).lbPolicy, Cluster_LbPolicy.RING_HASH, 'subset LB over the top-level port entry');
  });

  it('connectionPool: circuit breakers, connect timeout, TCP keepalive and the HTTP protocol options', () => {
    const dr = destinationRule('reviews', {
      host: HOST,
      trafficPolicy: {
        connectionPool: {
          tcp: {
            maxConnections: 100,
            connectTimeout: '2s',
            maxConnectionDuration: '3600s',
            tcpKeepalive: { probes: 3, time: '60s', interval: '10s' },
          },
          http: {
            http1MaxPendingRequests: 5,
            http2MaxRequests: 7,
            maxRequestsPerConnection: 2,
            maxRetries: 4,
            idleTimeout: '30s',
            maxConcurrentStreams: 50,
          },
        },
        portLevelSettings: [
          { port: { number: 9080 }, connectionPool: { http: { h2UpgradePolicy: 'UPGRADE' } } },
          { port: { number: 7000 }, connectionPool: { http: { useClientProtocol: true, idleTimeout: '5s' } } },
        ],
      },
    });
    const out = clusters([...REVIEWS, dr]);
    const grpc = get(out, name(9090));
    assert.deepEqual(
      [thresholds(grpc)?.maxConnections, thresholds(grpc)?.maxPendingRequests, thresholds(grpc)?.maxRequests, thresholds(grpc)?.maxRetries],
      [100, 5, 7, 4],
    );
    assert.equal(grpc.connectTimeout?.seconds, 2n);
    const ka = grpc.upstreamConnectionOptions?.tcpKeepalive;
    assert.deepEqual([ka?.keepaliveProbes, ka?.keepaliveTime, ka?.keepaliveInterval], [3, 60, 10]);
    const opts = httpOptionsOf(grpc)!;
    assert.equal(opts.commonHttpProtocolOptions?.idleTimeout?.seconds, 30n);
    assert.equal(opts.commonHttpProtocolOptions?.maxRequestsPerConnection, 2);
    assert.equal(opts.commonHttpProtocolOptions?.maxConnectionDuration?.seconds, 3600n);
    const h2 = opts.upstreamProtocolOptions;
    assert.equal(
      h2.case === 'explicitHttpConfig' &&
        h2.value.protocolConfig.case === 'http2ProtocolOptions' &&
        h2.value.protocolConfig.value.maxConcurrentStreams,
      50,
    );

    const tcp = httpOptionsOf(get(out, name(9000)))!.upstreamProtocolOptions;
    assert.equal(
      tcp.case === 'explicitHttpConfig' && tcp.value.protocolConfig.case,
      'httpProtocolOptions',
      'Envoy needs an upstream protocol: explicit HTTP/1',
    );
    const upgraded = httpOptionsOf(get(out, name(9080)))!.upstreamProtocolOptions;
    assert.equal(
      upgraded.case === 'explicitHttpConfig' && upgraded.value.protocolConfig.case,
      'http2ProtocolOptions',
      'h2UpgradePolicy UPGRADE',
    );
    assert.equal(thresholds(get(out, name(9080)))?.maxConnections, MAX);
    const client = httpOptionsOf(get(out, name(7000)))!;
    assert.equal(client.upstreamProtocolOptions.case, 'useDownstreamProtocolConfig');
    assert.equal(client.commonHttpProtocolOptions?.idleTimeout?.seconds, 5n);
  });

  it('outlierDetection: istiod enforcement, success rate off, panic threshold; locality weights only with failover or distribute', () => {
    const od = { consecutive5xxErrors: 7, consecutiveGatewayErrors: 0, interval: '5s', baseEjectionTime: '30s', maxEjectionPercent: 50 };
    const dr = destinationRule('reviews', {
      host: HOST,
      trafficPolicy: {
        outlierDetection: od,
        portLevelSettings: [
          { port: { number: 9090 }, outlierDetection: od, loadBalancer: { localityLbSetting: { failover: [{ from: 'r1', to: 'r2' }] } } },
          { port: { number: 9000 }, loadBalancer: { localityLbSetting: { distribute: [{ from: 'r1/*', to: { 'r1/*': 100 } }] } } },
        ],
      },
    });
    const out = clusters([...REVIEWS, dr]);
    const c = get(out, name(9080));
    const o = c.outlierDetection!;
    assert.deepEqual(
      [o.consecutive5xx, o.enforcingConsecutive5xx, o.consecutiveGatewayFailure, o.enforcingConsecutiveGatewayFailure],
      [7, 100, 0, 0],
    );
    assert.deepEqual([o.enforcingSuccessRate, o.interval?.seconds, o.baseEjectionTime?.seconds, o.maxEjectionPercent], [0, 5n, 30n, 50]);
    assert.equal(c.commonLbConfig?.healthyPanicThreshold?.value, 0);
    assert.equal(c.commonLbConfig?.localityConfigSpecifier.case, undefined, 'mesh locality LB alone sets no weighted config');
    assert.equal(get(out, name(9090)).commonLbConfig?.localityConfigSpecifier.case, 'localityWeightedLbConfig');
    assert.equal(get(out, name(9000)).commonLbConfig?.localityConfigSpecifier.case, 'localityWeightedLbConfig');
    assert.equal(get(out, name(9000)).outlierDetection, undefined);
  });

  it('consistentHash: MAGLEV with its table size; the default ring size is 1024', () => {
    const dr = destinationRule('reviews', {
      host: HOST,
      trafficPolicy: {
        loadBalancer: { consistentHash: { httpHeaderName: 'x-user' } },
        portLevelSettings: [
          { port: { number: 9090 }, loadBalancer: { consistentHash: { httpHeaderName: 'x-user', maglev: { tableSize: 65537 } } } },
        ],
      },
    });
    const out = clusters([...REVIEWS, dr]);
    const ring = get(out, name(9080));
    assert.equal(ring.lbPolicy, Cluster_LbPolicy.RING_HASH);
    assert.equal(ring.lbConfig.case === 'ringHashLbConfig' && ring.lbConfig.value.minimumRingSize, 1024n);
    const maglev = get(out, name(9090));
    assert.equal(maglev.lbPolicy, Cluster_LbPolicy.MAGLEV);
    assert.equal(maglev.lbConfig.case === 'maglevLbConfig' && maglev.lbConfig.value.tableSize, 65537n);
  });

  it('warmup: slow start on ROUND_ROBIN and LEAST_REQUEST with istiod defaults (aggression 1, 10% minimum weight)', () => {
    const dr = destinationRule('reviews', {
      host: HOST,
      trafficPolicy: {
        loadBalancer: { simple: 'ROUND_ROBIN', warmup: { duration: '30s' } },
        portLevelSettings: [{ port: { number: 9090 }, loadBalancer: { simple: 'LEAST_REQUEST', warmupDurationSecs: '20s' } }],
      },
    });
    const out = clusters([...REVIEWS, dr]);
    const rr = get(out, name(9080));
    const ss = rr.lbConfig.case === 'roundRobinLbConfig' ? rr.lbConfig.value.slowStartConfig : undefined;
    assert.deepEqual([ss?.slowStartWindow?.seconds, ss?.aggression?.defaultValue, ss?.minWeightPercent?.value], [30n, 1, 10]);
    const lr = get(out, name(9090));
    assert.equal(lr.lbPolicy, Cluster_LbPolicy.LEAST_REQUEST);
    assert.equal(lr.lbConfig.case === 'leastRequestLbConfig' && lr.lbConfig.value.slowStartConfig?.slowStartWindow?.seconds, 20n);
  });

  it('a service name clash keeps the first cluster; UDP ports get none', () => {
    const push = pushFor([
      serviceEntry(
        'dns',
        'dns.example.com',
        [
          { number: 53, name: 'udp', protocol: 'UDP' },
          { number: 5353, name: 'tcp', protocol: 'TCP' },
        ],
        { endpoints: [{ address: '10.9.0.1' }] },
      ),
    ]);
    const proxy = proxyOf('sidecar');
    const svc = push.sidecarScope(proxy).services;
    const out = buildOutboundClusters({ push, proxy, services: [...svc, ...svc] });
    assert.deepEqual(
      out.map((c) => c.name),
      ['outbound|5353||dns.example.com'],
    );
  });
});
