/**
 * Against a real kube-apiserver + etcd (../shared/kube): the Kubernetes registry, asked to keep
 * ambient's state, publishes every pod with an IP (ready or not), the Services and the namespace
 * labels, and names what changed; the ambient index built from it gives the pods istiod's
 * workloads (HBONE in a namespace labelled `istio.io/dataplane-mode: ambient`, an unready pod
 * UNHEALTHY, the Service's ports on the pod's named container port) and follows a namespace
 * relabel. No controller runs, so the test writes Pod statuses itself.
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

const skip = kubeSkipReason();

let cluster: KubeCluster;
let k8s: CoreClient;
let registry: KubeRegistry | undefined;

const indexOf = (r: KubeRegistry): AmbientIndex =>
  AmbientIndex.build(
    {
      config: snapshotOf([]),
      kube: r.snapshot().ambient ?? EMPTY_AMBIENT_STATE,
      domain: 'cluster.local',
      trustDomain: 'cluster.local',
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
      k8s = new CoreClient(cluster.kubeConfig);
      await k8s.node('node-a', { 'topology.kubernetes.io/region': 'eu', 'topology.kubernetes.io/zone': 'eu-1' });
    },
    { timeout: KUBE_SETUP_TIMEOUT_MS },
  );

  after(async () => {
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
});
