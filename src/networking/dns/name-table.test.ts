import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { create, fromBinary, toJson } from '@bufbuild/protobuf';
import type { V1EndpointSlice, V1Pod, V1Service } from '@kubernetes/client-node';
import { NodeSchema } from '../../gen/envoy/config/core/v3/base_pb.js';
import { NameTableSchema } from '../../gen/dns/proto/nds_pb.js';
import { defaultMeshConfig } from '../../config/mesh/mesh-config.js';
import { parseProxy, type Proxy } from '../../model/proxy.js';
import { PushContext } from '../../model/push-context.js';
import { KubeRegistrySnapshot } from '../../registry/kube/kube-snapshot.js';
import { convertService, serviceEndpoints, type PodLookup } from '../../registry/kube/translate.js';
import { snapshotOf } from '../../../test/support/config-fixture.js';
import { serviceEntry, workloadEntry } from '../../../test/support/networking/cluster-fixtures.js';
import { buildNameTable } from './name-table.js';
import { ndsGenerator } from './nds-generator.js';

function proxy(metadata: Record<string, string> = {}, ip = '10.0.0.1', namespace = 'default'): Proxy {
  const r = parseProxy(create(NodeSchema, { id: `sidecar~${ip}~client-abc.${namespace}~${namespace}.svc.cluster.local`, metadata }));
  assert.ok(r.ok);
  return r.value;
}

const CAPTURE = { DNS_CAPTURE: 'true', DNS_AUTO_ALLOCATE: 'true' };

const pod = (name: string, ip: string, spec: Partial<NonNullable<V1Pod['spec']>> = {}): V1Pod => ({
  metadata: { name, namespace: 'db' },
  spec: { containers: [], ...spec },
  status: { phase: 'Running', podIP: ip, conditions: [{ type: 'Ready', status: 'True' }] },
});

/** A Kubernetes registry: `reviews` (ClusterIP, dual stack) in default, `mysql` (headless) in db with two pods of a StatefulSet. */
function kubeRegistry(): KubeRegistrySnapshot {
  const pods = [
    pod('mysql-0', '10.1.0.10', { hostname: 'mysql-0', subdomain: 'mysql' }),
    pod('mysql-1', '10.1.0.11', { subdomain: 'mysql' }),
  ];
  const lookup: PodLookup = {
    podByName: (ns, name) => pods.find((p) => p.metadata?.name === name && p.metadata.namespace === ns),
    podsByIp: (ip) => pods.filter((p) => p.status?.podIP === ip),
    node: () => undefined,
  };
  const svcs: V1Service[] = [
    {
      metadata: { name: 'reviews', namespace: 'default' },
      spec: { clusterIP: '10.96.0.20', clusterIPs: ['10.96.0.20', 'fd00::20'], ports: [{ name: 'http', port: 9080 }] },
    },
    { metadata: { name: 'mysql', namespace: 'db' }, spec: { clusterIP: 'None', ports: [{ name: 'tcp', port: 3306 }] } },
  ];
  const slice: V1EndpointSlice = {
    addressType: 'IPv4',
    metadata: { name: 'mysql-x', namespace: 'db', labels: { 'kubernetes.io/service-name': 'mysql' } },
    ports: [{ name: 'tcp', port: 3306 }],
    endpoints: pods.map((p) => ({
      addresses: [p.status!.podIP!],
      conditions: { ready: true },
      targetRef: { kind: 'Pod', name: p.metadata!.name!, namespace: 'db' },
    })),
  };
  const entries = new Map(
    svcs.map((s) => {
      const service = convertService(s, 'cluster.local');
      const endpoints = serviceEndpoints(service, s, s.metadata?.name === 'mysql' ? [slice] : [], lookup);
      return [service.hostname, { service, endpoints }] as const;
    }),
  );
  return new KubeRegistrySnapshot(entries);
}

const objects = [
  serviceEntry('api', 'api.example.com', [{ number: 443, name: 'tls', protocol: 'TLS' }], { resolution: 'DNS', location: 'MESH_EXTERNAL' }),
  {
    ...serviceEntry('vip', 'vip.example.com', [{ number: 80, name: 'http', protocol: 'HTTP' }]),
    spec: { hosts: ['vip.example.com'], addresses: ['192.0.2.10', '192.0.2.11/32', '192.0.2.0/24'], ports: [{ number: 80, name: 'http' }] },
  },
  serviceEntry('none', 'none.example.com', [{ number: 80, name: 'http', protocol: 'HTTP' }], {
    resolution: 'NONE',
    workloadSelector: { app: 'legacy' },
  }),
  workloadEntry('legacy-1', { address: '198.51.100.7', labels: { app: 'legacy' } }),
  serviceEntry('wild', '*.wild.example.com', [{ number: 80, name: 'http', protocol: 'HTTP' }], {
    resolution: 'NONE',
    location: 'MESH_EXTERNAL',
  }),
];

