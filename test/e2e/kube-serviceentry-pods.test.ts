/**
 * Against a real kube-apiserver + etcd (../shared/kube): Services and
 * ServiceEntries coexist, and a ServiceEntry's `workloadSelector` selects the Pods of its namespace
 * beside its WorkloadEntries. A ServiceEntry (STATIC, selector app=db), a WorkloadEntry and Pods
 * created through the API give a raw ADS client the endpoints of `outbound|5432||db.example.com`;
 * a third Pod becoming ready arrives as an EDS-only push; deleting a Pod removes it. No kubelet
 * runs here, so the test writes the Pod statuses itself.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { ClusterSchema } from '../../src/gen/envoy/config/cluster/v3/cluster_pb.js';
import { startMeshpilot, type Meshpilot } from '../support/meshpilot-process.js';
import { KUBE_SETUP_TIMEOUT_MS, kubeSkipReason, meshpilotServiceAccount, startKubeCluster, type KubeCluster } from '../support/kube.js';
import { CoreClient, IstioClient, readyStatus } from '../support/kube-objects.js';
import { AdsStream, proxylessAdsNode, type Received } from '../support/raw-ads-client.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { addressesByCluster, decodeResources, TYPE } from '../support/xds-resources.js';

const skip = kubeSkipReason();
const SE_CLUSTER = 'outbound|5432||db.example.com';
const WEB_CLUSTER = (ns: string): string => `outbound|80||web.${ns}.svc.cluster.local`;

let cluster: KubeCluster;
let k8s: CoreClient;
let istio: IstioClient;
let mp: Meshpilot | undefined;
let dir: TempDir | undefined;
let ns: string;
let otherNs: string;
let stream: AdsStream | undefined;

function withLogs(msg: string): string {
  return `${msg}\n--- meshpilot stderr tail ---\n${mp?.tail(30) ?? '(not running)'}`;
}

/** The next response of `type` whose content satisfies `pred` (each is ACKed). */
const until = (s: AdsStream, type: string, pred: (r: Received) => boolean, what: string): Promise<Received> =>
  s.nextMatching(type, pred, { describe: () => withLogs(`timed out waiting for ${what}`) });

const addressesOf = (r: Received): Record<string, string[]> => addressesByCluster(r.resp);

function pod(name: string, labels: Record<string, string>): V1Pod {
  return { metadata: { name, labels }, spec: { serviceAccountName: 'db', containers: [{ name: 'app', image: 'example/db' }] } };
}

