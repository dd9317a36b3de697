/**
 * Multicluster against two real kube-apiservers (../shared/kube): meshpilot runs against cluster 1
 * (`--clusterID c1`, as the RBAC manifest's ServiceAccount); `meshctl create-remote-secret` run on
 * cluster 2 (with the token controller, which fills the reader account's token Secret) writes the
 * Secret that, created in cluster 1's system namespace while meshpilot runs, adds cluster 2 as a
 * remote cluster. A Service `web` with EndpointSlices in both clusters then has the endpoints of
 * both at a sidecar (a raw ADS client), each carrying its cluster id; a Service with a ClusterIP of
 * its own in each cluster is captured by each cluster's sidecar at its own cluster's; removing the Secret removes
 * cluster 2's endpoints; with cluster 2's apiserver stopped, cluster 1's changes keep flowing; and a
 * meshpilot started while cluster 2 is unreachable becomes ready after PILOT_REMOTE_CLUSTER_TIMEOUT.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { V1EndpointSlice, V1Pod, V1Secret } from '@kubernetes/client-node';
import { parse, parseAllDocuments } from 'yaml';
import { ClusterLoadAssignmentSchema } from '../../src/gen/envoy/config/endpoint/v3/endpoint_pb.js';
import { ListenerSchema } from '../../src/gen/envoy/config/listener/v3/listener_pb.js';
import { RouteConfigurationSchema } from '../../src/gen/envoy/config/route/v3/route_pb.js';
import { run as runMeshctl } from '../../src/meshctl/test-io.js';
import { createKeyAndCsr } from '../../src/agent/csr.js';
import { callCreateCertificate, type CsrCallResult } from '../../src/security/csr/test-client.js';
import { X509Certificate } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { freePorts } from '../support/ports.js';
import { endOfRunCheck, startMeshpilot, type Meshpilot } from '../support/meshpilot-process.js';
import { KUBE_SETUP_TIMEOUT_MS, kubeSkipReason, meshpilotServiceAccount, startKubeCluster, type KubeCluster } from '../support/kube.js';
import { CoreClient, readyStatus } from '../support/kube-objects.js';
import { AdsStream, type Received } from '../support/raw-ads-client.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import { addressesByCluster, decodeResources, TYPE } from '../support/xds-resources.js';

const skip = kubeSkipReason();

let c1: KubeCluster;
let c2: KubeCluster;
let k1: CoreClient;
let k2: CoreClient;
let mp: Meshpilot | undefined;
let dir: TempDir | undefined;
let ns: string;
let systemNs: string;
let meshpilotKubeconfig: string;
let remoteSecret: V1Secret;
let stream: AdsStream | undefined;
let secureAddr: string;
const extra: Meshpilot[] = [];

const host = (): string => `web.${ns}.svc.cluster.local`;
const cla = (): string => `outbound|80||${host()}`;

function withLogs(msg: string, p: Meshpilot | undefined = mp): string {
  return `${msg}\n--- meshpilot stderr tail ---\n${p?.tail(40) ?? '(not running)'}`;
}

/** The next EDS response whose addresses for `web` are exactly `want` (sorted). */
function untilEndpoints(want: readonly string[], what: string, timeoutMs = 20_000): Promise<Received> {
  assert.ok(stream);
  const key = [...want].sort().join(',');
  return stream.nextMatching(TYPE.EDS, (r) => (addressesByCluster(r.resp)[cla()] ?? []).join(',') === key, {
    timeoutMs,
    describe: () => withLogs(`timed out waiting for ${what}: endpoints ${key}`),
  });
}

/** `address → cluster id` from the istio workload label istiod puts on each lb endpoint (its last field). */
function endpointClusters(r: Received): Record<string, string> {
  const out: Record<string, string> = {};
  for (const assignment of decodeResources(r.resp, ClusterLoadAssignmentSchema)) {
    for (const group of assignment.endpoints) {
      for (const e of group.lbEndpoints) {
        const a = e.hostIdentifier.case === 'endpoint' ? e.hostIdentifier.value.address?.address : undefined;
        const workload = e.metadata?.filterMetadata.istio?.workload;
        if (a?.case === 'socketAddress' && typeof workload === 'string') out[a.value.address] = workload.split(';').at(-1) ?? '';
      }
    }
  }
  return out;
}

/** The Secret of create-remote-secret's output (one document, then istioctl's trailing `---`). */
function secretOf(out: string): V1Secret {
  const docs = parseAllDocuments(out)
    .map((d) => d.toJS() as V1Secret | null)
    .filter((d) => d !== null);
  assert.equal(docs.length, 1, 'one Secret');
  return docs[0] as V1Secret;
}

