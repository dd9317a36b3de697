import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  Cluster_DiscoveryType,
  Cluster_DnsLookupFamily,
  Cluster_LbPolicy,
  type Cluster,
} from '../../gen/envoy/config/cluster/v3/cluster_pb.js';
import { create } from '@bufbuild/protobuf';
import { defaultMeshConfig } from '../../config/mesh/mesh-config.js';
import { NodeSchema } from '../../gen/envoy/config/core/v3/base_pb.js';
import { PushContext } from '../../model/push-context.js';
import { parseProxy, type Proxy } from '../../model/proxy.js';
import { snapshotOf } from '../../../test/support/config-fixture.js';
import { buildGatewayClusters } from './proxy-clusters.js';
import { buildOutboundClusters, buildSniDnatClusters } from './outbound-clusters.js';
import {
  byName,
  destinationRule,
  get,
  proxyOf,
  pushFor,
  serviceEntry,
  tlsOf,
  workloadEntry,
} from '../../../test/support/networking/cluster-fixtures.js';

function build(objects: Record<string, unknown>[], proxy: Proxy = proxyOf('sidecar')): Map<string, Cluster> {
  const push = pushFor(objects);
  return byName(buildOutboundClusters({ push, proxy, services: push.sidecarScope(proxy).services }));
}

const typeOf = (c: Cluster) => (c.clusterDiscoveryType.case === 'type' ? c.clusterDiscoveryType.value : undefined);
const inline = (c: Cluster) =>
  c.loadAssignment?.endpoints.flatMap((l) =>
    l.lbEndpoints.map((e) => {
      const a = e.hostIdentifier.case === 'endpoint' ? e.hostIdentifier.value.address?.address : undefined;
      return a?.case === 'socketAddress' ? `${a.value.address}:${a.value.portSpecifier.value}` : '?';
    }),
  );

const TLS443 = [{ number: 443, name: 'tls', protocol: 'TLS' }];

