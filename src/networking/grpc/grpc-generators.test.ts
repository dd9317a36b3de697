import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { create, fromBinary } from '@bufbuild/protobuf';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import { Cluster_LbPolicy, ClusterSchema } from '../../gen/envoy/config/cluster/v3/cluster_pb.js';
import { NodeSchema } from '../../gen/envoy/config/core/v3/base_pb.js';
import { ClusterLoadAssignmentSchema } from '../../gen/envoy/config/endpoint/v3/endpoint_pb.js';
import { ListenerSchema } from '../../gen/envoy/config/listener/v3/listener_pb.js';
import { RouteConfigurationSchema } from '../../gen/envoy/config/route/v3/route_pb.js';
import { HTTPFaultSchema } from '../../gen/envoy/extensions/filters/http/fault/v3/fault_pb.js';
import { HttpConnectionManagerSchema } from '../../gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager_pb.js';
import { parseProxy, type Proxy } from '../../model/proxy.js';
import { PushContext } from '../../model/push-context.js';
import { pushRequest } from '../../model/push-request.js';
import type { WatchedResourceView } from '../../xds/generator.js';
import { TypeUrl } from '../../xds/type-urls.js';
import { grpcClusterGenerator, grpcEndpointGenerator, grpcListenerGenerator, grpcRouteGenerator } from './grpc-generators.js';
import { pushOf } from '../../../test/support/config-fixture.js';

const HOST = 'echo.default.svc.cluster.local';

const OBJECTS = [
  {
    apiVersion: 'networking.istio.io/v1',
    kind: 'ServiceEntry',
    metadata: { name: 'echo', namespace: 'default' },
    spec: {
      hosts: [HOST],
      location: 'MESH_INTERNAL',
      resolution: 'STATIC',
      ports: [{ number: 8080, name: 'grpc', protocol: 'GRPC' }],
      workloadSelector: { labels: { app: 'echo' } },
    },
  },
  ...['v1', 'v2'].map((v, i) => ({
    apiVersion: 'networking.istio.io/v1beta1',
    kind: 'WorkloadEntry',
    metadata: { name: `echo-${v}`, namespace: 'default' },
    spec: { address: '127.0.0.1', ports: { grpc: 9000 + i }, labels: { app: 'echo', version: v }, locality: 'r1/z1', weight: 3 },
  })),
  {
    apiVersion: 'networking.istio.io/v1alpha3',
    kind: 'DestinationRule',
    metadata: { name: 'echo', namespace: 'default' },
    spec: {
      host: 'echo',
      trafficPolicy: { loadBalancer: { simple: 'ROUND_ROBIN' }, connectionPool: { http: { http2MaxRequests: 50 } } },
      subsets: [
        { name: 'v1', labels: { version: 'v1' } },
        { name: 'v2', labels: { version: 'v2' }, trafficPolicy: { loadBalancer: { consistentHash: { httpHeaderName: 'x-user' } } } },
      ],
    },
  },
  {
    apiVersion: 'networking.istio.io/v1',
    kind: 'VirtualService',
    metadata: { name: 'echo', namespace: 'default' },
    spec: {
      hosts: ['echo'],
      http: [
        {
          name: 'canary',
          match: [{ headers: { 'x-canary': { exact: 'yes' } }, uri: { regex: '/echo\\..*' } }],
          route: [{ destination: { host: 'echo', subset: 'v2' } }],
        },
        { name: 'other-port', match: [{ port: 9999 }], route: [{ destination: { host: 'echo', subset: 'v2' } }] },
        {
          name: 'split',
          fault: { abort: { grpcStatus: 'UNAVAILABLE', percentage: { value: 12.5 } } },
          timeout: '3s',
          route: [
            { destination: { host: 'echo', subset: 'v1' }, weight: 80 },
            { destination: { host: 'echo', subset: 'v2' }, weight: 20 },
          ],
        },
      ],
    },
  },
];

function pushFor(objects: readonly Record<string, unknown>[]): PushContext {
  return pushOf(objects);
}

function proxy(): Proxy {
  const r = parseProxy(
    create(NodeSchema, { id: 'sidecar~127.0.0.1~client.default~default.svc.cluster.local', metadata: { GENERATOR: 'grpc' } }),
  );
  assert.ok(r.ok);
  return r.value;
}

