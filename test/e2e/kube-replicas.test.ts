/**
 * `meshpilot discovery --kubeconfig` replicas against one real API server,
 * each running as the RBAC manifest's `istiod` ServiceAccount (no "forbidden" may appear in a log),
 * with a short lease (6 s, renew deadline 4 s, retry 1 s) so the test runs in seconds.
 *
 * - Exactly one replica leads each Lease (istio-namespace-controller-election, istio-leader); the
 *   Lease's holder is the replica that logged it won, the other one only observes.
 * - Both replicas give the same Envoy sidecar identical resources (CDS, LDS, RDS, EDS; versions and
 *   nonces aside).
 * - The leader recreates a deleted istio-ca-root-cert ConfigMap, and the webhooks' caBundle patcher
 *   runs on the istio-leader holder only (it fills the caBundle of istio-validator-<ns>).
 * - SIGKILL of the leader: the follower takes the lease once it expires (measured; bound: lease
 *   duration + two jittered retries) and recreates the ConfigMap deleted while nobody led.
 * - SIGTERM of a leader releases the lease: a third replica takes over at its next retry, far
 *   sooner than a lease duration; the leader's ADS streams end UNAVAILABLE after the drain, and a
 *   sidecar reconnecting to another replica with the version and nonce it held is answered
 *   (AlwaysRespond) with the same clusters.
 *
 * - The replicas start at the same time, each with its own --caDir (as pods on different nodes):
 *   they end up with one CA root, shared through the istio-ca-secret Secret (istiod's), so the
 *   istio-ca-root-cert every replica would publish is the same.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { AdmissionregistrationV1Api, CoordinationV1Api, CoreV1Api } from '@kubernetes/client-node';
import { ClusterSchema } from '../../src/gen/envoy/config/cluster/v3/cluster_pb.js';
import { ListenerSchema } from '../../src/gen/envoy/config/listener/v3/listener_pb.js';
import {
  KUBE_SETUP_TIMEOUT_MS,
  kubeSkipReason,
  meshpilotServiceAccount,
  startKubeCluster,
  type KubeCluster,
  type ServiceAccountCredentials,
} from '../support/kube.js';
import { CoreClient, readyStatus } from '../support/kube-objects.js';
import { startMeshpilot, type Meshpilot } from '../support/meshpilot-process.js';
import { AdsStream, type Received } from '../support/raw-ads-client.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import { clusterEdsName, decodeResources, listenerRouteName, TYPE } from '../support/xds-resources.js';

const skip = kubeSkipReason();
const LEASE_MS = 6_000;
const RENEW_MS = 4_000;
const RETRY_MS = 1_000;
const NS_LEASE = 'istio-namespace-controller-election';
const LEADER_LEASE = 'istio-leader';
const CM = 'istio-ca-root-cert';

let cluster: KubeCluster;
let core: CoreV1Api;
let leases: CoordinationV1Api;
let creds: ServiceAccountCredentials;
let dir: TempDir | undefined;
let systemNs: string;
let shop: string;
const replicas = new Map<string, Meshpilot>();
const streams: AdsStream[] = [];

const tails = (): string => [...replicas].map(([name, mp]) => `\n--- ${name} ---\n${mp.tail(15)}`).join('');
const holder = async (lease: string): Promise<{ holder: string; transitions: number }> => {
  const l = await leases.readNamespacedLease({ namespace: systemNs, name: lease });
  return { holder: l.spec?.holderIdentity ?? '', transitions: l.spec?.leaseTransitions ?? 0 };
};
const configMap = (ns: string): Promise<string | undefined> =>
  core.readNamespacedConfigMap({ namespace: ns, name: CM }).then(
    (c) => c.data?.['root-cert.pem'],
    () => undefined,
  );
const deleteConfigMap = (ns: string): Promise<unknown> => core.deleteNamespacedConfigMap({ namespace: ns, name: CM });

async function startReplica(name: string): Promise<Meshpilot> {
  assert.ok(dir);
  const mp = await startMeshpilot({
    configDir: dir.path,
    args: ['--kubeconfig', creds.kubeconfigPath, '--caDir', path.join(dir.path, `ca-${name}`)],
    env: {
      POD_NAMESPACE: systemNs,
      POD_NAME: name,
      LEADER_ELECTION_LEASE_DURATION: `${LEASE_MS}ms`,
      LEADER_ELECTION_RENEW_DEADLINE: `${RENEW_MS}ms`,
      LEADER_ELECTION_RETRY_PERIOD: `${RETRY_MS}ms`,
    },
    readyTimeoutMs: 60_000,
  });
  replicas.set(name, mp);
  return mp;
}

const patcherStarted = (mp: Meshpilot): boolean => mp.logs().some((l) => l.json?.msg === 'webhook caBundle patcher started');
const validatorCaBundle = async (): Promise<string> =>
  (
    await cluster.clientNode
      .makeApiClient(AdmissionregistrationV1Api)
      .readValidatingWebhookConfiguration({ name: `istio-validator-${systemNs}` })
  ).webhooks?.[0]?.clientConfig.caBundle ?? '';

const wonLease = (mp: Meshpilot, lease: string): boolean =>
  mp.logs().some((l) => l.json?.msg === 'leader election lock obtained' && String(l.json.lease).endsWith(`/${lease}`));

/** Every resource a sidecar in `shop` gets from one replica, by type → name → encoded bytes, once it holds the web Service. */
async function sidecarView(mp: Meshpilot): Promise<Map<string, Map<string, string>>> {
  const latest = new Map<string, Received>();
  const s = AdsStream.open(mp.grpcAddr, {
    node: { id: `sidecar~10.20.0.9~client-0.${shop}~${shop}.svc.cluster.local`, metadata: { NAMESPACE: shop, LABELS: { app: 'client' } } },
  });
  streams.push(s);
  s.onResponse((r) => {
    latest.set(r.resp.typeUrl, r);
    s.ack(r.resp);
  });
  s.subscribe(TYPE.CDS, []);
  s.subscribe(TYPE.LDS, []);
  const web = `outbound|80||web.${shop}.svc.cluster.local`;
  const cds = await waitFor(
    () => {
      const r = latest.get(TYPE.CDS);
      return r && decodeResources(r.resp, ClusterSchema).some((c) => c.name === web) ? r : undefined;
    },
    { timeoutMs: 20_000, description: `${web} from ${mp.grpcAddr}` },
  );
  const lds = await waitFor(() => latest.get(TYPE.LDS), { timeoutMs: 10_000, description: 'listeners' });
  const edsNames = decodeResources(cds.resp, ClusterSchema)
    .map(clusterEdsName)
    .filter((n): n is string => n !== undefined)
    .sort();
  const routeNames = [
    ...new Set(
      decodeResources(lds.resp, ListenerSchema)
        .map(listenerRouteName)
        .filter((n): n is string => n !== undefined),
    ),
  ].sort();
  s.subscribe(TYPE.EDS, edsNames);
  s.subscribe(TYPE.RDS, routeNames);
  await waitFor(
    () =>
      latest.get(TYPE.EDS)?.resp.resources.length === edsNames.length && latest.get(TYPE.RDS)?.resp.resources.length === routeNames.length,
    {
      timeoutMs: 10_000,
      description: 'endpoints and routes',
    },
  );
  const view = new Map<string, Map<string, string>>();
  for (const [type, r] of latest) {
    const byName = new Map<string, string>();
    const schema = type === TYPE.CDS ? ClusterSchema : type === TYPE.LDS ? ListenerSchema : undefined;
    const names = schema ? decodeResources(r.resp, schema).map((x) => x.name) : r.resp.resources.map((_, i) => `#${i}`);
    r.resp.resources.forEach((any, i) => byName.set(names[i] ?? `#${i}`, Buffer.from(any.value).toString('base64')));
    view.set(type, byName);
  }
  return view;
}