async function getText(addr: string, path: string): Promise<{ status: number; body: string }> {
  const res = await fetch(`http://${addr}${path}`);
  return { status: res.status, body: await res.text() };
}

async function clusterz(p: Meshpilot | undefined = mp): Promise<{ id: string; secretName: string; syncStatus: string }[]> {
  assert.ok(p);
  const res = await getText(p.httpAddr, '/debug/clusterz');
  assert.equal(res.status, 200, res.body);
  return JSON.parse(res.body) as { id: string; secretName: string; syncStatus: string }[];
}

async function metric(p: Meshpilot | undefined, line: RegExp): Promise<string | undefined> {
  assert.ok(p);
  return (await getText(p.monitoringAddr, '/metrics')).body.split('\n').find((l) => line.test(l));
}

const slice = (name: string, pods: readonly [string, string][]): V1EndpointSlice => ({
  metadata: { name, labels: { 'kubernetes.io/service-name': 'web' } },
  addressType: 'IPv4',
  endpoints: pods.map(([pod, ip]) => ({
    addresses: [ip],
    conditions: { ready: true },
    targetRef: { kind: 'Pod', name: pod, namespace: ns },
  })),
  ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
});

const webPod = (name: string): V1Pod => ({
  metadata: { name, labels: { app: 'web' } },
  spec: { serviceAccountName: 'web', containers: [{ name: 'app', image: 'example/web' }] },
});

async function createSecret(): Promise<number> {
  const started = performance.now();
  await k1.core.createNamespacedSecret({ namespace: systemNs, body: remoteSecret });
  return started;
}

