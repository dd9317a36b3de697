import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1EndpointSlice, V1Node, V1Pod, V1Service } from '@kubernetes/client-node';
import { KubeRegistrySnapshot } from './kube-snapshot.js';
import { convertProtocol, convertService, podLocality, serviceEndpoints, withNodeAddresses, type PodLookup } from './translate.js';

const DOMAIN = 'cluster.local';

function svc(name: string, spec: NonNullable<V1Service['spec']>, annotations?: Record<string, string>): V1Service {
  return { metadata: { name, namespace: 'shop', ...(annotations ? { annotations } : {}) }, spec };
}

function pod(
  name: string,
  ip: string,
  o: { labels?: Record<string, string>; sa?: string; node?: string; ports?: { name: string; containerPort: number }[] } = {},
): V1Pod {
  return {
    metadata: { name, namespace: 'shop', labels: o.labels ?? {} },
    spec: {
      containers: [{ name: 'app', ports: o.ports ?? [] }],
      ...(o.sa ? { serviceAccountName: o.sa } : {}),
      ...(o.node ? { nodeName: o.node } : {}),
    },
    status: { phase: 'Running', podIP: ip, podIPs: [{ ip }], conditions: [{ type: 'Ready', status: 'True' }] },
  };
}

function lookup(pods: V1Pod[], nodes: V1Node[] = []): PodLookup {
  return {
    podByName: (ns, name) => pods.find((p) => p.metadata?.namespace === ns && p.metadata.name === name),
    podsByIp: (ip) => pods.filter((p) => p.status?.podIP === ip),
    node: (name) => nodes.find((n) => n.metadata?.name === name),
  };
}

type SliceEndpoint = NonNullable<V1EndpointSlice['endpoints']>[number];

function slice(name: string, endpoints: SliceEndpoint[], ports: { name: string; port?: number }[], addressType = 'IPv4'): V1EndpointSlice {
  return { metadata: { name, namespace: 'shop', labels: { 'kubernetes.io/service-name': 'web' } }, addressType, endpoints, ports };
}

const ep = (address: string, podName?: string, conditions: SliceEndpoint['conditions'] = { ready: true }): SliceEndpoint => ({
  addresses: [address],
  conditions,
  ...(podName ? { targetRef: { kind: 'Pod', name: podName, namespace: 'shop' } } : {}),
});

describe('convertProtocol (istiod ConvertProtocol)', () => {
  const cases: [number, string, string | undefined, string | undefined, string][] = [
    [80, 'http', undefined, undefined, 'HTTP'],
    [80, 'http-web', undefined, undefined, 'HTTP'],
    [80, 'HTTP2-x', undefined, undefined, 'HTTP2'],
    [80, 'grpc', undefined, undefined, 'GRPC'],
    [80, 'grpc-web', undefined, undefined, 'GRPC-WEB'],
    [80, 'grpc-web-ui', undefined, undefined, 'GRPC-WEB'],
    [80, 'grpc-x', undefined, undefined, 'GRPC'],
    [443, 'https', undefined, undefined, 'HTTPS'],
    [443, 'tls-x', undefined, undefined, 'TLS'],
    [80, 'tcp', undefined, undefined, 'TCP'],
    [27017, 'mongo', undefined, undefined, 'MONGO'],
    [3306, 'mysql', undefined, undefined, 'MYSQL'],
    [6379, 'redis', undefined, undefined, 'REDIS'],
    [80, 'web', undefined, undefined, 'UNSUPPORTED'],
    [80, '', undefined, undefined, 'UNSUPPORTED'],
    [3306, 'db', undefined, undefined, 'TCP'],
    [53, '', undefined, undefined, 'TCP'],
    [80, 'http', undefined, 'grpc', 'GRPC'],
    [80, 'tcp', undefined, 'kubernetes.io/h2c', 'HTTP2'],
    [80, 'x', undefined, 'kubernetes.io/ws', 'HTTP'],
    [80, 'x', undefined, 'kubernetes.io/wss', 'HTTPS'],
    [80, 'http', undefined, 'custom', 'UNSUPPORTED'],
    [53, 'http', 'UDP', 'http', 'UDP'],
  ];
  for (const [port, name, proto, app, want] of cases) {
    it(`${port} name=${JSON.stringify(name)} appProtocol=${app ?? '-'} protocol=${proto ?? '-'} → ${want}`, () => {
      assert.equal(convertProtocol(port, name, proto, app), want);
    });
  }
});