describe('two meshpilot replicas with leader election on one API server', { skip }, () => {
  before(
    async () => {
      cluster = await startKubeCluster();
      core = cluster.clientNode.makeApiClient(CoreV1Api);
      leases = cluster.clientNode.makeApiClient(CoordinationV1Api);
      await cluster.applyIstioCrds();
      systemNs = await cluster.namespace('istio-sys');
      shop = await cluster.namespace('shop');
      creds = await meshpilotServiceAccount(cluster, systemNs);
      const k8s = new CoreClient(cluster.clientNode);
      await k8s.pod(
        shop,
        {
          metadata: { name: 'web-1', labels: { app: 'web' } },
          spec: { serviceAccountName: 'web', containers: [{ name: 'app', image: 'example/web' }] },
        },
        readyStatus('10.20.0.1'),
      );
      await k8s.service(shop, {
        metadata: { name: 'web' },
        spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
      });
      await k8s.slice(shop, {
        metadata: { name: 'web-1', labels: { 'kubernetes.io/service-name': 'web' } },
        addressType: 'IPv4',
        endpoints: [{ addresses: ['10.20.0.1'], conditions: { ready: true }, targetRef: { kind: 'Pod', name: 'web-1', namespace: shop } }],
        ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
      });
      // As Istio's chart ships it: caBundle empty, to be filled by the control plane (the leader's patcher).
      await cluster.clientNode.makeApiClient(AdmissionregistrationV1Api).createValidatingWebhookConfiguration({
        body: {
          metadata: { name: `istio-validator-${systemNs}`, labels: { 'istio.io/rev': 'default' } },
          webhooks: [
            {
              name: 'rev.validation.istio.io',
              clientConfig: { url: 'https://127.0.0.1:9/validate' },
              rules: [
                {
                  operations: ['CREATE', 'UPDATE'],
                  apiGroups: ['security.istio.io'],
                  apiVersions: ['*'],
                  resources: ['requestauthentications'],
                },
              ],
              failurePolicy: 'Ignore',
              sideEffects: 'None',
              admissionReviewVersions: ['v1'],
              namespaceSelector: { matchLabels: { 'not-in-this-test': 'true' } },
            },
          ],
        },
      });
      dir = tempDir('meshpilot-kube-replicas-');
      // Together, each with its own CA directory: whoever publishes the istio-ca-secret first sets the root.
      await Promise.all([startReplica('istiod-a'), startReplica('istiod-b')]);
    },
    { timeout: KUBE_SETUP_TIMEOUT_MS },
  );

  after(async () => {
    for (const s of streams) s.close();
    const forbidden = [...replicas].flatMap(([name, mp]) =>
      mp
        .logs()
        .filter((l) => /forbidden/i.test(l.raw))
        .map((l) => `${name}: ${l.raw}`),
    );
    await Promise.all([...replicas.values()].map((mp) => mp.stop()));
    await dir?.remove();
    await cluster?.stop();
    assert.deepEqual(forbidden, [], "a replica, running as the manifest's ServiceAccount, was refused an API call");
  });

  it('replicas started together with their own CA directories share one root (istio-ca-secret)', async () => {
    assert.ok(dir);
    const roots = await Promise.all(['istiod-a', 'istiod-b'].map((n) => readFile(path.join(dir!.path, `ca-${n}`, 'ca-cert.pem'), 'utf8')));
    assert.equal(roots[0], roots[1], 'both replicas sign with the same root');
    const secret = await core.readNamespacedSecret({ namespace: systemNs, name: 'istio-ca-secret' });
    assert.equal(secret.type, 'istio.io/ca-root');
    assert.equal(Buffer.from(secret.data?.['ca-cert.pem'] ?? '', 'base64').toString('utf8'), roots[0]);
    const logged = [...replicas.values()].map(
      (mp) => mp.logs().find((l) => /CA: (published|using) the mesh root/.test(String(l.json?.msg)))?.json?.msg,
    );
    assert.deepEqual(
      logged.sort(),
      ['CA: published the mesh root for the other replicas', 'CA: using the mesh root shared by the replicas'].sort(),
      'one replica published, the other loaded',
    );
  });

  it("exactly one replica leads each lease, and it is the Lease's holder", async () => {
    const a = replicas.get('istiod-a');
    const b = replicas.get('istiod-b');
    assert.ok(a && b);
    for (const lease of [NS_LEASE, LEADER_LEASE]) {
      const h = await waitFor(async () => (await holder(lease)).holder || undefined, {
        timeoutMs: 10_000,
        description: `a holder of ${lease}`,
      });
      await waitFor(() => wonLease(a, lease) || wonLease(b, lease), { timeoutMs: 5_000, description: `a replica logging it won ${lease}` });
      const winners = [...replicas].filter(([, mp]) => wonLease(mp, lease)).map(([name]) => name);
      assert.deepEqual(winners, [h], `${lease}: winners ${JSON.stringify(winners)}, holder ${h}${tails()}`);
    }
    // The webhooks' caBundle patcher runs on the istio-leader holder only.
    const leaderOfWebhooks = (await holder(LEADER_LEASE)).holder;
    const root = await readFile(path.join(dir!.path, `ca-${leaderOfWebhooks}`, 'root-cert.pem'), 'utf8');
    const expected = Buffer.from(root).toString('base64');
    await waitFor(async () => (await validatorCaBundle()) === expected, {
      timeoutMs: 10_000,
      description: 'the validator caBundle filled',
    }).catch((e: Error) => assert.fail(e.message + tails()));
    assert.deepEqual(
      [...replicas].filter(([, mp]) => patcherStarted(mp)).map(([n]) => n),
      [leaderOfWebhooks],
    );
    // A few renew periods later nothing changed hands.
    await new Promise((r) => setTimeout(r, 3 * RETRY_MS));
    for (const lease of [NS_LEASE, LEADER_LEASE])
      assert.equal((await holder(lease)).transitions, 0, `${lease} changed hands while both replicas ran${tails()}`);
  });

  it('both replicas give a sidecar identical resources (versions and nonces aside)', async () => {
    const [viewA, viewB] = await Promise.all([sidecarView(replicas.get('istiod-a')!), sidecarView(replicas.get('istiod-b')!)]);
    assert.deepEqual([...viewA.keys()].sort(), [TYPE.CDS, TYPE.EDS, TYPE.LDS, TYPE.RDS].sort());
    for (const [type, a] of viewA) {
      const b = viewB.get(type);
      assert.ok(b, `replica b sent no ${type}`);
      assert.deepEqual([...a.keys()].sort(), [...b.keys()].sort(), `${type}: resource names differ`);
      for (const [name, bytes] of a) assert.equal(b.get(name), bytes, `${type} ${name} differs between the replicas`);
    }
    assert.ok((viewA.get(TYPE.CDS)?.size ?? 0) >= 3, 'the comparison covers real clusters');
  });

  it('the leader recreates a deleted istio-ca-root-cert', async () => {
    const root = await waitFor(() => configMap(shop), { timeoutMs: 10_000, description: `${CM} in ${shop}` });
    await deleteConfigMap(shop);
    const again = await waitFor(() => configMap(shop), { timeoutMs: 10_000, description: `${CM} recreated in ${shop}` }).catch((e: Error) =>
      assert.fail(e.message + tails()),
    );
    assert.equal(again, root);
  });

  it('SIGKILL of the leader: the follower takes over when the lease expires and recreates the ConfigMap', async () => {
    const { holder: leaderName, transitions } = await holder(NS_LEASE);
    const leader = replicas.get(leaderName);
    const followerName = [...replicas.keys()].find((n) => n !== leaderName);
    assert.ok(leader && followerName, `holder ${leaderName}`);
    const root = await configMap(shop);
    const killedAt = Date.now();
    process.kill(leader.pid, 'SIGKILL');
    await leader.exited;
    replicas.delete(leaderName);
    await deleteConfigMap(shop); // nobody leads now: only the next leader can bring it back
    const after = await waitFor(
      async () => {
        const h = await holder(NS_LEASE);
        return h.holder === followerName ? h : undefined;
      },
      { timeoutMs: LEASE_MS + 10_000, intervalMs: 100, description: `${followerName} to take ${NS_LEASE}` },
    ).catch((e: Error) => assert.fail(e.message + tails()));
    const takeoverMs = Date.now() - killedAt;
    assert.equal(after.transitions, transitions + 1, 'leaseTransitions counts the change of holder');
    // The follower counts the lease as valid for a lease duration from when it last saw it change
    // (up to one jittered retry after the kill), then takes it at its next retry.
    assert.ok(takeoverMs <= LEASE_MS + 2 * 1.2 * RETRY_MS + 2_000, `takeover after ${takeoverMs} ms`); // 2 s for API and timer latency on a loaded machine
    assert.ok(takeoverMs >= LEASE_MS - 1_000, `the follower must not take a live lease early (${takeoverMs} ms)`);
    const again = await waitFor(() => configMap(shop), { timeoutMs: 10_000, description: `${CM} recreated by the new leader` }).catch(
      (e: Error) => assert.fail(e.message + tails()),
    );
    assert.equal(again, root);
    await waitFor(async () => (await holder(LEADER_LEASE)).holder === followerName, {
      timeoutMs: LEASE_MS + 5_000,
      description: `${followerName} to take ${LEADER_LEASE} too`,
    });
    await waitFor(() => patcherStarted(replicas.get(followerName)!), {
      timeoutMs: 5_000,
      description: `the caBundle patcher on ${followerName}`,
    });
    console.log(`# takeover after SIGKILL: ${takeoverMs} ms (lease ${LEASE_MS} ms, retry ${RETRY_MS} ms)`);
  });

  it('SIGTERM of the leader releases the lease: a third replica takes over at its next retry; its proxies move without losing config', async () => {
    const { holder: leaderName, transitions } = await holder(NS_LEASE);
    const leader = replicas.get(leaderName);
    assert.ok(leader);
    await startReplica('istiod-c');
    // A sidecar on the leader holds its clusters (ACKed) when the leader is told to stop.
    const node = { id: `sidecar~10.20.0.8~client-1.${shop}~${shop}.svc.cluster.local`, metadata: { NAMESPACE: shop } };
    const onLeader = AdsStream.open(leader.grpcAddr, { node });
    streams.push(onLeader);
    onLeader.subscribe(TYPE.CDS, []);
    const held = await onLeader.next(TYPE.CDS, 20_000);
    onLeader.ack(held.resp);
    const stoppedAt = Date.now();
    // The lease is released first thing on SIGTERM; the process itself exits after draining its streams.
    const exited = leader.stop(15_000);
    const after = await waitFor(
      async () => {
        const h = await holder(NS_LEASE);
        return h.holder === 'istiod-c' ? h : undefined;
      },
      { timeoutMs: LEASE_MS, intervalMs: 100, description: 'istiod-c to take the released lease' },
    ).catch((e: Error) => assert.fail(e.message + tails()));
    const takeoverMs = Date.now() - stoppedAt;
    const exit = await exited;
    replicas.delete(leaderName);
    assert.equal(exit.code, 0, 'graceful exit');
    assert.ok(
      leader.logs().some((l) => l.json?.msg === 'leader election lock released' && String(l.json.lease).endsWith(`/${NS_LEASE}`)),
      `the leader logged the release${tails()}`,
    );
    assert.equal(after.transitions, transitions + 1);
    assert.ok(takeoverMs < LEASE_MS - 1_000, `takeover after a release took ${takeoverMs} ms: as long as an expiry`);
    // The drained stream ended with UNAVAILABLE, so the proxy reconnects — here to istiod-c, with
    // the version and nonce it holds from the old replica: that looks like an ACK, but a first
    // request on a stream is always answered (AlwaysRespond), with the same clusters.
    const end = await onLeader.ended;
    assert.equal(end.code, 14, `the drained stream ends UNAVAILABLE (${end.details})`);
    const moved = AdsStream.open(replicas.get('istiod-c')!.grpcAddr, { node });
    streams.push(moved);
    moved.send({ typeUrl: TYPE.CDS, resourceNames: [], versionInfo: held.resp.versionInfo, responseNonce: held.resp.nonce });
    const answer = await moved
      .next(TYPE.CDS, 10_000)
      .catch((e: Error) => assert.fail(`the reconnect was not answered: ${e.message}${tails()}`));
    const bytes = (r: Received): string[] => r.resp.resources.map((a) => Buffer.from(a.value).toString('base64')).sort();
    assert.deepEqual(bytes(answer), bytes(held), 'the new replica sends the clusters the proxy held');
    await deleteConfigMap(shop);
    await waitFor(() => configMap(shop), { timeoutMs: 10_000, description: `${CM} recreated by istiod-c` }).catch((e: Error) =>
      assert.fail(e.message + tails()),
    );
    console.log(`# takeover after SIGTERM (release): ${takeoverMs} ms`);
  });
});