describe('cluster discovery type by resolution', () => {
  it('DNS: STRICT_DNS with the endpoints inline, 60s refresh honouring TTLs, IPv4 lookups for an IPv4 proxy', () => {
    const c = get(
      build([
        serviceEntry('api', 'api.example.com', TLS443, {
          resolution: 'DNS',
          location: 'MESH_EXTERNAL',
          endpoints: [{ address: 'a.example.com' }, { address: 'b.example.com', ports: { tls: 8443 } }],
        }),
      ]),
      'outbound|443||api.example.com',
    );
    assert.equal(typeOf(c), Cluster_DiscoveryType.STRICT_DNS);
    assert.deepEqual(inline(c), ['a.example.com:443', 'b.example.com:8443']);
    assert.equal(c.loadAssignment?.clusterName, 'outbound|443||api.example.com');
    assert.deepEqual([c.dnsRefreshRate?.seconds, c.respectDnsTtl, c.dnsLookupFamily], [60n, true, Cluster_DnsLookupFamily.V4_ONLY]);
    assert.equal(c.edsClusterConfig, undefined);
    assert.equal(c.lbPolicy, Cluster_LbPolicy.LEAST_REQUEST);
  });

  it('DNS without endpoints resolves the host itself; DNS_ROUND_ROBIN is LOGICAL_DNS; an IPv6 proxy looks up AAAA', () => {
    const out = build(
      [
        serviceEntry('plain', 'plain.example.com', [{ number: 80, name: 'http', protocol: 'HTTP', targetPort: 8080 }], {
          resolution: 'DNS',
          location: 'MESH_EXTERNAL',
        }),
        serviceEntry('rr', 'rr.example.com', TLS443, { resolution: 'DNS_ROUND_ROBIN', location: 'MESH_EXTERNAL' }),
      ],
      proxyOf('sidecar', { ip: 'fd00::5' }),
    );
    const plain = get(out, 'outbound|80||plain.example.com');
    assert.deepEqual(inline(plain), ['plain.example.com:8080']);
    assert.equal(plain.dnsLookupFamily, Cluster_DnsLookupFamily.V6_ONLY);
    const rr = get(out, 'outbound|443||rr.example.com');
    assert.equal(typeOf(rr), Cluster_DiscoveryType.LOGICAL_DNS);
    assert.deepEqual(inline(rr), ['rr.example.com:443']);
  });

  it('a dual-stack proxy looks up both families (happy eyeballs) under ISTIO_DUAL_STACK, IPv4 only without it', () => {
    const objects = [serviceEntry('api', 'api.example.com', TLS443, { resolution: 'DNS', location: 'MESH_EXTERNAL' })];
    const r = parseProxy(
      create(NodeSchema, {
        id: 'sidecar~10.0.0.1~client-abc.default~default.svc.cluster.local',
        metadata: { INSTANCE_IPS: '10.0.0.1,fd00::1', LABELS: { app: 'client' } },
      }),
    );
    assert.ok(r.ok);
    const family = (dualStack: boolean): Cluster_DnsLookupFamily | undefined => {
      const push = new PushContext({ version: 'v1', mesh: defaultMeshConfig(), config: snapshotOf(objects), dualStack });
      const out = byName(buildOutboundClusters({ push, proxy: r.value, services: push.sidecarScope(r.value).services }));
      return get(out, 'outbound|443||api.example.com').dnsLookupFamily;
    };
    assert.deepEqual([family(true), family(false)], [Cluster_DnsLookupFamily.ALL, Cluster_DnsLookupFamily.V4_ONLY]);
  });

  it('DNS subsets filter the inline endpoints; a subset no endpoint matches gets no cluster (istiod drops it)', () => {
    const out = build([
      serviceEntry('db', 'db.example.com', [{ number: 5432, name: 'tcp', protocol: 'TCP' }], {
        resolution: 'DNS',
        location: 'MESH_EXTERNAL',
        endpoints: [
          { address: 'db1.example.com', labels: { role: 'primary' } },
          { address: 'db2.example.com', labels: { role: 'replica' } },
        ],
      }),
      destinationRule('db', {
        host: 'db.example.com',
        subsets: [
          { name: 'primary', labels: { role: 'primary' } },
          { name: 'none', labels: { role: 'gone' } },
        ],
      }),
    ]);
    assert.deepEqual(inline(get(out, 'outbound|5432|primary|db.example.com')), ['db1.example.com:5432']);
    assert.equal(out.has('outbound|5432|none|db.example.com'), false);
    assert.equal(inline(get(out, 'outbound|5432||db.example.com'))?.length, 2);
  });

  it('inline DNS endpoints get locality priorities relative to the proxy, as EDS ones do', () => {
    const objects = [
      serviceEntry('geo', 'geo.example.com', TLS443, {
        resolution: 'DNS',
        location: 'MESH_EXTERNAL',
        endpoints: [
          { address: 'far.example.com', locality: 'r2/z1' },
          { address: 'near.example.com', locality: 'r1/z1' },
        ],
      }),
      destinationRule('geo', { host: 'geo.example.com', trafficPolicy: { outlierDetection: { consecutive5xxErrors: 3 } } }),
    ];
    const c = get(build(objects, proxyOf('sidecar', { locality: ['r1', 'z1', ''] })), 'outbound|443||geo.example.com');
    assert.deepEqual(
      c.loadAssignment?.endpoints.map((l) => [l.locality?.region, l.priority]),
      [
        ['r1', 0],
        ['r2', 1],
      ],
    );
    const far = get(build(objects, proxyOf('sidecar', { locality: ['r2', 'z1', ''] })), 'outbound|443||geo.example.com');
    assert.deepEqual(
      far.loadAssignment?.endpoints.map((l) => [l.locality?.region, l.priority]),
      [
        ['r1', 1],
        ['r2', 0],
      ],
    );
  });

  it('NONE: ORIGINAL_DST + CLUSTER_PROVIDED on sidecars (targetPort as port override), EDS on gateways', () => {
    const se = serviceEntry('legacy', 'legacy.example.com', [{ number: 8000, name: 'tcp', protocol: 'TCP', targetPort: 9000 }], {
      resolution: 'NONE',
      location: 'MESH_EXTERNAL',
    });
    const sidecar = get(build([se]), 'outbound|8000||legacy.example.com');
    assert.deepEqual([typeOf(sidecar), sidecar.lbPolicy], [Cluster_DiscoveryType.ORIGINAL_DST, Cluster_LbPolicy.CLUSTER_PROVIDED]);
    assert.equal(sidecar.lbConfig.case === 'originalDstLbConfig' && sidecar.lbConfig.value.upstreamPortOverride, 9000);
    assert.equal(sidecar.edsClusterConfig, undefined);
    const gw = get(build([se], proxyOf('router', { namespace: 'istio-system' })), 'outbound|8000||legacy.example.com');
    assert.equal(typeOf(gw), Cluster_DiscoveryType.EDS);
    assert.equal(gw.edsClusterConfig?.serviceName, 'outbound|8000||legacy.example.com');
  });

  it('NONE inside the mesh: mTLS socket when every endpoint has a sidecar (no socket matches on ORIGINAL_DST), none otherwise', () => {
    const ports = [{ number: 8080, name: 'http', protocol: 'HTTP' }];
    const out = build([
      serviceEntry('all', 'all.mesh', ports, { resolution: 'NONE', workloadSelector: { app: 'all' } }),
      serviceEntry('mixed', 'mixed.mesh', ports, { resolution: 'NONE', workloadSelector: { app: 'mixed' } }),
      serviceEntry('empty', 'empty.mesh', ports, { resolution: 'NONE' }),
      workloadEntry('all-1', { address: '10.3.0.1', serviceAccount: 'a', labels: { app: 'all' } }),
      workloadEntry('mixed-1', { address: '10.3.0.2', serviceAccount: 'a', labels: { app: 'mixed' } }),
      workloadEntry('mixed-2', { address: '10.3.0.3', labels: { app: 'mixed' } }),
    ]);
    const all = get(out, 'outbound|8080||all.mesh');
    assert.equal(all.transportSocketMatches.length, 0);
    assert.equal(tlsOf(all.transportSocket).sni, 'outbound_.8080_._.all.mesh');
    assert.equal(get(out, 'outbound|8080||mixed.mesh').transportSocket, undefined);
    assert.equal(get(out, 'outbound|8080||empty.mesh').transportSocket, undefined);
  });

  it('a PASSTHROUGH load balancer makes that cluster ORIGINAL_DST and drops inline endpoints', () => {
    const out = build([
      serviceEntry('api', 'api.example.com', TLS443, {
        resolution: 'DNS',
        location: 'MESH_EXTERNAL',
        endpoints: [{ address: 'a.example.com' }],
      }),
      destinationRule('api', {
        host: 'api.example.com',
        subsets: [{ name: 'direct', labels: {}, trafficPolicy: { loadBalancer: { simple: 'PASSTHROUGH' } } }],
      }),
    ]);
    const direct = get(out, 'outbound|443|direct|api.example.com');
    assert.deepEqual(
      [typeOf(direct), direct.lbPolicy, direct.loadAssignment],
      [Cluster_DiscoveryType.ORIGINAL_DST, Cluster_LbPolicy.CLUSTER_PROVIDED, undefined],
    );
    assert.equal(typeOf(get(out, 'outbound|443||api.example.com')), Cluster_DiscoveryType.STRICT_DNS);
  });
});

