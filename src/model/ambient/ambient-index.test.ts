import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { snapshotOf } from '../../../test/support/config-fixture.js';
import {
  AppProtocol,
  IPFamilies,
  NetworkMode,
  TunnelProtocol,
  WorkloadStatus,
  WorkloadType,
  type Address,
  type Service,
  type Workload,
} from '../../gen/workloadapi/workload_pb.js';
import type { AmbientKubeService, AmbientKubeState, AmbientPod } from '../../registry/ambient-model.js';
import { ambientEndpointSlice, ambientPod, ambientService } from '../../registry/kube/ambient-translate.js';
import { AmbientIndex, type AmbientInputs } from './ambient-index.js';

const NODE: V1Node = {
  metadata: { name: 'node-1', labels: { 'topology.kubernetes.io/region': 'eu', 'topology.kubernetes.io/zone': 'eu-1' } },
};

function pod(name: string, ip: string, extra: { labels?: Record<string, string>; ready?: boolean; namespace?: string } = {}): V1Pod {
  return {
    metadata: {
      name,
      namespace: extra.namespace ?? 'shop',
      generateName: 'cart-7d9f8b-',
      labels: { app: 'cart', version: 'v2', 'pod-template-hash': '7d9f8b', ...extra.labels },
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'cart-7d9f8b', uid: 'u1', controller: true }],
    },
    spec: {
      serviceAccountName: 'cart-sa',
      nodeName: 'node-1',
      containers: [{ name: 'app', ports: [{ name: 'http-web', containerPort: 8080 }] }],
    },
    status: {
      phase: 'Running',
      podIP: ip,
      conditions: [{ type: 'Ready', status: extra.ready === false ? 'False' : 'True' }],
    },
  };
}

const cartService = ambientService({
  metadata: { name: 'cart', namespace: 'shop', labels: {} },
  spec: {
    clusterIP: '10.96.0.20',
    clusterIPs: ['10.96.0.20'],
    ipFamilies: ['IPv4'],
    selector: { app: 'cart' },
    ports: [
      { name: 'http', port: 80, targetPort: 'http-web', protocol: 'TCP' },
      { name: 'grpc-api', port: 9000, targetPort: 9000, protocol: 'TCP' },
    ],
  },
});

function kubeState(
  pods: readonly V1Pod[],
  services: readonly AmbientKubeService[],
  namespaces: Record<string, Record<string, string>>,
): AmbientKubeState {
  const p = new Map<string, AmbientPod>();
  for (const v of pods) {
    const a = ambientPod(v, NODE);
    if (a) p.set(`${a.namespace}/${a.name}`, a);
  }
  return {
    pods: p,
    services: new Map(services.map((s) => [`${s.namespace}/${s.name}`, s])),
    namespaces: new Map(Object.entries(namespaces)),
  };
}

function inputs(config: AmbientInputs['config'], kube: AmbientKubeState, trustDomain = 'cluster.local'): AmbientInputs {
  return { config, kube, domain: 'cluster.local', trustDomain, rootNamespace: 'istio-system', clusterId: 'Kubernetes', network: '' };
}

const noPolicies = (): string[] => [];

function workload(index: AmbientIndex, name: string): Workload {
  const a: Address | undefined = index.byName(name)?.address;
  assert.equal(
    a?.type.case,
    'workload',
    `no workload ${name}; have ${index
      .addresses()
      .map((x) => x.name)
      .join(', ')}`,
  );
  return a.type.value as Workload;
}

function service(index: AmbientIndex, name: string): Service {
  const a = index.byName(name)?.address;
  assert.equal(
    a?.type.case,
    'service',
    `no service ${name}; have ${index
      .addresses()
      .map((x) => x.name)
      .join(', ')}`,
  );
  return a.type.value as Service;
}

const AMBIENT_NS = { shop: { 'istio.io/dataplane-mode': 'ambient' } };

