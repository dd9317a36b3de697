/**
 * Against a real kube-apiserver + etcd (../shared/kube): `meshpilot discovery
 * --kubeconfig` with Istio's CRDs applied. A Service, its EndpointSlice, Pods, a VirtualService and
 * a DestinationRule created through the API give a raw ADS client the listener, routes, clusters
 * and endpoints; a PATCH of the VirtualService converges; an endpoint added to the slice arrives
 * as an EDS-only push; deleting the Service removes its clusters; the mesh config comes from the
 * `istio` ConfigMap of the system namespace and follows its edits. No controller runs here, so the
 * test writes the EndpointSlice and the Pod statuses itself.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ClusterSchema, type Cluster } from '../../src/gen/envoy/config/cluster/v3/cluster_pb.js';
import { ListenerSchema } from '../../src/gen/envoy/config/listener/v3/listener_pb.js';
import { RouteConfigurationSchema } from '../../src/gen/envoy/config/route/v3/route_pb.js';
import { endOfRunCheck, startMeshpilot, type Meshpilot } from '../support/meshpilot-process.js';
import { KUBE_SETUP_TIMEOUT_MS, kubeSkipReason, meshpilotServiceAccount, startKubeCluster, type KubeCluster } from '../support/kube.js';
import { CoreClient, IstioClient, readyStatus } from '../support/kube-objects.js';
import { AdsStream, proxylessAdsNode, type Received } from '../support/raw-ads-client.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import { addressesByCluster, clusterEdsName, decodeResources, listenerRouteName, routeClusters, TYPE } from '../support/xds-resources.js';

const skip = kubeSkipReason();

let cluster: KubeCluster;
let k8s: CoreClient;
let istio: IstioClient;
let mp: Meshpilot | undefined;
let dir: TempDir | undefined;
let logs: TempDir | undefined;
let ns: string;
let systemNs: string;
const streams: AdsStream[] = [];

const host = (): string => `web.${ns}.svc.cluster.local`;
const subsetCluster = (subset: string): string => `outbound|80|${subset}|${host()}`;

function withLogs(msg: string): string {
  return `${msg}\n--- meshpilot stderr tail ---\n${mp?.tail(30) ?? '(not running)'}`;
}

/** The next response of `type` whose content satisfies `pred` (each is ACKed). */
const until = (s: AdsStream, type: string, pred: (r: Received) => boolean, what: string): Promise<Received> =>
  s.nextMatching(type, pred, { describe: () => withLogs(`timed out waiting for ${what}`) });

const clustersOf = (r: Received): Cluster[] => decodeResources(r.resp, ClusterSchema);
const addressesOf = (r: Received): Record<string, string[]> => addressesByCluster(r.resp);

function pod(
  name: string,
  version: string,
): {
  metadata: { name: string; labels: Record<string, string> };
  spec: { serviceAccountName: string; containers: { name: string; image: string }[] };
} {
  return {
    metadata: { name, labels: { app: 'web', version } },
    spec: { serviceAccountName: 'web', containers: [{ name: 'app', image: 'example/web' }] },
  };
}

const sliceEndpoint = (
  ip: string,
  podName: string,
): { addresses: string[]; conditions: { ready: boolean }; targetRef: { kind: string; name: string; namespace: string } } => ({
  addresses: [ip],
  conditions: { ready: true },
  targetRef: { kind: 'Pod', name: podName, namespace: ns },
});

