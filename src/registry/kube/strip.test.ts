import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1EndpointSlice, V1Node, V1Pod, V1Service } from '@kubernetes/client-node';
import { ambientEndpointSlice, ambientPod, ambientService } from './ambient-translate.js';
import { stripEndpointSlice, stripNode, stripPod, stripService } from './strip.js';
import { convertService, podWorkload, serviceEndpoints, type PodLookup } from './translate.js';

const managedFields = [{ manager: 'kubectl', operation: 'Update', fieldsType: 'FieldsV1', fieldsV1: { 'f:spec': {} } }];
const lastApplied = { 'kubectl.kubernetes.io/last-applied-configuration': '{"a whole copy":"of the object"}' };

// Objects as the API server sends them: every field the translations read, and many they do not.
const service: V1Service = {
  metadata: {
    name: 'web',
    namespace: 'shop',
    uid: 'u1',
    resourceVersion: '7',
    creationTimestamp: new Date('2026-01-02T03:04:05Z'),
    labels: { app: 'web' },
    annotations: { ...lastApplied, 'networking.istio.io/exportTo': '.', 'ambient.istio.io/waypoint': 'wp' },
    managedFields,
  },
  spec: {
    type: 'ClusterIP',
    clusterIP: '10.96.0.10',
    clusterIPs: ['10.96.0.10'],
    ipFamilies: ['IPv4'],
    selector: { app: 'web' },
    ports: [{ name: 'http', port: 80, targetPort: 'http-alt', protocol: 'TCP' }],
  },
  status: { loadBalancer: {} },
};

const node: V1Node = {
  metadata: {
    name: 'n1',
    labels: { 'topology.kubernetes.io/region': 'r1', 'topology.kubernetes.io/zone': 'z1' },
    annotations: { 'node.alpha.kubernetes.io/ttl': '0' },
    managedFields,
  },
  status: { capacity: { cpu: '2' }, images: [{ names: ['big/image:1'], sizeBytes: 1e9 }], conditions: [{ type: 'Ready', status: 'True' }] },
};

const pod: V1Pod = {
  metadata: {
    name: 'web-7d9c-abcde',
    generateName: 'web-7d9c-',
    namespace: 'shop',
    uid: 'p1',
    resourceVersion: '9',
    labels: { app: 'web', 'topology.istio.io/network': 'net1' },
    annotations: { ...lastApplied, 'proxy.istio.io/overrides': '{"containers":[]}', 'ambient.istio.io/redirection': 'enabled' },
    ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-7d9c', uid: 'rs', controller: true }],
    managedFields,
  },
  spec: {
    nodeName: 'n1',
    serviceAccountName: 'web-sa',
    hostNetwork: false,
    containers: [{ name: 'app', image: 'web:1', env: [{ name: 'A', value: 'b' }], ports: [{ name: 'http-alt', containerPort: 8081 }] }],
    volumes: [{ name: 'v', emptyDir: {} }],
  },
  status: {
    phase: 'Running',
    podIP: '10.1.0.5',
    podIPs: [{ ip: '10.1.0.5' }],
    conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: new Date(0) }],
    containerStatuses: [{ name: 'app', image: 'web:1', imageID: 'x', ready: true, restartCount: 0 }],
  },
};

const slice: V1EndpointSlice = {
  metadata: {
    name: 'web-abc',
    namespace: 'shop',
    labels: { 'kubernetes.io/service-name': 'web' },
    annotations: { 'endpoints.kubernetes.io/last-change-trigger-time': '2026-01-01T00:00:00Z' },
    ownerReferences: [{ apiVersion: 'v1', kind: 'Service', name: 'web', uid: 'u1' }],
    managedFields,
  },
  addressType: 'IPv4',
  endpoints: [
    { addresses: ['10.1.0.5'], conditions: { ready: true }, targetRef: { kind: 'Pod', name: 'web-7d9c-abcde', namespace: 'shop' } },
    { addresses: ['10.1.0.6'], conditions: { ready: false } },
  ],
  ports: [{ name: 'http', port: 8081, protocol: 'TCP' }],
};

const lookup = (p: V1Pod, n: V1Node): PodLookup => ({
  podByName: (ns, name) => (p.metadata?.namespace === ns && p.metadata.name === name ? p : undefined),
  podsByIp: (ip) => (p.status?.podIP === ip ? [p] : []),
  node: (name) => (n.metadata?.name === name ? n : undefined),
});

const copy = <T>(o: T): T => structuredClone(o);

/** The full object without the annotations stripping drops on purpose (ambient carries annotations as they are). */
function withoutDroppedAnnotations<T extends V1Service | V1Pod>(o: T): T {
  const c = copy(o);
  delete c.metadata?.annotations?.['kubectl.kubernetes.io/last-applied-configuration'];
  delete c.metadata?.annotations?.['proxy.istio.io/overrides'];
  return c;
}

describe('registry object stripping', () => {
  it('translates a stripped Service, Pod, Node and EndpointSlice exactly as the full objects', () => {
    const [s, p, n, sl] = [stripService(copy(service)), stripPod(copy(pod)), stripNode(copy(node)), stripEndpointSlice(copy(slice))];
    assert.deepEqual(convertService(s, 'cluster.local'), convertService(service, 'cluster.local'));
    assert.deepEqual(ambientService(s), ambientService(withoutDroppedAnnotations(service)));
    assert.deepEqual(podWorkload(p, n), podWorkload(pod, node));
    assert.deepEqual(ambientPod(p, n), ambientPod(withoutDroppedAnnotations(pod), node));
    assert.deepEqual(ambientEndpointSlice(sl), ambientEndpointSlice(slice));
    assert.deepEqual(
      serviceEndpoints(convertService(s, 'cluster.local'), s, [sl], lookup(p, n)),
      serviceEndpoints(convertService(service, 'cluster.local'), service, [slice], lookup(pod, node)),
    );
  });

  it('drops what no translation reads', () => {
    const s = stripService(copy(service));
    const p = stripPod(copy(pod));
    const text = JSON.stringify([s, p, stripNode(copy(node)), stripEndpointSlice(copy(slice))]);
    for (const gone of [
      'managedFields',
      'last-applied-configuration',
      'proxy.istio.io/overrides',
      'loadBalancer',
      'volumes',
      'env',
      'image',
      'containerStatuses',
      'capacity',
      'last-change-trigger-time',
    ])
      assert.ok(!text.includes(gone), `${gone} should be dropped`);
    assert.equal(s.metadata?.annotations?.['networking.istio.io/exportTo'], '.');
    assert.equal(p.metadata?.ownerReferences?.[0]?.name, 'web-7d9c');
    assert.deepEqual(p.spec?.containers, [{ name: 'app', ports: [{ name: 'http-alt', containerPort: 8081 }] }]);
  });
});