describe('ambient index: pods and Kubernetes Services as istiod builds them', () => {
  const index = AmbientIndex.build(
    inputs(snapshotOf([]), kubeState([pod('cart-7d9f8b-abcde', '10.1.0.5')], [cartService], AMBIENT_NS)),
    noPolicies,
  );

  it('names a pod by its uid and fills the Workload fields', () => {
    const w = workload(index, 'Kubernetes//Pod/shop/cart-7d9f8b-abcde');
    assert.equal(w.uid, 'Kubernetes//Pod/shop/cart-7d9f8b-abcde');
    assert.equal(w.name, 'cart-7d9f8b-abcde');
    assert.equal(w.namespace, 'shop');
    assert.deepEqual(w.addresses, [Uint8Array.of(10, 1, 0, 5)]);
    assert.equal(w.tunnelProtocol, TunnelProtocol.HBONE);
    assert.equal(w.serviceAccount, 'cart-sa');
    assert.equal(w.node, 'node-1');
    assert.equal(w.workloadName, 'cart', 'the Deployment behind the ReplicaSet');
    assert.equal(w.workloadType, WorkloadType.POD);
    assert.equal(w.canonicalName, 'cart');
    assert.equal(w.canonicalRevision, 'v2');
    assert.equal(w.trustDomain, '', 'the default trust domain is left out');
    assert.equal(w.clusterId, 'Kubernetes');
    assert.equal(w.status, WorkloadStatus.HEALTHY);
    assert.equal(w.networkMode, NetworkMode.STANDARD);
    assert.deepEqual({ region: w.locality?.region, zone: w.locality?.zone }, { region: 'eu', zone: 'eu-1' });
    const ports = w.services['shop/cart.shop.svc.cluster.local']?.ports.map((p) => [p.servicePort, p.targetPort]);
    assert.deepEqual(ports, [
      [80, 8080],
      [9000, 9000],
    ]);
  });

  it('names a Service namespace/hostname with its VIPs, ports and protocols', () => {
    const s = service(index, 'shop/cart.shop.svc.cluster.local');
    assert.equal(s.hostname, 'cart.shop.svc.cluster.local');
    assert.deepEqual(
      s.addresses.map((a) => [a.network, [...a.address]]),
      [['', [10, 96, 0, 20]]],
    );
    assert.deepEqual(
      s.ports.map((p) => [p.servicePort, p.targetPort, p.appProtocol]),
      [
        [80, 0, AppProtocol.HTTP11],
        [9000, 9000, AppProtocol.GRPC],
      ],
    );
    assert.equal(s.canonical, true);
    assert.equal(s.ipFamilies, IPFamilies.IPV4_ONLY);
    assert.equal(s.waypoint, undefined);
  });

  it('lists every address once, in name order', () => {
    const names = index.addresses().map((a) => a.name);
    assert.deepEqual(names, ['Kubernetes//Pod/shop/cart-7d9f8b-abcde', 'shop/cart.shop.svc.cluster.local']);
  });
});

describe('ambient index: mode, health and trust domain', () => {
  const pods = [
    pod('ready', '10.1.0.1'),
    pod('unready', '10.1.0.2', { ready: false }),
    pod('opted-out', '10.1.0.3', { labels: { 'istio.io/dataplane-mode': 'none' } }),
    pod('elsewhere', '10.2.0.1', { namespace: 'legacy' }),
    pod('own-label', '10.2.0.2', { namespace: 'legacy', labels: { 'istio.io/dataplane-mode': 'ambient' } }),
  ];
  const index = AmbientIndex.build(inputs(snapshotOf([]), kubeState(pods, [], AMBIENT_NS), 'example.org'), noPolicies);
  const tunnel = (ns: string, name: string): TunnelProtocol => workload(index, `Kubernetes//Pod/${ns}/${name}`).tunnelProtocol;

  it('HBONE for pods of an ambient namespace or with the ambient label, TCP when opted out or outside', () => {
    assert.equal(tunnel('shop', 'ready'), TunnelProtocol.HBONE);
    assert.equal(tunnel('shop', 'opted-out'), TunnelProtocol.NONE);
    assert.equal(tunnel('legacy', 'elsewhere'), TunnelProtocol.NONE);
    assert.equal(tunnel('legacy', 'own-label'), TunnelProtocol.HBONE);
  });

  it('an unready pod is UNHEALTHY; a custom trust domain is sent', () => {
    assert.equal(workload(index, 'Kubernetes//Pod/shop/unready').status, WorkloadStatus.UNHEALTHY);
    assert.equal(workload(index, 'Kubernetes//Pod/shop/ready').trustDomain, 'example.org');
  });

  it('a pod without an IP or that finished is no workload', () => {
    assert.equal(ambientPod({ ...pod('pending', ''), status: { phase: 'Pending' } }, NODE), undefined);
    assert.equal(ambientPod({ ...pod('done', '10.9.9.9'), status: { phase: 'Succeeded', podIP: '10.9.9.9' } }, NODE), undefined);
  });
});

const WAYPOINT = {
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'Gateway',
  metadata: { name: 'waypoint', namespace: 'shop', labels: { 'istio.io/waypoint-for': 'all' } },
  spec: { gatewayClassName: 'istio-waypoint', listeners: [{ name: 'mesh', port: 15008, protocol: 'HBONE' }] },
};

