/**
 * Against a real kube-apiserver + etcd (../shared/kube): Services, EndpointSlices,
 * Pods, Nodes and Namespaces created through the API give the registry snapshot istiod would
 * build — hostnames, ports and protocols, resolutions (ClusterIP, headless, ExternalName),
 * endpoints from several slices with the pods' labels, service accounts and the nodes' locality,
 * terminating endpoints left out — and change events name what moved: an endpoints-only change
 * names no service; deleting a Service removes it. No controller runs, so the test writes the
 * EndpointSlices and Pod statuses itself.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { KubeRegistry, type KubeRegistryChange, type KubeRegistryOptions } from '../../src/registry/kube/index.js';
import { silentLogger } from '../../src/util/log.js';
import { KUBE_SETUP_TIMEOUT_MS, kubeSkipReason, startKubeCluster, type KubeCluster } from '../support/kube.js';
import { CoreClient, readyStatus } from '../support/kube-objects.js';
import { waitFor } from '../support/wait.js';

const skip = kubeSkipReason();

let cluster: KubeCluster;
let k8s: CoreClient;
const registries: KubeRegistry[] = [];

async function startRegistry(opts: Partial<KubeRegistryOptions> = {}): Promise<{ registry: KubeRegistry; changes: KubeRegistryChange[] }> {
  const registry = new KubeRegistry({
    kubeConfig: cluster.kubeConfig,
    logger: silentLogger,
    backoff: { initialMs: 50, maxMs: 500 },
    ...opts,
  });
  registries.push(registry);
  const changes: KubeRegistryChange[] = [];
  registry.onChange((c) => changes.push(c));
  await registry.start();
  return { registry, changes };
}

function readyPod(
  ns: string,
  name: string,
  ip: string,
  o: { labels: Record<string, string>; sa: string; node: string; ports?: { name: string; containerPort: number }[] },
): Promise<unknown> {
  return k8s.pod(
    ns,
    {
      metadata: { name, labels: o.labels },
      spec: { nodeName: o.node, serviceAccountName: o.sa, containers: [{ name: 'app', image: 'example/app', ports: o.ports ?? [] }] },
    },
    readyStatus(ip),
  );
}

type Cond = { ready?: boolean; serving?: boolean; terminating?: boolean };

function endpoint(
  ip: string,
  pod: string,
  ns: string,
  conditions: Cond = { ready: true },
): { addresses: string[]; conditions: Cond; targetRef: { kind: string; name: string; namespace: string } } {
  return { addresses: [ip], conditions, targetRef: { kind: 'Pod', name: pod, namespace: ns } };
}

describe('Kubernetes service registry against a real API server', { skip }, () => {
  before(
    async () => {
      cluster = await startKubeCluster();
      k8s = new CoreClient(cluster.clientNode);
      await k8s.node('node-eu', {
        'topology.kubernetes.io/region': 'eu-west',
        'topology.kubernetes.io/zone': 'eu-west-1a',
        'topology.istio.io/subzone': 'rack-7',
      });
      await k8s.node('node-us', { 'topology.kubernetes.io/region': 'us-east', 'topology.kubernetes.io/zone': 'us-east-1b' });
    },
    { timeout: KUBE_SETUP_TIMEOUT_MS },
  );

  after(async () => {
    await Promise.all(registries.map((r) => r.stop()));
    await cluster?.stop();
  });

  it('Services, EndpointSlices, Pods and Nodes give the snapshot istiod would build', async () => {
    const ns = await cluster.namespace('shop');
    const web = `web.${ns}.svc.cluster.local`;
    await readyPod(ns, 'web-a', '10.1.0.1', {
      labels: { app: 'web', version: 'v1' },
      sa: 'web-sa',
      node: 'node-eu',
      ports: [{ name: 'admin', containerPort: 9901 }],
    });
    await readyPod(ns, 'web-b', '10.1.0.2', {
      labels: { app: 'web', version: 'v2' },
      sa: 'web-sa',
      node: 'node-us',
      ports: [{ name: 'admin', containerPort: 9901 }],
    });
    await readyPod(ns, 'web-old', '10.1.0.3', { labels: { app: 'web', version: 'v0' }, sa: 'web-sa', node: 'node-eu' });
    await readyPod(ns, 'db-0', '10.1.1.1', { labels: { app: 'db' }, sa: 'db', node: 'node-eu' });
    await k8s.service(ns, {
      metadata: { name: 'web', annotations: { 'networking.istio.io/exportTo': '.,istio-system' } },
      spec: {
        selector: { app: 'web' },
        ports: [
          { name: 'http', port: 80, targetPort: 8080 },
          { name: 'api', port: 9090, appProtocol: 'grpc' },
          { name: 'admin', port: 9000, targetPort: 'admin' },
          { name: 'metrics', port: 9100 },
        ],
      },
    });
    await k8s.service(ns, {
      metadata: { name: 'db' },
      spec: { clusterIP: 'None', selector: { app: 'db' }, ports: [{ name: 'tcp-pg', port: 5432 }] },
    });
    await k8s.service(ns, {
      metadata: { name: 'ext' },
      spec: { type: 'ExternalName', externalName: 'api.example.com', ports: [{ name: 'https', port: 443 }] },
    });
    const label = (svc: string): Record<string, string> => ({ 'kubernetes.io/service-name': svc });
    const webPorts = [
      { name: 'http', port: 8080 },
      { name: 'api', port: 9090 },
      { name: 'admin', port: 9901 },
      { name: 'metrics', port: 9100 },
    ];
    await k8s.slice(ns, {
      metadata: { name: 'web-1', labels: label('web') },
      addressType: 'IPv4',
      endpoints: [
        endpoint('10.1.0.1', 'web-a', ns),
        endpoint('10.1.0.3', 'web-old', ns, { ready: false, serving: true, terminating: true }),
      ],
      ports: webPorts,
    });
    await k8s.slice(ns, {
      metadata: { name: 'web-2', labels: label('web') },
      addressType: 'IPv4',
      endpoints: [endpoint('10.1.0.2', 'web-b', ns)],
      ports: webPorts,
    });
    await k8s.slice(ns, {
      metadata: { name: 'db-1', labels: label('db') },
      addressType: 'IPv4',
      endpoints: [endpoint('10.1.1.1', 'db-0', ns)],
      ports: [{ name: 'tcp-pg', port: 5432 }],
    });
    await k8s.slice(ns, {
      metadata: { name: 'db-6', labels: label('db') },
      addressType: 'IPv6',
      endpoints: [{ addresses: ['fd00::1:1'], conditions: { ready: true } }],
      ports: [{ name: 'tcp-pg', port: 5432 }],
    });

    const { registry } = await startRegistry();
    const snap = registry.snapshot();
    const svc = snap.serviceByHost(web);
    assert.ok(svc, 'web service');
    assert.equal(svc.resolution, 'STATIC');
    assert.match(svc.addresses[0] ?? '', /^10\.96\./);
    assert.deepEqual(svc.exportTo, [ns, 'istio-system']);
    assert.deepEqual(svc.source, { kind: 'Service', namespace: ns, name: 'web' });
    assert.deepEqual(svc.ports, [
      { name: 'http', port: 80, protocol: 'HTTP', targetPort: 8080 },
      { name: 'api', port: 9090, protocol: 'GRPC' },
      { name: 'admin', port: 9000, protocol: 'UNSUPPORTED', targetPortName: 'admin' },
      { name: 'metrics', port: 9100, protocol: 'UNSUPPORTED' },
    ]);
    const eu = { region: 'eu-west', zone: 'eu-west-1a', subzone: 'rack-7' };
    const us = { region: 'us-east', zone: 'us-east-1b', subzone: '' };
    // The API server's PodTopologyLabels admission copies the node's region/zone onto pods bound to it.
    const topo = (l: typeof eu): Record<string, string> => ({
      'topology.kubernetes.io/region': l.region,
      'topology.kubernetes.io/zone': l.zone,
    });
    assert.deepEqual(snap.endpoints(web, 80), [
      {
        address: '10.1.0.1',
        port: 8080,
        servicePort: 80,
        labels: { app: 'web', version: 'v1', ...topo(eu) },
        locality: eu,
        weight: 1,
        serviceAccount: 'web-sa',
        network: '',
        source: { kind: 'Pod', namespace: ns, name: 'web-a' },
      },
      {
        address: '10.1.0.2',
        port: 8080,
        servicePort: 80,
        labels: { app: 'web', version: 'v2', ...topo(us) },
        locality: us,
        weight: 1,
        serviceAccount: 'web-sa',
        network: '',
        source: { kind: 'Pod', namespace: ns, name: 'web-b' },
      },
    ]);
    assert.deepEqual(
      snap.endpoints(web, 9000).map((e) => `${e.address}:${e.port}`),
      ['10.1.0.1:9901', '10.1.0.2:9901'],
    );
    assert.deepEqual(
      snap.instancesAt('10.1.0.2').map((i) => i.servicePort.port),
      [80, 9090, 9000, 9100],
    );
    assert.deepEqual(snap.instancesAt('10.1.0.3'), [], 'terminating endpoint left out');

    const db = snap.serviceByHost(`db.${ns}.svc.cluster.local`);
    assert.equal(db?.resolution, 'NONE');
    assert.deepEqual(db?.ports, [{ name: 'tcp-pg', port: 5432, protocol: 'TCP' }]);
    assert.deepEqual(
      snap.endpoints(`db.${ns}.svc.cluster.local`, 5432).map((e) => [e.address, e.serviceAccount]),
      [
        ['10.1.1.1', 'db'],
        ['fd00::1:1', ''],
      ],
    );

    const ext = snap.serviceByHost(`ext.${ns}.svc.cluster.local`);
    assert.equal(ext?.resolution, 'DNS');
    assert.equal(ext?.meshExternal, true);
    assert.deepEqual(
      snap.endpoints(`ext.${ns}.svc.cluster.local`, 443).map((e) => e.address),
      ['api.example.com'],
    );
  });

  it('change events: endpoint-only changes name hosts and addresses but no service; deleting a Service removes it', async () => {
    const ns = await cluster.namespace('events');
    const host = `echo.${ns}.svc.cluster.local`;
    await readyPod(ns, 'echo-a', '10.2.0.1', { labels: { app: 'echo' }, sa: 'echo', node: 'node-eu' });
    await k8s.service(ns, { metadata: { name: 'echo' }, spec: { ports: [{ name: 'grpc', port: 7070 }] } });
    const { registry, changes } = await startRegistry();
    const from = changes.length;
    const since = (): KubeRegistryChange[] => changes.slice(from);

    // Endpoints appear: EDS-only.
    await k8s.slice(ns, {
      metadata: { name: 'echo-1', labels: { 'kubernetes.io/service-name': 'echo' } },
      addressType: 'IPv4',
      endpoints: [endpoint('10.2.0.1', 'echo-a', ns)],
      ports: [{ name: 'grpc', port: 7070 }],
    });
    await waitFor(() => registry.snapshot().endpoints(host, 7070).length === 1, { description: 'echo endpoint' });
    assert.deepEqual(
      since().map((c) => [[...c.services], [...c.endpoints], [...c.addresses]]),
      [[[], [host], ['10.2.0.1']]],
    );

    // A pod label change moves the endpoint's labels: EDS-only again.
    await k8s.core.patchNamespacedPod({
      namespace: ns,
      name: 'echo-a',
      body: [{ op: 'add', path: '/metadata/labels/version', value: 'v2' }],
    });
    await waitFor(() => registry.snapshot().endpoints(host, 7070)[0]?.labels.version === 'v2', { description: 'relabelled endpoint' });
    // A node's zone moves the endpoint's locality.
    await k8s.core.patchNode({
      name: 'node-eu',
      body: [{ op: 'replace', path: '/metadata/labels/topology.kubernetes.io~1zone', value: 'eu-west-1c' }],
    });
    await waitFor(() => registry.snapshot().endpoints(host, 7070)[0]?.locality.zone === 'eu-west-1c', { description: 'new locality' });
    assert.ok(
      since().every((c) => c.services.size === 0),
      'no service change for endpoint changes',
    );

    // The Service goes away.
    const before = registry.snapshot();
    await k8s.core.deleteNamespacedService({ namespace: ns, name: 'echo' });
    await waitFor(() => !registry.snapshot().serviceByHost(host), { description: 'service removed' });
    const last = since().at(-1);
    assert.deepEqual([...(last?.services ?? [])], [host]);
    assert.deepEqual([...(last?.addresses ?? [])], ['10.2.0.1']);
    assert.deepEqual(registry.snapshot().instancesAt('10.2.0.1'), []);
    assert.ok(before.serviceByHost(host), 'earlier snapshots are not changed');
  });

  it('discoverySelectors leave out services of namespaces they do not select', async () => {
    const on = await cluster.namespace('reg-on', { mesh: 'on' });
    const off = await cluster.namespace('reg-off');
    for (const ns of [on, off]) await k8s.service(ns, { metadata: { name: 'svc' }, spec: { ports: [{ name: 'http', port: 80 }] } });
    const { registry } = await startRegistry({ discoverySelectors: [{ matchLabels: { mesh: 'on' } }] });
    assert.ok(registry.snapshot().serviceByHost(`svc.${on}.svc.cluster.local`));
    assert.equal(registry.snapshot().serviceByHost(`svc.${off}.svc.cluster.local`), undefined);
    await k8s.core.patchNamespace({ name: off, body: [{ op: 'add', path: '/metadata/labels/mesh', value: 'on' }] });
    await waitFor(() => registry.snapshot().serviceByHost(`svc.${off}.svc.cluster.local`), {
      description: 'service of the newly selected namespace',
    });
  });
});