describe('gateway clusters', () => {
  const OBJECTS = [
    serviceEntry('reviews', 'reviews.default.svc.cluster.local', [{ number: 9080, name: 'http', protocol: 'HTTP' }], {
      workloadSelector: { app: 'reviews' },
    }),
    workloadEntry('reviews-v1', { address: '10.1.0.1', serviceAccount: 'reviews', labels: { app: 'reviews', version: 'v1' } }),
    serviceEntry('api', 'api.example.com', TLS443, { location: 'MESH_EXTERNAL', endpoints: [{ address: '192.0.2.1' }] }),
    destinationRule('reviews', { host: 'reviews.default.svc.cluster.local', subsets: [{ name: 'v1', labels: { version: 'v1' } }] }),
  ];

  it('outbound clusters then BlackHoleCluster, no passthrough', () => {
    const push = pushFor(OBJECTS);
    const proxy = proxyOf('router', { namespace: 'istio-system' });
    const names = buildGatewayClusters({ push, proxy, services: push.sidecarScope(proxy).services }).map((c) => c.name);
    assert.deepEqual(names, [
      'outbound|443||api.example.com',
      'outbound|9080||reviews.default.svc.cluster.local',
      'outbound|9080|v1|reviews.default.svc.cluster.local',
      'BlackHoleCluster',
    ]);
  });

  it('SNI-DNAT: mesh-internal services and subsets named outbound_.<port>_.<subset>_.<host>, EDS, no TLS origination', () => {
    const push = pushFor(OBJECTS);
    const proxy = proxyOf('router', { namespace: 'istio-system' });
    const out = byName(buildSniDnatClusters(push, proxy, push.sidecarScope(proxy).services));
    assert.deepEqual(
      [...out.keys()],
      ['outbound_.9080_._.reviews.default.svc.cluster.local', 'outbound_.9080_.v1_.reviews.default.svc.cluster.local'],
    );
    const c = get(out, 'outbound_.9080_.v1_.reviews.default.svc.cluster.local');
    assert.equal(c.edsClusterConfig?.serviceName, c.name);
    assert.deepEqual([c.transportSocket, c.transportSocketMatches.length], [undefined, 0]);
  });
});