describe('ambient index: waypoints', () => {
  it('binds services and workloads to the waypoint their namespace uses, only while its Gateway exists', () => {
    const ns = { shop: { 'istio.io/dataplane-mode': 'ambient', 'istio.io/use-waypoint': 'waypoint' } };
    const kube = kubeState([pod('cart-1', '10.1.0.5')], [cartService], ns);
    const bound = AmbientIndex.build(inputs(snapshotOf([WAYPOINT]), kube), noPolicies);
    const s = service(bound, 'shop/cart.shop.svc.cluster.local');
    assert.equal(s.waypoint?.destination.case, 'hostname');
    assert.deepEqual(s.waypoint?.destination.value, {
      ...s.waypoint?.destination.value,
      namespace: 'shop',
      hostname: 'waypoint.shop.svc.cluster.local',
    });
    assert.equal(s.waypoint?.hboneMtlsPort, 15008);
    assert.equal(workload(bound, 'Kubernetes//Pod/shop/cart-1').waypoint?.hboneMtlsPort, 15008);

    const missing = AmbientIndex.build(inputs(snapshotOf([]), kube), noPolicies);
    assert.equal(service(missing, 'shop/cart.shop.svc.cluster.local').waypoint, undefined);
  });

  it("a waypoint's own pods get no waypoint (they are its instances)", () => {
    const ns = { shop: { 'istio.io/use-waypoint': 'waypoint' } };
    const instance = pod('waypoint-5f-xyz', '10.1.0.9', { labels: { 'gateway.networking.k8s.io/gateway-name': 'waypoint' } });
    const index = AmbientIndex.build(inputs(snapshotOf([WAYPOINT]), kubeState([instance, pod('cart-1', '10.1.0.5')], [], ns)), noPolicies);
    assert.equal(workload(index, 'Kubernetes//Pod/shop/waypoint-5f-xyz').waypoint, undefined);
    assert.ok(workload(index, 'Kubernetes//Pod/shop/cart-1').waypoint);
  });

  it('a service waypoint (the default traffic type) is not a workload waypoint; `none` opts out', () => {
    const serviceOnly = { ...WAYPOINT, metadata: { name: 'waypoint', namespace: 'shop' } };
    const ns = { shop: { 'istio.io/use-waypoint': 'waypoint' } };
    const optedOut = ambientService({
      metadata: { name: 'direct', namespace: 'shop', labels: { 'istio.io/use-waypoint': 'none' } },
      spec: { clusterIP: '10.96.0.30', ports: [{ port: 80 }] },
    });
    const index = AmbientIndex.build(
      inputs(snapshotOf([serviceOnly]), kubeState([pod('cart-1', '10.1.0.5')], [cartService, optedOut], ns)),
      noPolicies,
    );
    assert.ok(service(index, 'shop/cart.shop.svc.cluster.local').waypoint);
    assert.equal(workload(index, 'Kubernetes//Pod/shop/cart-1').waypoint, undefined);
    assert.equal(service(index, 'shop/direct.shop.svc.cluster.local').waypoint, undefined);
  });
});

const SERVICE_ENTRY = {
  apiVersion: 'networking.istio.io/v1',
  kind: 'ServiceEntry',
  metadata: { name: 'vms', namespace: 'shop' },
  spec: {
    hosts: ['vms.example.com'],
    addresses: ['240.0.0.10'],
    ports: [{ number: 80, name: 'http', protocol: 'HTTP', targetPort: 8080 }],
    resolution: 'STATIC',
    location: 'MESH_INTERNAL',
    workloadSelector: { labels: { app: 'vm' } },
  },
};
const WORKLOAD_ENTRY = {
  apiVersion: 'networking.istio.io/v1',
  kind: 'WorkloadEntry',
  metadata: { name: 'vm-1', namespace: 'shop', labels: { 'istio.io/dataplane-mode': 'ambient' } },
  spec: { address: '192.168.1.7', labels: { app: 'vm' }, serviceAccount: 'vm-sa', ports: { http: 9090 }, locality: 'us/us-1', weight: 3 },
};
const INLINE = {
  apiVersion: 'networking.istio.io/v1',
  kind: 'ServiceEntry',
  metadata: { name: 'db', namespace: 'data' },
  spec: {
    hosts: ['db.internal'],
    ports: [{ number: 5432, name: 'tcp', protocol: 'TCP' }],
    resolution: 'STATIC',
    endpoints: [{ address: '10.5.0.1' }, { address: '10.5.0.2', labels: { 'istio.io/dataplane-mode': 'ambient' } }],
  },
};