describe('convertService', () => {
  it('ClusterIP: STATIC on the cluster IP, ports with protocol and numeric targetPort, source Service', () => {
    const s = convertService(
      svc('web', {
        type: 'ClusterIP',
        clusterIP: '10.96.0.10',
        clusterIPs: ['10.96.0.10'],
        selector: { app: 'web' },
        ports: [
          { name: 'http', port: 80, targetPort: 8080 },
          { name: 'grpc', port: 9090, targetPort: 9090 },
          { name: 'admin', port: 9000, targetPort: 'admin' },
        ],
      }),
      DOMAIN,
    );
    assert.deepEqual(s, {
      hostname: 'web.shop.svc.cluster.local',
      namespace: 'shop',
      ports: [
        { name: 'http', port: 80, protocol: 'HTTP', targetPort: 8080 },
        { name: 'grpc', port: 9090, protocol: 'GRPC' },
        { name: 'admin', port: 9000, protocol: 'UNSUPPORTED', targetPortName: 'admin' },
      ],
      resolution: 'STATIC',
      addresses: ['10.96.0.10'],
      meshExternal: false,
      exportTo: ['*'],
      source: { kind: 'Service', namespace: 'shop', name: 'web' },
      labels: {},
      selector: { app: 'web' },
    });
  });

  it('headless: NONE without addresses; dual-stack ClusterIP: both addresses; NodePort and LoadBalancer as ClusterIP', () => {
    const headless = convertService(svc('db', { clusterIP: 'None', ports: [{ name: 'tcp', port: 5432 }] }), DOMAIN);
    assert.equal(headless.resolution, 'NONE');
    assert.deepEqual(headless.addresses, []);
    const dual = convertService(svc('web', { clusterIP: '10.96.0.10', clusterIPs: ['10.96.0.10', 'fd00::a'], ports: [] }), 'example.org');
    assert.deepEqual(dual.addresses, ['10.96.0.10', 'fd00::a']);
    assert.equal(dual.hostname, 'web.shop.svc.example.org');
    for (const type of ['NodePort', 'LoadBalancer']) {
      const s = convertService(svc('gw', { type, clusterIP: '10.96.0.11', ports: [{ name: 'http', port: 80, nodePort: 30080 }] }), DOMAIN);
      assert.equal(s.resolution, 'STATIC');
      assert.deepEqual(s.addresses, ['10.96.0.11']);
    }
  });

  it('ExternalName: mesh-external DNS, its name the endpoint of every port', () => {
    const k = svc('ext', { type: 'ExternalName', externalName: 'api.example.com', ports: [{ name: 'https', port: 443 }] });
    k.metadata = { ...k.metadata, labels: { app: 'ext' } };
    const s = convertService(k, DOMAIN);
    assert.equal(s.resolution, 'DNS');
    assert.equal(s.meshExternal, true);
    const eps = serviceEndpoints(s, k, [], lookup([]));
    assert.deepEqual(
      eps.get(443)?.map((e) => [e.address, e.port, e.labels]),
      [['api.example.com', 443, { app: 'ext' }]],
    );
  });

  it('exportTo from networking.istio.io/exportTo (`.` is the own namespace)', () => {
    const s = convertService(
      svc('web', { clusterIP: '10.96.0.10', ports: [] }, { 'networking.istio.io/exportTo': ' ., istio-system ,' }),
      DOMAIN,
    );
    assert.deepEqual(s.exportTo, ['shop', 'istio-system']);
  });
});