function pushWith(registry = kubeRegistry()): PushContext {
  return new PushContext({ version: 'v1', mesh: defaultMeshConfig(), config: snapshotOf(objects), registries: [registry] });
}

const tableOf = (push: PushContext, p: Proxy): unknown => toJson(NameTableSchema, buildNameTable(push, p));

describe('NDS name table', () => {
  it('lists Kubernetes services with their short names, ServiceEntry addresses, headless endpoints and pod names', () => {
    // none.example.com (headless ServiceEntry with a WorkloadEntry) is left out, as istiod leaves it.
    assert.deepEqual(tableOf(pushWith(), proxy(CAPTURE)), {
      table: {
        'reviews.default.svc.cluster.local': { ips: ['10.96.0.20'], registry: 'Kubernetes', shortname: 'reviews', namespace: 'default' },
        'mysql.db.svc.cluster.local': { ips: ['10.1.0.10', '10.1.0.11'], registry: 'Kubernetes', shortname: 'mysql', namespace: 'db' },
        'mysql-0.mysql.db.svc.cluster.local': { ips: ['10.1.0.10'], registry: 'Kubernetes', shortname: 'mysql-0.mysql', namespace: 'db' },
        'mysql-1.mysql.db.svc.cluster.local': { ips: ['10.1.0.11'], registry: 'Kubernetes', shortname: 'mysql-1.mysql', namespace: 'db' },
        // A /32 is its IP; a wider CIDR names no single address.
        'vip.example.com': { ips: ['192.0.2.10', '192.0.2.11'], registry: 'External' },
        // Auto-allocated: no address of its own, resolution DNS, not a wildcard.
        'api.example.com': { ips: ['240.240.131.162'], registry: 'External' },
      },
    });
  });

  it('gives auto-allocated addresses only to proxies that capture DNS and ask for them', () => {
    const push = pushWith();
    for (const meta of [{}, { DNS_CAPTURE: 'true' }, { DNS_AUTO_ALLOCATE: 'true' }]) {
      const t = buildNameTable(push, proxy(meta)).table;
      assert.equal(t['api.example.com'], undefined, JSON.stringify(meta));
      assert.ok(t['vip.example.com']);
    }
  });

  it('answers an IPv6 proxy with the addresses of its family', () => {
    const t = buildNameTable(pushWith(), proxy(CAPTURE, 'fd00::5')).table;
    assert.deepEqual(t['reviews.default.svc.cluster.local']?.ips, ['fd00::20']);
    assert.deepEqual(t['api.example.com']?.ips, ['2001:2::f0f0:83a2']);
    // ServiceEntry addresses are kept whatever their family.
    assert.deepEqual(t['vip.example.com']?.ips, ['192.0.2.10', '192.0.2.11']);
  });

  it('leaves out the endpoints of a headless service on another network', () => {
    const t = buildNameTable(pushWith(), proxy({ ...CAPTURE, NETWORK: 'net-b' })).table;
    // The pods have no network label: the empty network matches every network.
    assert.deepEqual(t['mysql.db.svc.cluster.local']?.ips, ['10.1.0.10', '10.1.0.11']);
  });

  it('is one cached resource per view, rebuilt for a new push that changed a service', () => {
    const push = pushWith();
    const watched = { typeUrl: 'nds', names: new Set<string>(), wildcard: true };
    const req = { full: true } as never;
    const [a] = ndsGenerator.generate(proxy(CAPTURE), watched, push, req);
    const [b] = ndsGenerator.generate(proxy(CAPTURE, '10.0.0.2'), watched, push, req);
    assert.equal(a, b, 'two proxies of one view share the encoded table');
    const [c] = ndsGenerator.generate(proxy({}), watched, push, req);
    assert.notEqual(a, c);
    const decoded = fromBinary(NameTableSchema, c!.value);
    assert.equal(decoded.table['api.example.com'], undefined);
  });
});
