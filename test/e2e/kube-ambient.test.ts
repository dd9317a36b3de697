/**
 * Against a real kube-apiserver + etcd (../shared/kube): the Kubernetes registry, asked to keep
 * ambient's state, publishes every pod with an IP (ready or not), the Services and the namespace
 * labels, and names what changed; the ambient index built from it gives the pods istiod's
 * workloads (HBONE in a namespace labelled `istio.io/dataplane-mode: ambient`, an unready pod
 * UNHEALTHY, the Service's ports on the pod's named container port) and follows a namespace
 * relabel. Then `meshpilot --kubeconfig` with PILOT_ENABLE_AMBIENT: a raw Delta ztunnel gets a
 * pod that is not ready (no endpoint, nothing for Envoy) as one Address, and its deletion as one
 * removal. No controller runs, so the test writes Pod statuses itself.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { TunnelProtocol, WorkloadStatus, type Workload } from '../../src/gen/workloadapi/workload_pb.js';
import { AmbientIndex } from '../../src/model/ambient/ambient-index.js';
import { EMPTY_AMBIENT_STATE } from '../../src/registry/ambient-model.js';
import { KubeRegistry, type KubeRegistryChange } from '../../src/registry/kube/index.js';
import { silentLogger } from '../../src/util/log.js';
import { snapshotOf } from '../support/config-fixture.js';
import { KUBE_SETUP_TIMEOUT_MS, kubeSkipReason, startKubeCluster, type KubeCluster } from '../support/kube.js';
import { CoreClient, readyStatus } from '../support/kube-objects.js';
import { waitFor } from '../support/wait.js';
import { startMeshpilot, type Meshpilot } from '../support/meshpilot-process.js';
import { DeltaStream, type DeltaReceived } from '../support/raw-delta-client.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';

const skip = kubeSkipReason();

let cluster: KubeCluster;
let k8s: CoreClient;
let registry: KubeRegistry | undefined;
let mp: Meshpilot | undefined;
let dir: TempDir | undefined;
let ztunnel: DeltaStream | undefined;

const ADDRESS = 'type.googleapis.com/istio.workload.Address';
const names = (r: DeltaReceived): string[] => r.resp.resources.map((x) => x.name).sort();

const indexOf = (r: KubeRegistry): AmbientIndex =>
  AmbientIndex.build(
    {
      config: snapshotOf([]),
      kube: r.snapshot().ambient ?? EMPTY_AMBIENT_STATE,
      domain: 'cluster.local',
      trustDomain: 'cluster.local',
      rootNamespace: 'istio-system',
      clusterId: 'Kubernetes',
      network: '',
    },
    () => [],
  );

function workload(index: AmbientIndex, ns: string, pod: string): Workload | undefined {
  const a = index.byName(`Kubernetes//Pod/${ns}/${pod}`)?.address;
  return a?.type.case === 'workload' ? a.type.value : undefined;
}

describe('Kubernetes registry: ambient state against a real API server', { skip }, () => {
  before(
    async () => {
      cluster = await startKubeCluster();
      k8s = new CoreClient(cluster.clientNode);
      await k8s.node('node-a', { 'topology.kubernetes.io/region': 'eu', 'topology.kubernetes.io/zone': 'eu-1' });
    },
    { timeout: KUBE_SETUP_TIMEOUT_MS },
  );

  after(async () => {
    ztunnel?.close();
    await mp?.stop();
    await dir?.remove();
    await registry?.stop();
    await cluster?.stop();
  });

  it('pods (ready or not), Services and namespace labels become workloads and services', async () => {
    const ns = await cluster.namespace('amb', { 'istio.io/dataplane-mode': 'ambient' });
    const spec = {
      nodeName: 'node-a',
      serviceAccountName: 'web-sa',
      containers: [{ name: 'app', image: 'example/app', ports: [{ name: 'http-web', containerPort: 8080 }] }],
    };
    await k8s.pod(ns, { metadata: { name: 'web-1', labels: { app: 'web' } }, spec }, readyStatus('10.1.0.1'));
    await k8s.pod(
      ns,
      { metadata: { name: 'web-2', labels: { app: 'web' } }, spec },
      { phase: 'Running', podIP: '10.1.0.2', conditions: [{ type: 'Ready', status: 'False' }] },
    );
    await k8s.service(ns, {
      metadata: { name: 'web' },
      spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 'http-web' }] },
    });

    const changes: KubeRegistryChange[] = [];
    registry = new KubeRegistry({
      kubeConfig: cluster.kubeConfig,
      logger: silentLogger,
      backoff: { initialMs: 50, maxMs: 500 },
      ambient: true,
    });
    registry.onChange((c) => changes.push(c));
    await registry.start();
    const r = registry;

    const index = await waitFor(
      () => {
        const i = indexOf(r);
        return workload(i, ns, 'web-1') && workload(i, ns, 'web-2') ? i : undefined;
      },
      { description: 'both pods in the ambient state' },
    );
    const ready = workload(index, ns, 'web-1');
    const unready = workload(index, ns, 'web-2');
    assert.equal(ready?.tunnelProtocol, TunnelProtocol.HBONE);
    assert.equal(ready?.status, WorkloadStatus.HEALTHY);
    assert.equal(unready?.status, WorkloadStatus.UNHEALTHY, 'an unready pod is a workload too');
    assert.equal(ready?.serviceAccount, 'web-sa');
    assert.equal(ready?.node, 'node-a');
    assert.equal(ready?.locality?.zone, 'eu-1');
    assert.deepEqual(
      ready?.services[`${ns}/web.${ns}.svc.cluster.local`]?.ports.map((p) => [p.servicePort, p.targetPort]),
      [[80, 8080]],
    );
    assert.ok(index.byName(`${ns}/web.${ns}.svc.cluster.local`), 'the Service');

    // Relabel the namespace out of ambient: the change names it, and the pods are TCP again.
    changes.length = 0;
    await k8s.core.patchNamespace({
      name: ns,
      body: [{ op: 'replace', path: '/metadata/labels/istio.io~1dataplane-mode', value: 'none' }],
    });
    await waitFor(() => changes.some((c) => c.ambient?.namespaces.has(ns)), { description: 'a change naming the relabelled namespace' });
    assert.equal(workload(indexOf(r), ns, 'web-1')?.tunnelProtocol, TunnelProtocol.NONE);

    // A pod deleted: the change names it and its workload is gone.
    changes.length = 0;
    await k8s.core.deleteNamespacedPod({ namespace: ns, name: 'web-2', gracePeriodSeconds: 0 });
    await waitFor(() => changes.some((c) => c.ambient?.pods.has(`${ns}/web-2`)), { description: 'a change naming the deleted pod' });
    assert.equal(workload(indexOf(r), ns, 'web-2'), undefined);
  });

  it('meshpilot --kubeconfig: a pod that serves no endpoint still reaches a ztunnel, alone, and its deletion removes it', async () => {
    const ns = await cluster.namespace('ambwds', { 'istio.io/dataplane-mode': 'ambient' });
    const spec = { nodeName: 'node-a', serviceAccountName: 'api', containers: [{ name: 'app', image: 'example/app' }] };
    await k8s.pod(ns, { metadata: { name: 'api-1', labels: { app: 'api' } }, spec }, readyStatus('10.2.0.1'));
    dir = tempDir('meshpilot-kube-ambient-');
    mp = await startMeshpilot({
      configDir: dir.path,
      args: ['--kubeconfig', cluster.kubeconfigPath],
      env: { PILOT_ENABLE_AMBIENT: 'true' },
      readyTimeoutMs: 60_000,
    });
    ztunnel = DeltaStream.open(mp.grpcAddr, { node: { id: 'ztunnel~10.0.0.9~ztunnel-k.istio-system~istio-system.svc.cluster.local' } });
    ztunnel.send({ typeUrl: ADDRESS });
    const first = await ztunnel.next(ADDRESS);
    assert.ok(names(first).includes(`Kubernetes//Pod/${ns}/api-1`), names(first).join(', '));
    ztunnel.ack(first.resp);

    // Not ready: no Service endpoint, no Envoy change; ztunnel still needs it (UNHEALTHY).
    await k8s.pod(
      ns,
      { metadata: { name: 'api-2', labels: { app: 'api' } }, spec },
      { phase: 'Pending', podIP: '10.2.0.2', conditions: [{ type: 'Ready', status: 'False' }] },
    );
    const added = await ztunnel.next(ADDRESS, 20_000);
    assert.deepEqual(names(added), [`Kubernetes//Pod/${ns}/api-2`]);
    assert.deepEqual(added.resp.removedResources, []);
    ztunnel.ack(added.resp);

    await k8s.core.deleteNamespacedPod({ namespace: ns, name: 'api-2', gracePeriodSeconds: 0 });
    const removed = await ztunnel.next(ADDRESS, 20_000);
    assert.deepEqual(names(removed), []);
    assert.deepEqual(removed.resp.removedResources, [`Kubernetes//Pod/${ns}/api-2`]);
  });
});