describe('ServiceEntry workloadSelector selects Pods (real Kubernetes API server)', { skip }, () => {
  before(
    async () => {
      cluster = await startKubeCluster();
      await cluster.applyIstioCrds();
      k8s = new CoreClient(cluster.clientNode);
      istio = new IstioClient(cluster.clientNode);
      ns = await cluster.namespace('data');
      otherNs = await cluster.namespace('elsewhere');
      const systemNs = await cluster.namespace('mesh-system');
      await k8s.pod(ns, pod('db-1', { app: 'db' }), readyStatus('10.30.0.1'));
      await k8s.pod(ns, pod('db-2', { app: 'db' }), readyStatus('10.30.0.2'));
      // Not selected: other labels, another namespace, not ready.
      await k8s.pod(ns, pod('cache-1', { app: 'cache' }), readyStatus('10.30.0.7'));
      await k8s.pod(otherNs, pod('db-elsewhere', { app: 'db' }), readyStatus('10.30.0.8'));
      await k8s.pod(ns, pod('db-starting', { app: 'db' }), {
        ...readyStatus('10.30.0.9'),
        conditions: [{ type: 'Ready', status: 'False' }],
      });
      // A Kubernetes Service beside the ServiceEntry (they coexist in the one registry).
      await k8s.service(ns, { metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80 }] } });
      await istio.create({
        apiVersion: 'networking.istio.io/v1',
        kind: 'ServiceEntry',
        metadata: { name: 'db', namespace: ns },
        spec: {
          hosts: ['db.example.com'],
          location: 'MESH_INTERNAL',
          resolution: 'STATIC',
          ports: [{ number: 5432, name: 'tcp-pg', protocol: 'TCP' }],
          workloadSelector: { labels: { app: 'db' } },
        },
      });
      await istio.create({
        apiVersion: 'networking.istio.io/v1',
        kind: 'WorkloadEntry',
        metadata: { name: 'db-vm', namespace: ns },
        spec: { address: '10.31.0.1', labels: { app: 'db' }, serviceAccount: 'db' },
      });
      dir = tempDir('meshpilot-kube-se-pods-');
      // As the RBAC manifest's istiod ServiceAccount, not cluster-admin.
      const creds = await meshpilotServiceAccount(cluster, systemNs);
      mp = await startMeshpilot({
        configDir: dir.path,
        args: ['--kubeconfig', creds.kubeconfigPath],
        env: { POD_NAMESPACE: systemNs },
        readyTimeoutMs: 60_000,
      });
    },
    { timeout: KUBE_SETUP_TIMEOUT_MS },
  );

  after(async () => {
    stream?.close();
    const crashed = mp !== undefined && !mp.alive();
    const tail = mp?.tail(30);
    await mp?.stop();
    await dir?.remove();
    await cluster?.stop();
    if (crashed) assert.fail(`meshpilot exited during the tests\n${tail}`);
  });

  it("the ServiceEntry's endpoints are its WorkloadEntry and the ready Pods of its namespace with its labels", async () => {
    assert.ok(mp);
    stream = AdsStream.open(mp.grpcAddr, { node: proxylessAdsNode('client-1', ns, '10.30.9.9') });
    stream.subscribe(TYPE.CDS, [SE_CLUSTER, WEB_CLUSTER(ns)]);
    await until(stream, TYPE.CDS, (r) => decodeResources(r.resp, ClusterSchema).length === 2, 'the ServiceEntry and Service clusters');
    stream.subscribe(TYPE.EDS, [SE_CLUSTER]);
    const eds = await until(stream, TYPE.EDS, (r) => r.resp.resources.length === 1, "the ServiceEntry's endpoints");
    assert.deepEqual(addressesOf(eds), { [SE_CLUSTER]: ['10.30.0.1:5432', '10.30.0.2:5432', '10.31.0.1:5432'] }, withLogs('endpoints'));
  });

  it('a third selected Pod becoming ready is an EDS-only push', async () => {
    const s = stream;
    assert.ok(s && mp);
    const pushesBefore = s.history.length;
    const since = mp.mark();
    await k8s.pod(ns, pod('db-3', { app: 'db' }), readyStatus('10.30.0.3'));
    await until(s, TYPE.EDS, (r) => addressesOf(r)[SE_CLUSTER]?.includes('10.30.0.3:5432') === true, "the new Pod's endpoint");
    const types = s.history.slice(pushesBefore).map((r) => r.resp.typeUrl);
    assert.deepEqual([...new Set(types)], [TYPE.EDS], 'only EDS was pushed');
    const push = await mp.waitForLog((l) => l.json?.msg === 'push' && JSON.stringify(l.json.configs).includes('db.example.com'), {
      since,
      description: 'the push of the Pod',
    });
    assert.equal(push.json?.full, false, withLogs('the Pod change took the EDS-only path'));
    assert.deepEqual(push.json?.configs, [`Endpoints/${ns}/db.example.com`]);
  });

  it('deleting a selected Pod removes its endpoint', async () => {
    const s = stream;
    assert.ok(s);
    await k8s.core.deleteNamespacedPod({ namespace: ns, name: 'db-1', gracePeriodSeconds: 0 });
    const eds = await until(s, TYPE.EDS, (r) => addressesOf(r)[SE_CLUSTER]?.includes('10.30.0.1:5432') === false, 'the deleted Pod gone');
    assert.deepEqual(addressesOf(eds), { [SE_CLUSTER]: ['10.30.0.2:5432', '10.30.0.3:5432', '10.31.0.1:5432'] });
  });

  it('relabelling a Pod out of the selector removes it', async () => {
    const s = stream;
    assert.ok(s);
    await k8s.core.patchNamespacedPod({
      namespace: ns,
      name: 'db-2',
      body: [{ op: 'replace', path: '/metadata/labels/app', value: 'retired' }],
    });
    const eds = await until(
      s,
      TYPE.EDS,
      (r) => addressesOf(r)[SE_CLUSTER]?.includes('10.30.0.2:5432') === false,
      'the relabelled Pod gone',
    );
    assert.deepEqual(addressesOf(eds), { [SE_CLUSTER]: ['10.30.0.3:5432', '10.31.0.1:5432'] });
  });
});