describe('ambient index: ServiceEntries and WorkloadEntries (no Kubernetes)', () => {
  const index = AmbientIndex.build(inputs(snapshotOf([SERVICE_ENTRY, WORKLOAD_ENTRY, INLINE]), kubeState([], [], {})), noPolicies);

  it('a WorkloadEntry is a workload with its labels, ports per service, locality and capacity', () => {
    const w = workload(index, 'Kubernetes/networking.istio.io/WorkloadEntry/shop/vm-1');
    assert.deepEqual(w.addresses, [Uint8Array.of(192, 168, 1, 7)]);
    assert.equal(w.tunnelProtocol, TunnelProtocol.HBONE);
    assert.equal(w.serviceAccount, 'vm-sa');
    assert.equal(w.canonicalName, 'vm');
    assert.equal(w.canonicalRevision, 'latest');
    assert.equal(w.capacity, 3);
    assert.deepEqual({ region: w.locality?.region, zone: w.locality?.zone }, { region: 'us', zone: 'us-1' });
    assert.deepEqual(
      w.services['shop/vms.example.com']?.ports.map((p) => [p.servicePort, p.targetPort]),
      [[80, 9090]],
      'the entry port named like the service port wins over targetPort',
    );
  });

  it("metadata labels win over spec labels (istiod's ConvertClientWorkloadEntry): selection, canonical name, policies", () => {
    const entry = {
      ...WORKLOAD_ENTRY,
      metadata: { name: 'vm-9', namespace: 'shop', labels: { 'istio.io/dataplane-mode': 'ambient', app: 'vm' } },
      spec: { address: '192.168.1.9', labels: { app: 'legacy', 'service.istio.io/canonical-name': 'vm-canon' } },
    };
    const asked: Record<string, string>[] = [];
    const idx = AmbientIndex.build(inputs(snapshotOf([SERVICE_ENTRY, entry]), kubeState([], [], {})), (_ns, labels) => {
      asked.push({ ...labels });
      return [];
    });
    const w = workload(idx, 'Kubernetes/networking.istio.io/WorkloadEntry/shop/vm-9');
    assert.deepEqual(Object.keys(w.services), ['shop/vms.example.com'], 'selected by the metadata app: vm, not the spec app: legacy');
    assert.equal(w.canonicalName, 'vm-canon', 'a spec label the metadata does not set still counts');
    assert.ok(asked.some((l) => l.app === 'vm' && l['service.istio.io/canonical-name'] === 'vm-canon'));
  });

  it('a ServiceEntry is a service per host; its inline endpoints are workloads of all its hosts', () => {
    const s = service(index, 'shop/vms.example.com');
    assert.deepEqual(
      s.ports.map((p) => [p.servicePort, p.targetPort, p.appProtocol]),
      [[80, 8080, AppProtocol.HTTP11]],
    );
    assert.deepEqual([...(s.addresses[0]?.address ?? [])], [240, 0, 0, 10]);
    assert.equal(s.canonical, true, 'the only (oldest) ServiceEntry of its host is canonical');
    const first = workload(index, 'Kubernetes/networking.istio.io/ServiceEntry/data/db/10.5.0.1');
    const second = workload(index, 'Kubernetes/networking.istio.io/ServiceEntry/data/db/10.5.0.2');
    assert.deepEqual(Object.keys(first.services), ['data/db.internal']);
    assert.equal(first.tunnelProtocol, TunnelProtocol.NONE);
    assert.equal(second.tunnelProtocol, TunnelProtocol.HBONE);
  });
});

describe('ambient index: EndpointSlices of a Service without selector', () => {
  it('each endpoint no pod backs is a host-network workload of the Service, joined by port name', () => {
    const db = ambientService({
      metadata: { name: 'db', namespace: 'shop' },
      spec: { clusterIP: '10.96.0.40', ports: [{ name: 'pg', port: 5432, targetPort: 5432 }] },
    });
    const slice = ambientEndpointSlice({
      addressType: 'IPv4',
      metadata: { name: 'db-1', namespace: 'shop', labels: { 'kubernetes.io/service-name': 'db' } },
      ports: [{ name: 'pg', port: 15432, protocol: 'TCP' }],
      endpoints: [
        { addresses: ['10.10.0.5'] },
        { addresses: ['10.10.0.6'], conditions: { ready: false } },
        { addresses: ['10.1.0.9'], targetRef: { kind: 'Pod', name: 'p', namespace: 'shop' } },
      ],
    });
    assert.ok(slice);
    const kube = { ...kubeState([], [db], {}), endpointSlices: new Map([['shop/db-1', slice]]) };
    const index = AmbientIndex.build(inputs(snapshotOf([]), kube), noPolicies);
    const w = workload(index, 'Kubernetes/discovery.k8s.io/EndpointSlice/shop/db-1/10.10.0.5');
    assert.deepEqual(w.addresses, [Uint8Array.of(10, 10, 0, 5)]);
    assert.equal(w.networkMode, NetworkMode.HOST_NETWORK);
    assert.equal(w.serviceAccount, '');
    assert.deepEqual(
      w.services['shop/db.shop.svc.cluster.local']?.ports.map((p) => [p.servicePort, p.targetPort]),
      [[5432, 15432]],
    );
    assert.equal(workload(index, 'Kubernetes/discovery.k8s.io/EndpointSlice/shop/db-1/10.10.0.6').status, WorkloadStatus.UNHEALTHY);
    assert.equal(index.byName('Kubernetes/discovery.k8s.io/EndpointSlice/shop/db-1/10.1.0.9'), undefined, 'a pod is a workload of its own');
  });
});

