/**
 * A Kubernetes Service selects WorkloadEntries, against a real kube-apiserver + etcd
 * (../shared/kube): a Service with selector app=vm and a WorkloadEntry labelled app=vm in its
 * namespace make the entry's address an endpoint of the Service in a raw ADS sidecar's EDS, at the
 * port the Service's targetPort names through the entry's `ports`; moving the entry's address
 * moves the endpoint, deleting the entry removes it. An entry of another namespace is never
 * selected. Then the EDS of testdata/kube-service-workload-entries/cluster/ (ports by name and
 * number, health, headless and other-namespace Services, hostname addresses) equals what the real
 * istiod served for it (istiod/eds.json, scripts/compare-kube-service-workload-entries.ts).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { applyClusterState, loadClusterState } from '../support/ambient/cluster-state.js';
import {
  captureVmEndpoints,
  KUBE_WLE_CLUSTER_DIR,
  KUBE_WLE_GOLDEN,
  kubeWleDigest,
} from '../support/kube-service-workload-entries/capture.js';
import { ClusterLoadAssignmentSchema } from '../../src/gen/envoy/config/endpoint/v3/endpoint_pb.js';
import { KUBE_SETUP_TIMEOUT_MS, kubeSkipReason, meshpilotServiceAccount, startKubeCluster, type KubeCluster } from '../support/kube.js';
import { CoreClient, IstioClient } from '../support/kube-objects.js';
import { endOfRunCheck, startMeshpilot, type Meshpilot } from '../support/meshpilot-process.js';
import { AdsStream } from '../support/raw-ads-client.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import { decodeResources, endpointAddresses, TYPE } from '../support/xds-resources.js';

const skip = kubeSkipReason();

let cluster: KubeCluster;
let mp: Meshpilot | undefined;
let dir: TempDir | undefined;
let ns: string;
let otherNs: string;
let systemNs: string;
const streams: AdsStream[] = [];

const workloadEntry = (namespace: string, name: string, address: string) => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'WorkloadEntry' as const,
  metadata: { name, namespace },
  spec: { address, labels: { app: 'vm' }, serviceAccount: 'vm-sa', ports: { web: 9080 } },
});

describe('a Kubernetes Service selects WorkloadEntries on a real Kubernetes API server', { skip }, () => {
  before(
    async () => {
      cluster = await startKubeCluster();
      // The golden scenario's fixed namespaces (shop, other) beside this test's own.
      await applyClusterState(cluster, loadClusterState(KUBE_WLE_CLUSTER_DIR));
      ns = await cluster.namespace('shop');
      otherNs = await cluster.namespace('elsewhere');
      systemNs = await cluster.namespace('mesh-system');
      const k8s = new CoreClient(cluster.clientNode);
      for (const namespace of [ns, otherNs])
        await k8s.service(namespace, {
          metadata: { name: 'vm', namespace },
          spec: { selector: { app: 'vm' }, ports: [{ name: 'http', port: 80, targetPort: 'web' }] },
        });
      dir = tempDir('meshpilot-kube-svc-wle-');
      const creds = await meshpilotServiceAccount(cluster, systemNs);
      mp = await startMeshpilot({
        configDir: dir.path,
        args: ['--kubeconfig', creds.kubeconfigPath],
        env: { POD_NAMESPACE: systemNs, POD_NAME: 'meshpilot-0' },
        readyTimeoutMs: 60_000,
      });
    },
    { timeout: KUBE_SETUP_TIMEOUT_MS },
  );

  after(async () => {
    for (const s of streams) s.close();
    const check = endOfRunCheck(mp);
    await mp?.stop();
    await dir?.remove();
    await cluster?.stop();
    check();
  });

  const tail = (): string => `\n--- meshpilot ---\n${mp?.tail(30) ?? ''}`;

  it("the entry's address is the Service's endpoint in EDS; an address update moves it, a delete removes it", async () => {
    assert.ok(mp);
    const istio = new IstioClient(cluster.clientNode);
    const observer = AdsStream.open(mp.grpcAddr, {
      node: { id: `sidecar~10.66.0.9~client.${ns}~${ns}.svc.cluster.local`, metadata: { NAMESPACE: ns } },
    });
    streams.push(observer);
    const served = new Map<string, readonly string[]>();
    observer.onResponse((r) => {
      for (const cla of decodeResources(r.resp, ClusterLoadAssignmentSchema)) served.set(cla.clusterName, endpointAddresses(cla));
      observer.ack(r.resp);
    });
    const here = `outbound|80||vm.${ns}.svc.cluster.local`;
    const there = `outbound|80||vm.${otherNs}.svc.cluster.local`;
    observer.subscribe(TYPE.EDS, [here, there]);
    const eds = (cluster: string): readonly string[] => served.get(cluster) ?? [];

    await istio.create(workloadEntry(ns, 'vm-1', '10.88.0.5'));
    await waitFor(() => eds(here).includes('10.88.0.5:9080'), {
      description: 'the WorkloadEntry in the Service EDS',
      timeoutMs: 20_000,
    }).catch((e: Error) => assert.fail(`${e.message} (EDS ${JSON.stringify([...served])})${tail()}`));
    assert.deepEqual(eds(here), ['10.88.0.5:9080']);
    assert.deepEqual(eds(there), [], "another namespace's Service does not select it");

    await istio.patch('WorkloadEntry', ns, 'vm-1', [{ op: 'replace', path: '/spec/address', value: '10.88.0.6' }]);
    await waitFor(() => JSON.stringify(eds(here)) === JSON.stringify(['10.88.0.6:9080']), {
      description: 'the endpoint moved to the new address',
      timeoutMs: 20_000,
    }).catch((e: Error) => assert.fail(`${e.message} (EDS ${JSON.stringify(eds(here))})${tail()}`));

    await istio.delete('WorkloadEntry', ns, 'vm-1');
    await waitFor(() => eds(here).length === 0, {
      description: 'the endpoint gone with the entry',
      timeoutMs: 20_000,
    }).catch((e: Error) => assert.fail(`${e.message} (EDS ${JSON.stringify(eds(here))})${tail()}`));
  });

  it("equals istiod's EDS for the golden scenario", async () => {
    assert.ok(mp);
    const golden = JSON.parse(readFileSync(KUBE_WLE_GOLDEN, 'utf8')) as { source: { scenarioSha256: string }; endpoints: unknown };
    assert.equal(
      golden.source.scenarioSha256,
      kubeWleDigest(),
      'the golden is stale: run scripts/compare-kube-service-workload-entries.ts',
    );
    let got: unknown;
    await waitFor(
      async () => {
        got = await captureVmEndpoints(mp!.grpcAddr);
        return JSON.stringify(got) === JSON.stringify(golden.endpoints);
      },
      { description: "meshpilot's EDS equal to istiod's", timeoutMs: 30_000 },
    ).catch(() => undefined);
    assert.deepEqual(got, golden.endpoints);
  });
});