describe('NodePort network gateways (istiod: traffic.istio.io/nodeSelector)', () => {
  const node = (name: string, labels: Record<string, string>, external?: string): V1Node => ({
    metadata: { name, labels },
    status: {
      addresses: [{ type: 'InternalIP', address: '172.18.0.9' }, ...(external ? [{ type: 'ExternalIP', address: external }] : [])],
    },
  });
  const nodes = [node('a', { gw: 'yes' }, '192.0.2.2'), node('b', { gw: 'yes' }), node('c', {}, '192.0.2.1')];
  const gateway = (selector: string, extra: Partial<V1Service['spec']> = {}): V1Service => ({
    metadata: { name: 'ew', namespace: 'istio-system', annotations: { 'traffic.istio.io/nodeSelector': selector } },
    spec: { type: 'NodePort', clusterIP: '10.96.0.9', ports: [{ name: 'tls', port: 15443, nodePort: 31443 }], ...extra },
  });
  const addressesOf = (svc: V1Service): readonly string[] | undefined =>
    withNodeAddresses(convertService(svc, 'cluster.local'), svc, nodes).externalAddresses;

  it('the ExternalIPs of the selected nodes, the node port of each port; an unparsable selector selects every node', () => {
    assert.deepEqual(addressesOf(gateway('{"gw": "yes"}')), ['192.0.2.2']);
    assert.deepEqual(addressesOf(gateway('not json')), ['192.0.2.1', '192.0.2.2']);
    assert.deepEqual(convertService(gateway('{}'), 'cluster.local').nodePorts, { 15443: 31443 });
  });

  it("the Service's own externalIPs win; without the annotation or of another type it is no NodePort gateway", () => {
    assert.deepEqual(addressesOf(gateway('{}', { externalIPs: ['198.51.100.1'] })), ['198.51.100.1']);
    const plain = gateway('{}');
    delete plain.metadata!.annotations;
    assert.equal(addressesOf(plain), undefined);
    assert.equal(addressesOf(gateway('{}', { type: 'ClusterIP' })), undefined);
  });
});

describe('serviceEndpoints', () => {
  const k8s = svc('web', {
    clusterIP: '10.96.0.10',
    ports: [
      { name: 'http', port: 80, targetPort: 8080 },
      { name: 'admin', port: 9000, targetPort: 'admin' },
    ],
  });
  const service = convertService(k8s, DOMAIN);
  const nodes: V1Node[] = [
    {
      metadata: {
        name: 'n1',
        labels: { 'topology.kubernetes.io/region': 'eu', 'topology.kubernetes.io/zone': 'eu-1a', 'topology.istio.io/subzone': 'rack7' },
      },
    },
  ];

  it('ready endpoints of every slice carry pod labels, service account and node locality; stable order', () => {
    const pods = [
      pod('web-b', '10.0.0.2', { labels: { app: 'web', version: 'v2' }, sa: 'web-sa', node: 'n1' }),
      pod('web-a', '10.0.0.1', { labels: { app: 'web', version: 'v1' }, sa: 'web-sa', node: 'n1' }),
    ];
    const eps = serviceEndpoints(
      service,
      k8s,
      [
        slice('web-2', [ep('10.0.0.2', 'web-b')], [{ name: 'http', port: 8080 }]),
        slice('web-1', [ep('10.0.0.1', 'web-a')], [{ name: 'http', port: 8080 }]),
      ],
      lookup(pods, nodes),
    );
    assert.deepEqual(eps.get(80), [
      {
        address: '10.0.0.1',
        port: 8080,
        servicePort: 80,
        labels: { app: 'web', version: 'v1' },
        locality: { region: 'eu', zone: 'eu-1a', subzone: 'rack7' },
        weight: 1,
        serviceAccount: 'web-sa',
        network: '',
        source: { kind: 'Pod', namespace: 'shop', name: 'web-a' },
      },
      {
        address: '10.0.0.2',
        port: 8080,
        servicePort: 80,
        labels: { app: 'web', version: 'v2' },
        locality: { region: 'eu', zone: 'eu-1a', subzone: 'rack7' },
        weight: 1,
        serviceAccount: 'web-sa',
        network: '',
        source: { kind: 'Pod', namespace: 'shop', name: 'web-b' },
      },
    ]);
    assert.deepEqual(eps.get(9000), []);
  });

  it('not-ready and terminating endpoints are left out; ready unset counts as ready', () => {
    const pods = [pod('a', '10.0.0.1'), pod('b', '10.0.0.2'), pod('c', '10.0.0.3'), pod('d', '10.0.0.4')];
    const s = slice(
      'web-1',
      [
        ep('10.0.0.1', 'a'),
        ep('10.0.0.2', 'b', { ready: false, serving: true, terminating: true }),
        ep('10.0.0.3', 'c', { ready: false }),
        ep('10.0.0.4', 'd', {}),
      ],
      [{ name: 'http', port: 8080 }],
    );
    assert.deepEqual(
      serviceEndpoints(service, k8s, [s], lookup(pods))
        .get(80)
        ?.map((e) => e.address),
      ['10.0.0.1', '10.0.0.4'],
    );
  });

  it('a slice naming an unknown pod waits for it; a manual slice finds its pod by IP, or has none', () => {
    const pods = [pod('known', '10.0.0.9', { labels: { app: 'manual' }, sa: 'm' })];
    const s = slice('web-1', [ep('10.0.0.1', 'missing'), ep('10.0.0.9'), ep('192.168.1.1')], [{ name: 'http', port: 8080 }]);
    const eps = serviceEndpoints(service, k8s, [s], lookup(pods)).get(80) ?? [];
    assert.deepEqual(
      eps.map((e) => [e.address, e.serviceAccount, e.labels, e.source.kind]),
      [
        ['10.0.0.9', 'm', { app: 'manual' }, 'Pod'],
        ['192.168.1.1', '', {}, 'EndpointSlice'],
      ],
    );
  });

  it('IPv6 slices count, FQDN slices do not; an address in two slices counts once', () => {
    const pods = [pod('a', '10.0.0.1'), pod('a6', 'fd00::1')];
    const eps = serviceEndpoints(
      service,
      k8s,
      [
        slice('web-v4', [ep('10.0.0.1', 'a')], [{ name: 'http', port: 8080 }]),
        slice('web-v4-dup', [ep('10.0.0.1', 'a')], [{ name: 'http', port: 8080 }]),
        slice('web-v6', [ep('fd00::1', 'a6')], [{ name: 'http', port: 8080 }], 'IPv6'),
        slice('web-fqdn', [{ addresses: ['host.example.com'], conditions: { ready: true } }], [{ name: 'http', port: 8080 }], 'FQDN'),
      ],
      lookup(pods),
    );
    assert.deepEqual(
      eps.get(80)?.map((e) => e.address),
      ['10.0.0.1', 'fd00::1'],
    );
  });

  it('slice ports match service ports by name; a slice port without number resolves the named targetPort on the pod', () => {
    const pods = [pod('a', '10.0.0.1', { ports: [{ name: 'admin', containerPort: 9901 }] })];
    const s = slice('web-1', [ep('10.0.0.1', 'a')], [{ name: 'admin' }, { name: 'http' }, { name: 'other', port: 1234 }]);
    const eps = serviceEndpoints(service, k8s, [s], lookup(pods));
    assert.deepEqual(
      eps.get(9000)?.map((e) => e.port),
      [9901],
    );
    assert.deepEqual(
      eps.get(80)?.map((e) => e.port),
      [8080],
    );
  });

  it('locality: the pod label wins over the node; `.` separators are accepted', () => {
    const p = pod('a', '10.0.0.1', { node: 'n1', labels: { 'istio-locality': 'us.us-east1.b' } });
    assert.deepEqual(podLocality(p, nodes[0]), { region: 'us', zone: 'us-east1', subzone: 'b' });
    assert.deepEqual(
      podLocality(pod('b', '10.0.0.2'), {
        metadata: {
          name: 'old',
          labels: { 'failure-domain.beta.kubernetes.io/region': 'r', 'failure-domain.beta.kubernetes.io/zone': 'z' },
        },
      }),
      { region: 'r', zone: 'z', subzone: '' },
    );
    assert.deepEqual(podLocality(pod('c', '10.0.0.3'), undefined), { region: '', zone: '', subzone: '' });
  });
});