const watch = (typeUrl: string, names: string[]): WatchedResourceView => ({ typeUrl, names: new Set(names), wildcard: names.length === 0 });
const REQ = pushRequest({ full: true, start: 0 });

describe('proxyless gRPC generators', () => {
  it('LDS: an api_listener HCM over RDS named by the target, fault then router', () => {
    const push = pushFor(OBJECTS);
    const [res, ...rest] = grpcListenerGenerator.generate(
      proxy(),
      watch(TypeUrl.Listener, [`${HOST}:8080`, 'unknown.default.svc.cluster.local:8080', `${HOST}:1234`]),
      push,
      REQ,
    );
    assert.equal(rest.length, 0, 'unknown hosts and ports are left out');
    const l = fromBinary(ListenerSchema, res!.value);
    assert.equal(l.name, `${HOST}:8080`);
    const hcm = anyUnpack(l.apiListener!.apiListener!, HttpConnectionManagerSchema)!;
    assert.equal(hcm.routeSpecifier.case, 'rds');
    assert.equal(hcm.routeSpecifier.value?.routeConfigName, `outbound|8080||${HOST}`, 'istiod names the route like the cluster');
    assert.deepEqual(
      hcm.httpFilters.map((f) => f.name),
      ['envoy.filters.http.fault', 'envoy.filters.http.router'],
    );
  });

  it('RDS: VirtualService rules become routes; port-scoped matches for other ports are dropped', () => {
    const push = pushFor(OBJECTS);
    const [res] = grpcRouteGenerator.generate(proxy(), watch(TypeUrl.RouteConfiguration, [`outbound|8080||${HOST}`]), push, REQ);
    const rc = fromBinary(RouteConfigurationSchema, res!.value);
    const vh = rc.virtualHosts[0]!;
    assert.equal(vh.name, `${HOST}:8080`);
    // istiod's domain list, in istiod's order (checked against istiod on examples/bookinfo).
    assert.deepEqual(vh.domains, [
      HOST,
      `${HOST}:8080`,
      `${HOST}.`,
      `${HOST}.:8080`,
      'echo',
      'echo:8080',
      'echo.default.svc',
      'echo.default.svc:8080',
      'echo.default',
      'echo.default:8080',
    ]);
    assert.deepEqual(
      vh.routes.map((r) => r.name),
      ['canary', 'split'],
    );
    const canary = vh.routes[0]!;
    assert.equal(canary.match?.pathSpecifier.case, 'safeRegex');
    assert.equal(canary.match?.headers[0]?.headerMatchSpecifier.case, 'exactMatch', 'legacy matcher for old gRPC C-core');
    assert.equal(canary.action.case, 'route');
    assert.equal(canary.action.value?.clusterSpecifier.value, `outbound|8080|v2|${HOST}`);
    const split = vh.routes[1]!;
    assert.equal(split.action.case, 'route');
    const wc = split.action.value!.clusterSpecifier;
    assert.equal(wc.case, 'weightedClusters');
    assert.deepEqual(
      wc.value!.clusters.map((c) => [c.name, c.weight]),
      [
        [`outbound|8080|v1|${HOST}`, 80],
        [`outbound|8080|v2|${HOST}`, 20],
      ],
    );
    assert.equal(split.action.value!.timeout?.seconds, 3n);
    const fault = anyUnpack(split.typedPerFilterConfig['envoy.filters.http.fault']!, HTTPFaultSchema)!;
    assert.deepEqual(
      [fault.abort?.errorType.case, fault.abort?.errorType.value, fault.abort?.percentage?.numerator],
      ['grpcStatus', 14, 125_000],
    );
  });

  it('RDS without a VirtualService: one default route to the service cluster', () => {
    const push = pushFor(OBJECTS.filter((o) => o.kind !== 'VirtualService'));
    const [res] = grpcRouteGenerator.generate(proxy(), watch(TypeUrl.RouteConfiguration, [`outbound|8080||${HOST}`]), push, REQ);
    const routes = fromBinary(RouteConfigurationSchema, res!.value).virtualHosts[0]!.routes;
    assert.equal(routes.length, 1);
    assert.equal(
      routes[0]!.action.value && 'clusterSpecifier' in routes[0]!.action.value ? routes[0]!.action.value.clusterSpecifier.value : '',
      `outbound|8080||${HOST}`,
    );
  });

  it('CDS: EDS clusters with the DestinationRule LB; subset overrides; unknown subsets and wildcard get nothing', () => {
    const push = pushFor(OBJECTS);
    const names = [`outbound|8080|v1|${HOST}`, `outbound|8080|v2|${HOST}`, `outbound|8080|nope|${HOST}`, `outbound|8080||${HOST}`];
    const out = grpcClusterGenerator
      .generate(proxy(), watch(TypeUrl.Cluster, names), push, REQ)
      .map((r) => fromBinary(ClusterSchema, r.value));
    assert.deepEqual(out.map((c) => c.name).sort(), [names[3], names[0], names[1]].sort());
    const byName = new Map(out.map((c) => [c.name, c]));
    assert.equal(byName.get(names[0]!)!.lbPolicy, Cluster_LbPolicy.ROUND_ROBIN);
    assert.equal(byName.get(names[1]!)!.lbPolicy, Cluster_LbPolicy.RING_HASH);
    assert.equal(byName.get(names[0]!)!.circuitBreakers?.thresholds[0]?.maxRequests, 50);
    assert.equal(byName.get(names[0]!)!.edsClusterConfig?.serviceName, names[0]);
    assert.equal(
      grpcClusterGenerator.generate(proxy(), watch(TypeUrl.Cluster, []), push, REQ).length,
      0,
      'wildcard CDS from proxyless gets none (istiod)',
    );
    // The DestinationRule each cluster follows, as Envoy's clusters carry it (meshctl's DESTINATION RULE column).
    assert.deepEqual(byName.get(names[1]!)!.metadata?.filterMetadata.istio, {
      config: '/apis/networking.istio.io/v1/namespaces/default/destination-rule/echo',
      subset: 'v2',
    });
    assert.deepEqual(byName.get(names[3]!)!.metadata?.filterMetadata.istio, {
      config: '/apis/networking.istio.io/v1/namespaces/default/destination-rule/echo',
    });
    const noRule = grpcClusterGenerator
      .generate(proxy(), watch(TypeUrl.Cluster, [names[3]!]), pushFor(OBJECTS.filter((o) => o.kind !== 'DestinationRule')), REQ)
      .map((r) => fromBinary(ClusterSchema, r.value));
    assert.equal(noRule[0]?.metadata, undefined);
  });

  it('EDS: endpoints filtered by subset labels, grouped by locality with a weight', () => {
    const push = pushFor(OBJECTS);
    const byName = new Map(
      grpcEndpointGenerator
        .generate(proxy(), watch(TypeUrl.ClusterLoadAssignment, [`outbound|8080||${HOST}`, `outbound|8080|v2|${HOST}`]), push, REQ)
        .map((r) => fromBinary(ClusterLoadAssignmentSchema, r.value))
        .map((c) => [c.clusterName, c]),
    );
    const all = byName.get(`outbound|8080||${HOST}`);
    const v2 = byName.get(`outbound|8080|v2|${HOST}`);
    const ports = (cla: typeof all) =>
      cla!.endpoints.flatMap((l) =>
        l.lbEndpoints.map((e) => {
          const a = e.hostIdentifier.case === 'endpoint' ? e.hostIdentifier.value.address?.address : undefined;
          return a?.case === 'socketAddress' && a.value.portSpecifier.case === 'portValue' ? a.value.portSpecifier.value : -1;
        }),
      );
    assert.deepEqual(ports(all), [9000, 9001]);
    assert.deepEqual(ports(v2), [9001]);
    assert.equal(all!.endpoints[0]!.loadBalancingWeight, 6);
    assert.deepEqual([all!.endpoints[0]!.locality?.region, all!.endpoints[0]!.locality?.zone], ['r1', 'z1']);
  });

  it('marshal once: a second proxy with the same view gets the same encoded bytes', () => {
    const push = pushFor(OBJECTS);
    const w = watch(TypeUrl.RouteConfiguration, [`outbound|8080||${HOST}`]);
    const a = grpcRouteGenerator.generate(proxy(), w, push, REQ);
    const b = grpcRouteGenerator.generate(proxy(), w, push, REQ);
    assert.equal(a[0]!.any, b[0]!.any, 'same object from the cache, not re-encoded');
    assert.equal(push.cache.stats().hits, 1);
  });
});
