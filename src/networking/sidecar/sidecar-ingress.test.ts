import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ClusterSchema, Cluster_DiscoveryType } from '../../gen/envoy/config/cluster/v3/cluster_pb.js';
import { checked, proxyOf, pushFor, serviceEntry, workloadEntry } from '../../../test/support/networking/cluster-fixtures.js';
import { selectSidecar } from '../../model/sidecar-scope.js';
import { buildIngressCluster, inboundPorts } from './sidecar-ingress.js';

const sidecar = (ingress: unknown[]): Record<string, unknown> => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'Sidecar',
  metadata: { name: 'app', namespace: 'default' },
  spec: { workloadSelector: { labels: { app: 'a' } }, ingress },
});
const objects = [
  serviceEntry('a', 'a.default.svc.cluster.local', [{ number: 80, name: 'http', protocol: 'HTTP', targetPort: 8080 }], {
    workloadSelector: { app: 'a' },
  }),
  workloadEntry('a-1', { address: '10.0.0.5', labels: { app: 'a' } }),
  sidecar([
    { port: { number: 9080, protocol: 'HTTP', name: 'http' }, defaultEndpoint: '127.0.0.1:8080' },
    { port: { number: 9090, protocol: 'TCP', name: 'tcp' }, defaultEndpoint: '0.0.0.0:7070' },
    { port: { number: 9091, protocol: 'GRPC', name: 'grpc' }, defaultEndpoint: 'unix:///var/run/app.sock' },
    { port: { number: 9092, protocol: 'HTTP', name: 'http-unset' } },
  ]),
];
const proxy = proxyOf('sidecar', { ip: '10.0.0.5', labels: { app: 'a' } });

test('without Sidecar ingress, inbound ports are the workload ports of the service instances', () => {
  const push = pushFor(objects.slice(0, 2));
  assert.deepEqual(inboundPorts(undefined, push.serviceInstances(proxy)), [
    {
      port: 8080,
      protocol: 'http',
      target: { kind: 'original' },
      operation: 'a.default.svc.cluster.local:80/*',
      grpc: false,
      servicePort: 80,
    },
  ]);
});

test('Sidecar ingress listeners replace the service ports, each defaultEndpoint form has its cluster', () => {
  const push = pushFor(objects);
  const sc = selectSidecar(push.config, push.mesh.rootNamespace, 'default', proxy.labels);
  const ports = inboundPorts(sc, push.serviceInstances(proxy));
  assert.deepEqual(
    ports.map((p) => [p.port, p.protocol, p.target.kind]),
    [
      [9080, 'http', 'static'],
      [9090, 'tcp', 'original-port'],
      [9091, 'http', 'pipe'],
      [9092, 'http', 'original'],
    ],
  );
  const [loopback, wildcard, uds, unset] = checked(
    ClusterSchema,
    ports.map((p) => buildIngressCluster(push, proxy, p, push.serviceInstances(proxy))),
  );
  assert.equal(loopback!.name, 'inbound|9080||');
  assert.deepEqual(loopback!.clusterDiscoveryType, { case: 'type', value: Cluster_DiscoveryType.STATIC });
  const ep = loopback!.loadAssignment?.endpoints[0]?.lbEndpoints[0]?.hostIdentifier;
  assert.equal(
    ep?.case === 'endpoint' && ep.value.address?.address.case === 'socketAddress'
      ? `${ep.value.address.address.value.address}:${ep.value.address.address.value.portSpecifier.value}`
      : '',
    '127.0.0.1:8080',
  );
  assert.deepEqual(wildcard!.clusterDiscoveryType, { case: 'type', value: Cluster_DiscoveryType.ORIGINAL_DST });
  assert.equal(wildcard!.lbConfig.case === 'originalDstLbConfig' ? wildcard!.lbConfig.value.upstreamPortOverride : undefined, 7070);
  assert.ok(wildcard!.upstreamBindConfig, 'ORIGINAL_DST inbound binds the passthrough source address');
  const pipe = uds!.loadAssignment?.endpoints[0]?.lbEndpoints[0]?.hostIdentifier;
  assert.equal(
    pipe?.case === 'endpoint' && pipe.value.address?.address.case === 'pipe' ? pipe.value.address.address.value.path : '',
    '/var/run/app.sock',
  );
  assert.equal(unset!.lbConfig.case, undefined, 'unset keeps the dialled port');
});