describe('meshpilot discovery on a real Kubernetes API server', { skip }, () => {
  before(
    async () => {
      cluster = await startKubeCluster();
      await cluster.applyIstioCrds();
      k8s = new CoreClient(cluster.clientNode);
      istio = new IstioClient(cluster.clientNode);
      ns = await cluster.namespace('shop');
      systemNs = await cluster.namespace('mesh-system');
      await k8s.core.createNamespacedConfigMap({
        namespace: systemNs,
        body: { metadata: { name: 'istio' }, data: { mesh: 'connectTimeout: 3s\naccessLogFile: /dev/stdout\n' } },
      });
      await k8s.pod(ns, pod('web-v1', 'v1'), readyStatus('10.20.0.1'));
      await k8s.pod(ns, pod('web-v2', 'v2'), readyStatus('10.20.0.2'));
      await k8s.service(ns, {
        metadata: { name: 'web' },
        spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
      });
      await k8s.slice(ns, {
        metadata: { name: 'web-abc', labels: { 'kubernetes.io/service-name': 'web' } },
        addressType: 'IPv4',
        endpoints: [sliceEndpoint('10.20.0.1', 'web-v1'), sliceEndpoint('10.20.0.2', 'web-v2')],
        ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
      });
      await istio.create({
        apiVersion: 'networking.istio.io/v1',
        kind: 'DestinationRule',
        metadata: { name: 'web', namespace: ns },
        spec: {
          host: 'web',
          subsets: [
            { name: 'v1', labels: { version: 'v1' } },
            { name: 'v2', labels: { version: 'v2' } },
          ],
        },
      });
      await istio.create({
        apiVersion: 'networking.istio.io/v1',
        kind: 'VirtualService',
        metadata: { name: 'web', namespace: ns },
        spec: {
          hosts: ['web'],
          http: [
            {
              route: [
                { destination: { host: 'web', subset: 'v1' }, weight: 80 },
                { destination: { host: 'web', subset: 'v2' }, weight: 20 },
              ],
            },
          ],
        },
      });
      dir = tempDir('meshpilot-kube-discovery-');
      // As the RBAC manifest's istiod ServiceAccount, not cluster-admin: a missing permission shows up here.
      const creds = await meshpilotServiceAccount(cluster, systemNs);
      // Outside the config directory, which meshpilot watches.
      logs = tempDir('meshpilot-kube-discovery-modules-');
      mp = await startMeshpilot({
        configDir: dir.path,
        args: ['--kubeconfig', creds.kubeconfigPath],
        env: { POD_NAMESPACE: systemNs },
        readyTimeoutMs: 60_000,
        moduleLog: join(logs.path, 'modules'),
      });
    },
    { timeout: KUBE_SETUP_TIMEOUT_MS },
  );

  after(async () => {
    for (const s of streams) s.close();
    const check = endOfRunCheck(mp);
    await mp?.stop();
    await dir?.remove();
    await logs?.remove();
    await cluster?.stop();
    check();
  });

  it('Service + EndpointSlice + VirtualService + DestinationRule through the API → listener, weighted routes, subset clusters, endpoints by pod labels', async () => {
    assert.ok(mp);
    const s = AdsStream.open(mp.grpcAddr, { node: proxylessAdsNode('client-1', ns, '10.20.9.9') });
    streams.push(s);
    s.subscribe(TYPE.LDS, [`${host()}:80`]);
    const lds = await until(s, TYPE.LDS, (r) => r.resp.resources.length === 1, `the Listener ${host()}:80`);
    const [listener] = decodeResources(lds.resp, ListenerSchema);
    const routeName = listener ? listenerRouteName(listener) : undefined;
    assert.ok(routeName, 'the Listener uses RDS');

    s.subscribe(TYPE.RDS, [routeName]);
    const rds = await until(s, TYPE.RDS, (r) => r.resp.resources.length === 1, 'the route configuration');
    const [rc] = decodeResources(rds.resp, RouteConfigurationSchema);
    assert.ok(rc);
    assert.deepEqual(routeClusters(rc).sort(), [subsetCluster('v1'), subsetCluster('v2')]);
    const action = rc.virtualHosts[0]?.routes[0]?.action;
    assert.ok(action?.case === 'route' && action.value.clusterSpecifier.case === 'weightedClusters');
    assert.deepEqual(
      action.value.clusterSpecifier.value.clusters.map((c) => [c.name, c.weight?.valueOf()]),
      [
        [subsetCluster('v1'), 80],
        [subsetCluster('v2'), 20],
      ],
    );

    s.subscribe(TYPE.CDS, [subsetCluster('v1'), subsetCluster('v2')]);
    const cds = await until(s, TYPE.CDS, (r) => r.resp.resources.length === 2, 'both subset clusters');
    const clusters = clustersOf(cds);
    assert.deepEqual(
      clusters.map((c) => c.connectTimeout?.seconds),
      [3n, 3n],
      withLogs('connectTimeout from the istio ConfigMap (3s)'),
    );

    s.subscribe(
      TYPE.EDS,
      clusters.map((c) => clusterEdsName(c) ?? c.name),
    );
    const eds = await until(s, TYPE.EDS, (r) => r.resp.resources.length === 2, "both subsets' endpoints");
    assert.deepEqual(addressesOf(eds), { [subsetCluster('v1')]: ['10.20.0.1:8080'], [subsetCluster('v2')]: ['10.20.0.2:8080'] });
  });

  it('a PATCH of the VirtualService converges on the routes', async () => {
    const s = streams[0];
    assert.ok(s);
    await istio.patch('VirtualService', ns, 'web', [
      { op: 'replace', path: '/spec/http/0/route', value: [{ destination: { host: 'web', subset: 'v2' } }] },
    ]);
    const rds = await until(
      s,
      TYPE.RDS,
      (r) => {
        const [rc] = decodeResources(r.resp, RouteConfigurationSchema);
        return rc !== undefined && routeClusters(rc).join() === subsetCluster('v2');
      },
      'routes to v2 only',
    );
    assert.ok(rds);
  });

  it('an endpoint added to the slice is an EDS-only push with the new address', async () => {
    const s = streams[0];
    assert.ok(s);
    await k8s.pod(ns, pod('web-v2b', 'v2'), readyStatus('10.20.0.3'));
    const pushesBefore = s.history.length;
    await k8s.discovery.replaceNamespacedEndpointSlice({
      namespace: ns,
      name: 'web-abc',
      body: {
        metadata: { name: 'web-abc', namespace: ns, labels: { 'kubernetes.io/service-name': 'web' } },
        addressType: 'IPv4',
        endpoints: [sliceEndpoint('10.20.0.1', 'web-v1'), sliceEndpoint('10.20.0.2', 'web-v2'), sliceEndpoint('10.20.0.3', 'web-v2b')],
        ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
      },
    });
    await until(
      s,
      TYPE.EDS,
      (r) => addressesOf(r)[subsetCluster('v2')]?.join() === '10.20.0.2:8080,10.20.0.3:8080',
      'v2 with two endpoints',
    );
    const types = s.history.slice(pushesBefore).map((r) => r.resp.typeUrl);
    assert.deepEqual([...new Set(types)], [TYPE.EDS], 'only EDS was pushed for an endpoint change');
  });

  it('an edit of the istio ConfigMap reaches the clusters (a global push)', async () => {
    const s = streams[0];
    assert.ok(s);
    await k8s.core.replaceNamespacedConfigMap({
      namespace: systemNs,
      name: 'istio',
      body: { metadata: { name: 'istio' }, data: { mesh: 'connectTimeout: 7s\n' } },
    });
    await until(
      s,
      TYPE.CDS,
      (r) => clustersOf(r).every((c) => c.connectTimeout?.seconds === 7n) && r.resp.resources.length === 2,
      'clusters with connectTimeout 7s',
    );
  });

  it('deleting the Service removes its clusters and its Listener', async () => {
    const s = streams[0];
    assert.ok(s);
    await k8s.core.deleteNamespacedService({ namespace: ns, name: 'web' });
    await until(s, TYPE.CDS, (r) => r.resp.resources.length === 0, 'no clusters for the deleted Service');
    await until(s, TYPE.LDS, (r) => r.resp.resources.length === 0, 'no Listener for the deleted Service');
    await waitFor(
      async () => {
        const res = await fetch(`http://${mp?.httpAddr}/debug/registryz`);
        return res.ok && !(await res.text()).includes(host());
      },
      { timeoutMs: 5000, description: 'the registry debug view without the Service' },
    );
  });

  it('loads no module of @kubernetes/client-node (the URLs of every module the process resolved)', async () => {
    const resolved = (await readFile(join(logs?.path ?? '', 'modules'), 'utf8')).split('\n');
    assert.ok(
      resolved.some((url) => url.endsWith('/src/kube/client.ts')),
      'the log holds the modules of the Kubernetes side (the hook saw the dynamic import)',
    );
    assert.deepEqual(
      resolved.filter((url) => url.includes('/@kubernetes/client-node/')),
      [],
    );
  });
});