describe('multicluster: a remote cluster from an istio/multiCluster Secret', { skip }, () => {
  before(
    async () => {
      // Cluster 2 runs the token controller: create-remote-secret waits for it to fill the token Secret.
      [c1, c2] = await Promise.all([startKubeCluster(), startKubeCluster({ controllerManager: true })]);
      await c1.applyIstioCrds();
      k1 = new CoreClient(c1.clientNode);
      k2 = new CoreClient(c2.clientNode);
      ns = await c1.namespace('mcshop');
      systemNs = await c1.namespace('mcsys');
      // The same namespace in cluster 2: the Service there has the same hostname.
      await k2.core.createNamespace({ body: { metadata: { name: ns } } });
      await k1.pod(ns, webPod('web-1'), readyStatus('10.1.0.1'));
      await k1.service(ns, {
        metadata: { name: 'web' },
        spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
      });
      await k1.slice(ns, slice('web-c1', [['web-1', '10.1.0.1']]));
      await k2.pod(ns, webPod('web-2'), readyStatus('10.2.0.1'));
      // No selector in cluster 2: its endpointslice controller would otherwise write a slice of its own.
      await k2.service(ns, { metadata: { name: 'web' }, spec: { ports: [{ name: 'http', port: 80, targetPort: 8080 }] } });
      await k2.slice(ns, slice('web-c2', [['web-2', '10.2.0.1']]));
      meshpilotKubeconfig = (await meshpilotServiceAccount(c1, systemNs)).kubeconfigPath;
      await k2.core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'web' } } });
      dir = tempDir('meshpilot-multicluster-');
      secureAddr = `127.0.0.1:${(await freePorts(1))[0] ?? 0}`;
      mp = await startMeshpilot({
        configDir: dir.path,
        args: [
          '--kubeconfig',
          meshpilotKubeconfig,
          '--clusterID',
          'c1',
          '--secureGRPCAddr',
          secureAddr,
          '--caDir',
          path.join(dir.path, 'ca'),
        ],
        // The CSR client dials istiod.istio-system.svc (istio-agent's default CA name).
        env: { POD_NAMESPACE: systemNs, ISTIOD_CUSTOM_HOST: 'istiod.istio-system.svc' },
        readyTimeoutMs: 60_000,
      });
      stream = AdsStream.open(mp.grpcAddr, {
        node: {
          id: `sidecar~10.1.9.9~client-1.${ns}~${ns}.svc.cluster.local`,
          metadata: { NAMESPACE: ns, CLUSTER_ID: 'c1', ISTIO_VERSION: '1.28.0' },
        },
      });
    },
    { timeout: KUBE_SETUP_TIMEOUT_MS },
  );

  after(async () => {
    stream?.close();
    const check = endOfRunCheck(mp);
    await Promise.all([mp?.stop(), ...extra.map((p) => p.stop())]);
    await dir?.remove();
    await Promise.all([c1?.stop(), c2?.stop()]);
    check();
  });

  it("meshctl create-remote-secret on cluster 2: istioctl's Secret, with the reader account it created", async () => {
    const res = await runMeshctl(['create-remote-secret', '--kubeconfig', c2.kubeconfigPath, '-i', systemNs, '--name', 'c2']);
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stderr, /^warn: server in Kubeconfig is https:\/\/127\.0\.0\.1:/, 'the loopback server is warned about, as istioctl');
    assert.ok(res.stdout.startsWith('# This file is autogenerated, do not edit.\n') && res.stdout.endsWith('---\n'), res.stdout);
    remoteSecret = secretOf(res.stdout);
    assert.equal(remoteSecret.metadata?.name, 'istio-remote-secret-c2');
    assert.equal(remoteSecret.metadata?.namespace, systemNs);
    assert.deepEqual(remoteSecret.metadata?.labels, { 'istio/multiCluster': 'true' });
    assert.deepEqual(remoteSecret.metadata?.annotations, { 'networking.istio.io/cluster': 'c2' });
    const kubeconfig = parse(remoteSecret.stringData?.c2 ?? '') as {
      clusters: { cluster: { server: string } }[];
      users: { user: { token?: string } }[];
      'current-context': string;
    };
    assert.equal(kubeconfig.clusters[0]?.cluster.server, c2.url);
    assert.equal(kubeconfig['current-context'], 'c2');
    assert.ok((kubeconfig.users[0]?.user.token ?? '').length > 20, 'a bearer token');
    // It created the reader account (from the charts) and its token Secret in cluster 2.
    await k2.core.readNamespacedServiceAccount({ namespace: systemNs, name: 'istio-reader-service-account' });
    const token = await k2.core.readNamespacedSecret({
      namespace: systemNs,
      name: 'istio-reader-service-account-istio-remote-secret-token',
    });
    assert.equal(token.type, 'kubernetes.io/service-account-token');
    // Run again, it reuses them.
    const again = await runMeshctl(['create-remote-secret', '--kubeconfig', c2.kubeconfigPath, '-i', systemNs, '--name', 'c2']);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(secretOf(again.stdout).stringData?.c2, remoteSecret.stringData?.c2);
  });

  it("without the Secret: cluster 1's endpoints only; clusterz lists the local cluster", async () => {
    assert.ok(stream && mp);
    stream.subscribe(TYPE.EDS, [cla()]);
    const eds = await untilEndpoints(['10.1.0.1:8080'], "cluster 1's endpoint");
    assert.deepEqual(endpointClusters(eds), { '10.1.0.1': 'c1' }, 'the local cluster id is on the endpoint');
    assert.deepEqual(await clusterz(), [{ id: 'c1', secretName: '', syncStatus: 'synced' }]);
    assert.match((await metric(mp, /^istiod_managed_clusters\{cluster_type="remote"\}/)) ?? '', / 0$/);
    assert.match((await metric(mp, /^istiod_managed_clusters\{cluster_type="local"\}/)) ?? '', / 1$/);
  });

  it('the Secret created at run time: the endpoints of both clusters, each with its cluster id', async (t) => {
    const started = await createSecret();
    const eds = await untilEndpoints(['10.1.0.1:8080', '10.2.0.1:8080'], 'the endpoints of both clusters');
    t.diagnostic(
      `remote secret added → both clusters' endpoints at the sidecar in ${Math.round(eds.at - (performance.timeOrigin + started))} ms`,
    );
    assert.deepEqual(endpointClusters(eds), { '10.1.0.1': 'c1', '10.2.0.1': 'c2' });
    assert.deepEqual(await clusterz(), [
      { id: 'c1', secretName: '', syncStatus: 'synced' },
      { id: 'c2', secretName: `${systemNs}/istio-remote-secret-c2`, syncStatus: 'synced' },
    ]);
    assert.match((await metric(mp, /^istiod_managed_clusters\{cluster_type="remote"\}/)) ?? '', / 1$/);
    assert.match(
      (await metric(mp, /^istiod_remote_cluster_sync_status\{cluster="c2",cluster_type="remote",status="synced"\}/)) ?? '',
      / 1$/,
    );
  });

  it("a Service with a ClusterIP of its own in each cluster: each cluster's sidecar captures and routes by its own cluster's", async () => {
    assert.ok(mp);
    const sidecar = (cluster: string, ip: string): AdsStream =>
      AdsStream.open(mp!.grpcAddr, {
        node: {
          id: `sidecar~${ip}~client-${cluster}.${ns}~${ns}.svc.cluster.local`,
          metadata: { NAMESPACE: ns, CLUSTER_ID: cluster, ISTIO_VERSION: '1.28.0' },
        },
      });
    const c1Sidecar = sidecar('c1', '10.1.9.8');
    const c2Sidecar = sidecar('c2', '10.2.9.8');
    try {
      /** The next LDS of `s` whose `*_5432` listeners are exactly `want`. */
      const untilDbListeners = (s: AdsStream, want: string[], what: string): Promise<Received> =>
        s.nextMatching(
          TYPE.LDS,
          (r) =>
            JSON.stringify(
              decodeResources(r.resp, ListenerSchema)
                .map((l) => l.name)
                .filter((n) => n.endsWith('_5432')),
            ) === JSON.stringify(want),
          { timeoutMs: 20_000, describe: () => withLogs(`timed out waiting for ${what}: listeners ${want.join(', ')}`) },
        );
      /** web's virtual host domains that are addresses, in route 80 of `s`'s next RDS response. */
      const webVips = async (s: AdsStream): Promise<string[]> => {
        const r = await s.nextMatching(TYPE.RDS, () => true, { describe: () => withLogs('timed out waiting for route 80') });
        const vh = decodeResources(r.resp, RouteConfigurationSchema)
          .flatMap((rc) => rc.virtualHosts)
          .find((v) => v.name === `${host()}:80`);
        return (vh?.domains ?? []).filter((d) => /^\d/.test(d));
      };
      for (const [client, ip] of [
        [k1, '10.96.100.70'],
        [k2, '10.96.200.70'],
      ] as const)
        await client.service(ns, { metadata: { name: 'db' }, spec: { clusterIP: ip, ports: [{ name: 'tcp-db', port: 5432 }] } });
      c1Sidecar.subscribe(TYPE.LDS, []);
      c2Sidecar.subscribe(TYPE.LDS, []);
      await untilDbListeners(c1Sidecar, ['10.96.100.70_5432'], "cluster 1's sidecar: cluster 1's ClusterIP");
      await untilDbListeners(c2Sidecar, ['10.96.200.70_5432'], "cluster 2's sidecar: cluster 2's ClusterIP");
      // web's ClusterIPs, as each API server allocated them.
      const [web1, web2] = await Promise.all(
        [k1, k2].map(async (k) => (await k.core.readNamespacedService({ namespace: ns, name: 'web' })).spec?.clusterIP),
      );
      c1Sidecar.subscribe(TYPE.RDS, ['80']);
      c2Sidecar.subscribe(TYPE.RDS, ['80']);
      assert.deepEqual(await webVips(c1Sidecar), [web1], "cluster 1's sidecar: web's cluster 1 ClusterIP among its domains");
      assert.deepEqual(await webVips(c2Sidecar), [web2], "cluster 2's sidecar: web's cluster 2 ClusterIP among its domains");
      // Gone from cluster 2: its sidecar falls back to the first cluster's address, as istiod's DefaultAddress.
      await k2.core.deleteNamespacedService({ namespace: ns, name: 'db' });
      await untilDbListeners(c2Sidecar, ['10.96.100.70_5432'], "cluster 2's sidecar after db left cluster 2");
    } finally {
      c1Sidecar.close();
      c2Sidecar.close();
      await k1.core.deleteNamespacedService({ namespace: ns, name: 'db' });
    }
  });

  it("a workload of cluster 2 gets its certificate: its token is reviewed by cluster 2's API server", async () => {
    assert.ok(dir);
    const rootPem = await readFile(path.join(dir.path, 'ca', 'root-cert.pem'), 'utf8');
    const tr = await k2.core.createNamespacedServiceAccountToken({
      namespace: ns,
      name: 'web',
      body: { spec: { audiences: ['istio-ca'], expirationSeconds: 600 } },
    });
    const token = tr.status?.token ?? '';
    const csr = async (clusterId: string): Promise<CsrCallResult> =>
      callCreateCertificate({
        address: secureAddr,
        rootPem,
        csrPem: (await createKeyAndCsr('ECDSA', `spiffe://cluster.local/ns/${ns}/sa/web`)).csrPem,
        token,
        clusterId,
        ttlSeconds: 3600,
      });
    const ok = await csr('c2');
    assert.ok(ok.ok, withLogs(`CSR as c2: ${ok.ok ? '' : ok.details}`));
    assert.match(new X509Certificate(ok.certChain[0] ?? '').subjectAltName ?? '', new RegExp(`URI:spiffe://cluster.local/ns/${ns}/sa/web`));
    const local = await csr('c1');
    assert.ok(!local.ok, "cluster 1's API server does not know cluster 2's token");
    const unknown = await csr('c3');
    assert.ok(!unknown.ok && /no Kubernetes client for cluster "c3"/.test(unknown.details), unknown.ok ? 'signed' : unknown.details);
  });

  it("a kube-system Service is cluster-local: only the endpoints of the proxy's cluster (istiod's default)", async () => {
    assert.ok(stream);
    // The same selector-less Service in both clusters' kube-system, each with its own endpoint.
    for (const [client, ip] of [
      [k1, '10.1.0.53'],
      [k2, '10.2.0.53'],
    ] as const) {
      await client.service('kube-system', { metadata: { name: 'dns' }, spec: { ports: [{ name: 'tcp-dns', port: 53 }] } });
      await client.slice('kube-system', {
        metadata: { name: 'dns-1', labels: { 'kubernetes.io/service-name': 'dns' } },
        addressType: 'IPv4',
        endpoints: [{ addresses: [ip], conditions: { ready: true } }],
        ports: [{ name: 'tcp-dns', port: 53, protocol: 'TCP' }],
      });
    }
    const dns = 'outbound|53||dns.kube-system.svc.cluster.local';
    stream.subscribe(TYPE.EDS, [cla(), dns]);
    const eds = await stream.nextMatching(TYPE.EDS, (r) => (addressesByCluster(r.resp)[dns] ?? []).length > 0, {
      describe: () => withLogs('timed out waiting for the kube-system endpoints'),
    });
    assert.deepEqual(addressesByCluster(eds.resp)[dns], ['10.1.0.53:53'], "cluster 1's endpoint alone");
    assert.equal(addressesByCluster(eds.resp)[cla()]?.length, 2, "web's endpoints still come from both clusters");
  });

  it("a changed kubeconfig in the Secret restarts that cluster's registry, which keeps serving", async () => {
    assert.ok(mp && stream);
    const mark = mp.mark();
    // The previous registry serves until the new one synced: no response in between may lack cluster 2.
    const seen: string[][] = [];
    let watching = true;
    stream.onResponse((r) => {
      if (watching && r.resp.typeUrl === TYPE.EDS) seen.push(addressesByCluster(r.resp)[cla()] ?? []);
    });
    const text = remoteSecret.stringData?.c2 ?? '';
    const changed = text.replace(`server: ${c2.url}`, `server: ${c2.url}/`);
    assert.notEqual(changed, text);
    await k1.core.replaceNamespacedSecret({
      namespace: systemNs,
      name: 'istio-remote-secret-c2',
      body: { ...remoteSecret, stringData: { c2: changed } },
    });
    await mp.waitForLog((l) => l.raw.includes('kubeconfig changed: restarting remote cluster'), { since: mark, timeoutMs: 15_000 });
    await mp.waitForLog((l) => l.raw.includes('remote cluster synced'), { since: mark, timeoutMs: 15_000 });
    assert.deepEqual(
      (await clusterz()).map((r) => `${r.id}:${r.syncStatus}`),
      ['c1:synced', 'c2:synced'],
    );
    await new Promise((r) => setTimeout(r, 500)); // the push after the new registry synced
    watching = false;
    for (const addresses of seen) assert.equal(addresses.length, 2, `an EDS response during the restart: ${addresses.join(', ')}`);
  });

  it('a change in cluster 2 reaches the sidecar', async () => {
    await k2.pod(ns, webPod('web-3'), readyStatus('10.2.0.3'));
    await k2.discovery.replaceNamespacedEndpointSlice({
      namespace: ns,
      name: 'web-c2',
      body: slice('web-c2', [
        ['web-2', '10.2.0.1'],
        ['web-3', '10.2.0.3'],
      ]),
    });
    await untilEndpoints(['10.1.0.1:8080', '10.2.0.1:8080', '10.2.0.3:8080'], "cluster 2's new endpoint");
  });

  it("a remote cluster's namespaces are selected by the local mesh config's discoverySelectors (istiod's config cluster's)", async () => {
    assert.ok(dir);
    const meshFile = path.join(dir.path, 'mesh-selectors.yaml');
    await writeFile(meshFile, 'discoverySelectors:\n- matchLabels: {mesh: "on"}\n');
    const label = (k: CoreClient, value: string): Promise<unknown> =>
      k.core.patchNamespace({ name: ns, body: [{ op: 'add', path: '/metadata/labels/mesh', value }] });
    await label(k1, 'on');
    await label(k2, 'off');
    const selecting = await startMeshpilot({
      configDir: dir.path,
      args: ['--kubeconfig', meshpilotKubeconfig, '--clusterID', 'c1', '--meshConfig', meshFile],
      env: { POD_NAMESPACE: systemNs },
      readyTimeoutMs: 60_000,
    });
    extra.push(selecting);
    const client = AdsStream.open(selecting.grpcAddr, {
      node: { id: `sidecar~10.1.9.7~client-3.${ns}~${ns}.svc.cluster.local`, metadata: { NAMESPACE: ns, CLUSTER_ID: 'c1' } },
    });
    try {
      client.subscribe(TYPE.EDS, [cla()]);
      const until = (want: string[], what: string): Promise<Received> =>
        client.nextMatching(TYPE.EDS, (r) => (addressesByCluster(r.resp)[cla()] ?? []).join(',') === want.join(','), {
          timeoutMs: 20_000,
          describe: () => withLogs(`timed out waiting for ${what}`, selecting),
        });
      await until(['10.1.0.1:8080'], "cluster 1's endpoint alone: cluster 2's namespace is not selected");
      await label(k2, 'on');
      await until(['10.1.0.1:8080', '10.2.0.1:8080', '10.2.0.3:8080'], "cluster 2's endpoints once its namespace is selected");
    } finally {
      client.close();
    }
  });

  it("removing the Secret removes cluster 2's endpoints", async (t) => {
    const started = performance.now();
    await k1.core.deleteNamespacedSecret({ namespace: systemNs, name: 'istio-remote-secret-c2' });
    const eds = await untilEndpoints(['10.1.0.1:8080'], "cluster 1's endpoint alone");
    t.diagnostic(`remote secret removed → cluster 2's endpoints gone in ${Math.round(eds.at - (performance.timeOrigin + started))} ms`);
    assert.deepEqual(await clusterz(), [{ id: 'c1', secretName: '', syncStatus: 'synced' }]);
    assert.match((await metric(mp, /^istiod_managed_clusters\{cluster_type="remote"\}/)) ?? '', / 0$/);
  });

  it("with cluster 2's apiserver stopped, cluster 1's changes keep flowing", async () => {
    await createSecret();
    await untilEndpoints(['10.1.0.1:8080', '10.2.0.1:8080', '10.2.0.3:8080'], 'both clusters again');
    await c2.stop();
    await k1.pod(ns, webPod('web-4'), readyStatus('10.1.0.4'));
    await k1.discovery.replaceNamespacedEndpointSlice({
      namespace: ns,
      name: 'web-c1',
      body: slice('web-c1', [
        ['web-1', '10.1.0.1'],
        ['web-4', '10.1.0.4'],
      ]),
    });
    // Cluster 2's last known endpoints stay, as istiod keeps a remote cluster's informer caches.
    await untilEndpoints(['10.1.0.1:8080', '10.1.0.4:8080', '10.2.0.1:8080', '10.2.0.3:8080'], "cluster 1's new endpoint");
  });

  it('a meshpilot started while cluster 2 is unreachable is ready after PILOT_REMOTE_CLUSTER_TIMEOUT, cluster 2 in timeout', async () => {
    assert.ok(dir);
    const started = Date.now();
    const second = await startMeshpilot({
      configDir: dir.path,
      args: ['--kubeconfig', meshpilotKubeconfig, '--clusterID', 'c1'],
      env: { POD_NAMESPACE: systemNs, PILOT_REMOTE_CLUSTER_TIMEOUT: '2s' },
      readyTimeoutMs: 60_000,
    });
    extra.push(second);
    assert.ok(Date.now() - started >= 2_000, 'readiness waited for the timeout');
    const rows = await waitFor(async () => {
      const z = await clusterz(second);
      return z.some((r) => r.id === 'c2') ? z : undefined;
    });
    assert.deepEqual(rows, [
      { id: 'c1', secretName: '', syncStatus: 'synced' },
      { id: 'c2', secretName: `${systemNs}/istio-remote-secret-c2`, syncStatus: 'timeout' },
    ]);
    assert.match((await metric(second, /^remote_cluster_sync_timeouts_total\{cluster="c2"\}/)) ?? '', / 1$/, withLogs('timeouts', second));
  });
});
