/**
 * WorkloadEntry auto-registration in cluster mode, against a real kube-apiserver + etcd
 * (../shared/kube): meshpilot runs as its RBAC manifest's ServiceAccount, so the rules it needs to
 * write entries are checked too. A proxy connecting with AUTO_REGISTER_GROUP gets a real
 * WorkloadEntry (annotations as istiod writes them, owned by its WorkloadGroup); its health reports
 * become the entry's status condition through the status subresource and decide whether another
 * sidecar's EDS holds it; a grace period after its stream ends the entry is deleted. Then
 * `meshctl x workload entry configure -k` reads the group and the ConfigMaps from the same server
 * and requests the VM's token.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { parse as parseYaml } from 'yaml';
import { ClusterLoadAssignmentSchema } from '../../src/gen/envoy/config/endpoint/v3/endpoint_pb.js';
import { run as meshctl } from '../../src/meshctl/test-io.js';
import { KUBE_SETUP_TIMEOUT_MS, kubeSkipReason, meshpilotServiceAccount, startKubeCluster, type KubeCluster } from '../support/kube.js';
import { CoreClient, IstioClient } from '../support/kube-objects.js';
import { endOfRunCheck, startMeshpilot, type Meshpilot } from '../support/meshpilot-process.js';
import { AdsStream } from '../support/raw-ads-client.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import { decodeResources, endpointAddresses, TYPE } from '../support/xds-resources.js';

const skip = kubeSkipReason();
const HEALTH = 'type.googleapis.com/istio.v1.HealthInformation';
const VM_IP = '10.88.0.5';

interface Entry {
  metadata: { annotations?: Record<string, string>; ownerReferences?: { kind: string; name: string; uid: string; controller?: boolean }[] };
  spec: { address?: string; serviceAccount?: string; labels?: Record<string, string> };
  status?: { conditions?: { type: string; status: string; message?: string }[] };
}

let cluster: KubeCluster;
let mp: Meshpilot | undefined;
let dir: TempDir | undefined;
let ns: string;
let systemNs: string;
let groupUid = '';
const streams: AdsStream[] = [];

describe('WorkloadEntry auto-registration on a real Kubernetes API server', { skip }, () => {
  before(
    async () => {
      cluster = await startKubeCluster();
      await cluster.applyIstioCrds();
      const k8s = new CoreClient(cluster.clientNode);
      const istio = new IstioClient(cluster.clientNode);
      ns = await cluster.namespace('vms');
      systemNs = await cluster.namespace('mesh-system');
      await k8s.core.createNamespacedConfigMap({
        namespace: systemNs,
        body: { metadata: { name: 'istio' }, data: { mesh: 'trustDomain: cluster.local\ndefaultConfig:\n  meshId: m1\n' } },
      });
      await istio.create({
        apiVersion: 'networking.istio.io/v1',
        kind: 'WorkloadGroup',
        metadata: { name: 'vm', namespace: ns },
        spec: {
          metadata: { labels: { app: 'vm' } },
          template: { serviceAccount: 'vm-sa', ports: { http: 8080 } },
          probe: { httpGet: { port: 8080 } },
        },
      });
      const api = cluster.clientNode.makeApiClient(CustomObjectsApi);
      const wg = (await api.getNamespacedCustomObject({
        group: 'networking.istio.io',
        version: 'v1',
        plural: 'workloadgroups',
        namespace: ns,
        name: 'vm',
      })) as { metadata: { uid: string } };
      groupUid = wg.metadata.uid;
      await istio.create({
        apiVersion: 'networking.istio.io/v1',
        kind: 'ServiceEntry',
        metadata: { name: 'vm', namespace: ns },
        spec: {
          hosts: [`vm.${ns}.svc.cluster.local`],
          location: 'MESH_INTERNAL',
          resolution: 'STATIC',
          ports: [{ name: 'http', number: 8080, protocol: 'HTTP' }],
          workloadSelector: { labels: { app: 'vm' } },
        },
      });
      dir = tempDir('meshpilot-kube-wle-');
      const creds = await meshpilotServiceAccount(cluster, systemNs);
      mp = await startMeshpilot({
        configDir: dir.path,
        args: ['--kubeconfig', creds.kubeconfigPath],
        env: {
          POD_NAMESPACE: systemNs,
          POD_NAME: 'meshpilot-0',
          PILOT_WORKLOAD_ENTRY_GRACE_PERIOD: '1s',
          // The VM here is a raw plaintext stream, which has no identity to check.
          ISTIO_WORKLOAD_ENTRY_VALIDATE_IDENTITY: 'false',
        },
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

  const entry = async (): Promise<Entry | undefined> => {
    const api = cluster.clientNode.makeApiClient(CustomObjectsApi);
    return (await api
      .getNamespacedCustomObject({
        group: 'networking.istio.io',
        version: 'v1',
        plural: 'workloadentries',
        namespace: ns,
        name: `vm-${VM_IP}`,
      })
      .catch(() => undefined)) as Entry | undefined;
  };
  const tail = (): string => `\n--- meshpilot ---\n${mp?.tail(30) ?? ''}`;

  it('creates, health-checks and deletes the entry through the API server, and EDS follows', async () => {
    assert.ok(mp);
    const observer = AdsStream.open(mp.grpcAddr, {
      node: { id: `sidecar~10.66.0.9~observer.${ns}~${ns}.svc.cluster.local`, metadata: { NAMESPACE: ns } },
    });
    streams.push(observer);
    let served: readonly string[] = [];
    observer.onResponse((r) => {
      for (const cla of decodeResources(r.resp, ClusterLoadAssignmentSchema)) served = endpointAddresses(cla);
      observer.ack(r.resp);
    });
    observer.subscribe(TYPE.EDS, [`outbound|8080||vm.${ns}.svc.cluster.local`]);

    const vm = AdsStream.open(mp.grpcAddr, {
      node: {
        id: `sidecar~${VM_IP}~vm-1.${ns}~${ns}.svc.cluster.local`,
        metadata: { NAMESPACE: ns, AUTO_REGISTER_GROUP: 'vm', PROXY_CONFIG: { readinessProbe: { httpGet: { port: 8080 } } } },
      },
    });
    streams.push(vm);
    vm.subscribe(TYPE.CDS, []);
    await vm.next(TYPE.CDS, 30_000).catch((e: Error) => assert.fail(e.message + tail()));
    const created = await entry();
    assert.ok(created, `WorkloadEntry vm-${VM_IP} exists${tail()}`);
    const a = created.metadata.annotations ?? {};
    assert.equal(a['istio.io/autoRegistrationGroup'], 'vm');
    assert.equal(a['istio.io/workloadController'], 'meshpilot-0');
    assert.ok(a['istio.io/connectedAt']);
    assert.equal(a['proxy.istio.io/health-checks-enabled'], 'true');
    assert.deepEqual(created.metadata.ownerReferences, [
      { apiVersion: 'networking.istio.io/v1', kind: 'WorkloadGroup', name: 'vm', uid: groupUid, controller: true },
    ]);
    assert.equal(created.spec.address, VM_IP);
    assert.equal(created.spec.serviceAccount, 'vm-sa');
    assert.deepEqual(served, [], 'not served before its first health report');

    vm.send({ typeUrl: HEALTH });
    await waitFor(async () => (await entry())?.status?.conditions?.find((c) => c.type === 'Healthy')?.status === 'True', {
      description: 'Healthy=True in the entry status',
      timeoutMs: 15_000,
    }).catch((e: Error) => assert.fail(e.message + tail()));
    await waitFor(() => served.includes(`${VM_IP}:8080`), { description: 'the VM in EDS once healthy', timeoutMs: 15_000 });

    vm.send({ typeUrl: HEALTH, errorDetail: { code: 13, message: 'connection refused' } });
    await waitFor(() => !served.includes(`${VM_IP}:8080`), { description: 'the VM out of EDS once unhealthy', timeoutMs: 15_000 });
    const sick = await entry();
    assert.deepEqual(
      sick?.status?.conditions?.map((c) => [c.type, c.status, c.message]),
      [['Healthy', 'False', 'connection refused']],
    );

    vm.close();
    await waitFor(async () => (await entry()) === undefined, {
      description: 'the entry deleted after the grace period',
      timeoutMs: 20_000,
    }).catch((e: Error) => assert.fail(e.message + tail()));
    assert.ok(mp.logs().some((l) => l.raw.includes('WorkloadEntry marked disconnected')));
  });

  it('meshctl x workload entry configure -k reads the group and ConfigMaps and requests the token', async () => {
    const k8s = new CoreClient(cluster.clientNode);
    await k8s.core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'vm-sa' } } });
    await k8s.core.createNamespacedConfigMap({
      namespace: systemNs,
      body: {
        metadata: { name: 'istio-sidecar-injector' },
        data: { values: JSON.stringify({ global: { multiCluster: { clusterName: 'c9' } } }) },
      },
    });
    // meshpilot's root-cert publisher has written the namespace's istio-ca-root-cert: the VM gets that one.
    const root = await waitFor(
      async () =>
        (await k8s.core.readNamespacedConfigMap({ namespace: ns, name: 'istio-ca-root-cert' }).catch(() => undefined))?.data?.[
          'root-cert.pem'
        ],
      { description: 'istio-ca-root-cert in the namespace', timeoutMs: 15_000 },
    );
    assert.ok(dir);
    const out = path.join(dir.path, 'vm-files');
    const r = await meshctl([
      'x', 'workload', 'entry', 'configure', '-k', cluster.kubeconfigPath, '-i', systemNs, '-n', ns, '--name', 'vm', '-o', out, '--autoregister',
    ]); // prettier-ignore
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /a security token for namespace "vms-\w+" and service account "vm-sa" has been generated/);
    assert.equal(readFileSync(path.join(out, 'root-cert.pem'), 'utf8'), root);
    const token = readFileSync(path.join(out, 'istio-token'), 'utf8');
    const claims = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { aud: string[]; sub: string };
    assert.deepEqual(claims.aud, ['istio-ca']);
    assert.equal(claims.sub, `system:serviceaccount:${ns}:vm-sa`);
    const mesh = parseYaml(readFileSync(path.join(out, 'mesh.yaml'), 'utf8')) as {
      defaultConfig: { meshId: string; proxyMetadata: Record<string, string> };
    };
    assert.equal(mesh.defaultConfig.meshId, 'm1');
    assert.equal(mesh.defaultConfig.proxyMetadata.ISTIO_META_CLUSTER_ID, 'c9', 'the cluster ID from the injector values');
    assert.equal(mesh.defaultConfig.proxyMetadata.ISTIO_META_AUTO_REGISTER_GROUP, 'vm');
    assert.match(r.stderr, /use --ingressIP/, 'no east-west gateway: hosts is empty, with a warning');
  });
});