describe('ambient index: istio-cni captures pods only', () => {
  it("a namespace's ambient label makes its pods HBONE, not its WorkloadEntries (their own label does)", () => {
    const unlabelled = { ...WORKLOAD_ENTRY, metadata: { name: 'vm-2', namespace: 'shop' } };
    const kube = kubeState([pod('cart-1', '10.1.0.5')], [], AMBIENT_NS);
    const index = AmbientIndex.build(inputs(snapshotOf([SERVICE_ENTRY, WORKLOAD_ENTRY, unlabelled]), kube), noPolicies);
    assert.equal(workload(index, 'Kubernetes//Pod/shop/cart-1').tunnelProtocol, TunnelProtocol.HBONE);
    assert.equal(workload(index, 'Kubernetes/networking.istio.io/WorkloadEntry/shop/vm-2').tunnelProtocol, TunnelProtocol.NONE);
    assert.equal(workload(index, 'Kubernetes/networking.istio.io/WorkloadEntry/shop/vm-1').tunnelProtocol, TunnelProtocol.HBONE);
  });
});

describe('ambient index: incremental', () => {
  const config = snapshotOf([SERVICE_ENTRY, WORKLOAD_ENTRY]);
  const pods = [pod('cart-1', '10.1.0.5'), pod('cart-2', '10.1.0.6')];
  const base = kubeState(pods, [cartService], AMBIENT_NS);
  const first = AmbientIndex.build(inputs(config, base), noPolicies);

  it('one pod added: one workload derived, every other address the same object', () => {
    const added = ambientPod(pod('cart-3', '10.1.0.7'), NODE);
    assert.ok(added);
    const kube = { ...base, pods: new Map([...base.pods, ['shop/cart-3', added]]) };
    const next = AmbientIndex.build(inputs(config, kube), noPolicies, first);
    assert.deepEqual(next.rebuild, { full: false, services: 0, workloads: 1 });
    assert.equal(next.addresses().length, first.addresses().length + 1);
    for (const a of first.addresses()) assert.equal(next.byName(a.name)?.address, a.address, a.name);
    assert.ok(next.byName('Kubernetes//Pod/shop/cart-3'));
  });

  it('one pod deleted: its name is gone', () => {
    const kube = { ...base, pods: new Map([...base.pods].filter(([k]) => k !== 'shop/cart-2')) };
    const next = AmbientIndex.build(inputs(config, kube), noPolicies, first);
    assert.equal(next.byName('Kubernetes//Pod/shop/cart-2'), undefined);
    assert.equal(next.rebuild.workloads, 1);
  });

  it('a Service change re-derives that service and its namespace workloads, nothing else', () => {
    const changed = { ...cartService, ports: [cartService.ports[0]!] };
    const kube = { ...base, services: new Map([['shop/cart', changed]]) };
    const next = AmbientIndex.build(inputs(config, kube), noPolicies, first);
    assert.equal(next.rebuild.full, false);
    assert.equal(next.rebuild.services, 1);
    assert.deepEqual(
      workload(next, 'Kubernetes//Pod/shop/cart-1').services['shop/cart.shop.svc.cluster.local']?.ports.map((p) => p.servicePort),
      [80],
    );
  });

  it('a waypoint Gateway change rebuilds it whole, with the same result as a fresh build', () => {
    const withWaypoint = snapshotOf([SERVICE_ENTRY, WORKLOAD_ENTRY, WAYPOINT]);
    const next = AmbientIndex.build(inputs(withWaypoint, base), noPolicies, first);
    assert.equal(next.rebuild.full, true);
    const fresh = AmbientIndex.build(inputs(withWaypoint, base), noPolicies);
    assert.deepEqual(
      next.addresses().map((a) => a.name),
      fresh.addresses().map((a) => a.name),
    );
  });
});