describe('KubeRegistrySnapshot', () => {
  it('serviceByHost, endpoints and instancesAt over its entries', () => {
    const k8s = svc('web', {
      clusterIP: '10.96.0.10',
      ports: [
        { name: 'http', port: 80, targetPort: 8080 },
        { name: 'grpc', port: 90 },
      ],
    });
    const service = convertService(k8s, DOMAIN);
    const endpoints = serviceEndpoints(
      service,
      k8s,
      [
        slice(
          'web-1',
          [ep('10.0.0.1', 'a')],
          [
            { name: 'http', port: 8080 },
            { name: 'grpc', port: 90 },
          ],
        ),
      ],
      lookup([pod('a', '10.0.0.1')]),
    );
    const snap = new KubeRegistrySnapshot(new Map([[service.hostname, { service, endpoints }]]));
    assert.equal(snap.serviceByHost('web.shop.svc.cluster.local'), service);
    assert.deepEqual(snap.services, [service]);
    assert.equal(snap.endpoints('web.shop.svc.cluster.local', 90).length, 1);
    assert.deepEqual(snap.endpoints('nope', 90), []);
    assert.deepEqual(
      snap.instancesAt('10.0.0.1').map((i) => `${i.service.hostname}:${i.servicePort.port}→${i.endpoint.port}`),
      ['web.shop.svc.cluster.local:80→8080', 'web.shop.svc.cluster.local:90→90'],
    );
  });
});
