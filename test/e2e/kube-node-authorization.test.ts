/**
 * Against a real kube-apiserver + etcd: CA impersonation (CSR metadata `ImpersonatedIdentity`, as
 * ztunnel sends it in shared mode) with istiod's node check. meshpilot runs as the manifest's
 * `istiod` ServiceAccount with CA_TRUSTED_NODE_ACCOUNTS=<system>/ztunnel; the callers present real
 * pod-bound ServiceAccount tokens (TokenRequest with a boundObjectRef to their Pod), reviewed by the
 * API server.
 *
 * Nodes node-a and node-b (Node objects; nothing runs on them), pods scheduled by spec.nodeName:
 * <system>/ztunnel-a (sa ztunnel) and <shop>/app-1 (sa app) on node-a, <shop>/db-1 (sa db) on node-b.
 *
 * - ztunnel-a gets a certificate for <shop>/app (a pod of it runs on node-a);
 * - refused, with istiod's opaque message to the caller and the reason in meshpilot's log: <shop>/db
 *   (only on node-b); app-1's own token (not a trusted node account); a token of ztunnel-a re-signed
 *   with another key (the API server does not authenticate it); the same token re-signed with the
 *   API server's own key but expired.
 * - The real ztunnel (dedicated mode, when the binary is there: test/support/ztunnel.ts) with
 *   app-1's pod-bound token: TokenReview accepts its xDS stream and its CSR, and it holds its
 *   certificate for <shop>/app.
 */
import assert from 'node:assert/strict';
import { X509Certificate, createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api } from '@kubernetes/client-node';
import { createKeyAndCsr } from '../../src/agent/csr.js';
import { callCreateCertificate, type CsrCallResult } from '../../src/security/csr/test-client.js';
import {
  KUBE_SETUP_TIMEOUT_MS,
  kubeSkipReason,
  meshpilotServiceAccount,
  resignedToken,
  startKubeCluster,
  type KubeCluster,
} from '../support/kube.js';
import { startMeshpilot, type Meshpilot } from '../support/meshpilot-process.js';
import { freePort } from '../support/ports.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import { dumpedPem, localWorkload, startZtunnel, ztunnelSkipReason, type Ztunnel } from '../support/ztunnel.js';

const skip = kubeSkipReason();
const UNAUTHENTICATED = 16;

let cluster: KubeCluster;
let core: CoreV1Api;
let mp: Meshpilot | undefined;
let dir: TempDir | undefined;
let systemNs: string;
let shop: string;
let secureAddr: string;
let rootPem: string;
const uids = new Map<string, string>();
let zt: Ztunnel | undefined;

const withLogs = (msg: string): string => `${msg}\n--- meshpilot stderr tail ---\n${mp?.tail(30) ?? '(not running)'}`;

async function createPod(namespace: string, name: string, serviceAccount: string, nodeName: string): Promise<void> {
  const pod = await core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name, labels: { app: name } },
      spec: { serviceAccountName: serviceAccount, nodeName, containers: [{ name: 'app', image: 'example.invalid/app:1' }] },
    },
  });
  uids.set(`${namespace}/${name}`, pod.metadata?.uid ?? '');
}

/** A TokenRequest token bound to the Pod, as kubelet mounts one (audience istio-ca). */
async function podToken(namespace: string, pod: string, serviceAccount: string): Promise<string> {
  const tr = await core.createNamespacedServiceAccountToken({
    namespace,
    name: serviceAccount,
    body: {
      spec: {
        audiences: ['istio-ca'],
        expirationSeconds: 600,
        boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: pod, uid: uids.get(`${namespace}/${pod}`) ?? '' },
      },
    },
  });
  assert.ok(tr.status?.token, 'TokenRequest returned a token');
  return tr.status.token;
}

async function impersonate(token: string, identity: string): Promise<CsrCallResult> {
  const { csrPem } = await createKeyAndCsr('ECDSA', identity);
  return callCreateCertificate({
    address: secureAddr,
    rootPem,
    csrPem,
    token,
    ttlSeconds: 3600,
    metadata: { ImpersonatedIdentity: identity },
  });
}

function refused(r: CsrCallResult, why: string, details: RegExp): void {
  assert.equal(r.ok, false, withLogs(`${why}: the CSR was signed`));
  assert.ok(!r.ok);
  assert.equal(r.code, UNAUTHENTICATED, withLogs(`${why}: gRPC code ${r.code} (${r.details})`));
  assert.match(r.details, details, withLogs(why));
}

/** meshpilot's logged reason for refusing the impersonation of `identity` (logged after `since`). */
async function refusalReason(identity: string, since: number): Promise<string> {
  const line = await mp!.waitForLog((l) => l.json?.msg === 'CSR: impersonation refused' && l.json.impersonated === identity, {
    since,
    description: `meshpilot to log why it refused ${identity}`,
  });
  return String(line.json?.reason);
}

describe('CA impersonation with the node check, on a real API server (pod-bound tokens)', { skip }, () => {
  before(
    async () => {
      cluster = await startKubeCluster();
      core = cluster.clientNode.makeApiClient(CoreV1Api);
      await cluster.applyIstioCrds();
      systemNs = await cluster.namespace('istio-sys');
      shop = await cluster.namespace('shop');
      for (const node of ['node-a', 'node-b']) await core.createNode({ body: { metadata: { name: node } } });
      for (const [ns, sa] of [
        [systemNs, 'ztunnel'],
        [shop, 'app'],
        [shop, 'db'],
      ] as const)
        await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: sa } } });
      await createPod(systemNs, 'ztunnel-a', 'ztunnel', 'node-a');
      await createPod(shop, 'app-1', 'app', 'node-a');
      await createPod(shop, 'db-1', 'db', 'node-b');
      const creds = await meshpilotServiceAccount(cluster, systemNs);
      dir = tempDir('meshpilot-kube-node-auth-');
      secureAddr = `127.0.0.1:${await freePort()}`;
      mp = await startMeshpilot({
        configDir: dir.path,
        args: ['--kubeconfig', creds.kubeconfigPath, '--secureGRPCAddr', secureAddr, '--caDir', path.join(dir.path, 'ca')],
        env: {
          POD_NAMESPACE: systemNs,
          POD_NAME: 'istiod-node-auth-0',
          ISTIOD_CUSTOM_HOST: 'istiod.istio-system.svc',
          CA_TRUSTED_NODE_ACCOUNTS: `${systemNs}/ztunnel`,
          PILOT_ENABLE_AMBIENT: 'true',
        },
        readyTimeoutMs: 60_000,
      });
      rootPem = await readFile(path.join(dir.path, 'ca', 'root-cert.pem'), 'utf8');
    },
    { timeout: KUBE_SETUP_TIMEOUT_MS },
  );

  after(async () => {
    await zt?.stop();
    const crashed = mp !== undefined && !mp.alive();
    const tail = mp?.tail(30);
    await mp?.stop();
    await dir?.remove();
    await cluster?.stop();
    if (crashed) assert.fail(`meshpilot exited during the tests\n${tail}`);
  });

  it('the trusted node account gets a certificate for an identity that runs on its node', async () => {
    const r = await impersonate(await podToken(systemNs, 'ztunnel-a', 'ztunnel'), `spiffe://cluster.local/ns/${shop}/sa/app`);
    assert.ok(r.ok, withLogs(`refused: ${r.ok ? '' : r.details}`));
    const san = new X509Certificate(r.certChain[0]!).subjectAltName ?? '';
    assert.equal(san, `URI:spiffe://cluster.local/ns/${shop}/sa/app`);
  });

  it("refuses an identity whose pods run only on another node than the caller's", async () => {
    const id = `spiffe://cluster.local/ns/${shop}/sa/db`;
    const since = mp!.mark();
    refused(
      await impersonate(await podToken(systemNs, 'ztunnel-a', 'ztunnel'), id),
      'db on node-b',
      /^request impersonation authentication failure$/,
    );
    assert.equal(await refusalReason(id, since), `no pod of service account ${shop}/db runs on node "node-a"`);
  });

  it('refuses a caller that is not a trusted node account (a workload on the same node)', async () => {
    const id = `spiffe://cluster.local/ns/${shop}/sa/db`;
    const since = mp!.mark();
    refused(
      await impersonate(await podToken(shop, 'app-1', 'app'), id),
      'app impersonating',
      /^request impersonation authentication failure$/,
    );
    assert.equal(await refusalReason(id, since), `caller spiffe://cluster.local/ns/${shop}/sa/app is not a trusted node account`);
  });

  it('refuses a forged token (signed by a key the API server does not know)', async () => {
    const real = await podToken(systemNs, 'ztunnel-a', 'ztunnel');
    const now = Math.floor(Date.now() / 1000);
    const forged = await resignedToken(real, generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey, {
      iat: now - 60,
      exp: now + 600,
    });
    refused(
      await impersonate(forged, `spiffe://cluster.local/ns/${shop}/sa/app`),
      'forged token',
      /^request authenticate failure: .*KubeJWTAuthenticator: the token review failed: .*invalid bearer token/,
    );
  });

  it("refuses an expired token signed with the API server's own key", async () => {
    const real = await podToken(systemNs, 'ztunnel-a', 'ztunnel');
    const now = Math.floor(Date.now() / 1000);
    const apiServerKey = createPrivateKey(await readFile(path.join(cluster.dir, 'pki', 'sa.key')));
    refused(
      await impersonate(
        await resignedToken(real, apiServerKey, { iat: now - 1800, exp: now - 600 }),
        `spiffe://cluster.local/ns/${shop}/sa/app`,
      ),
      'expired token',
      /^request authenticate failure: .*KubeJWTAuthenticator: the token review failed: .*expired/,
    );
  });

  it('the real ztunnel, with a pod-bound token, gets its xDS stream and its certificate', { skip: ztunnelSkipReason() }, async () => {
    const workload = { namespace: shop, pod: 'app-1', serviceAccount: 'app', ip: '10.44.1.1' };
    zt = await startZtunnel({
      secureAddress: secureAddr,
      rootPem,
      token: await podToken(shop, 'app-1', 'app'),
      workload,
      localConfig: { workloads: [localWorkload(workload)] },
    });
    const node = zt.nodeId;
    await waitFor(
      async () => ((await (await fetch(`http://${mp!.httpAddr}/debug/syncz`)).json()) as { proxy: string }[]).some((e) => e.proxy === node),
      { timeoutMs: 20_000, description: `meshpilot to hold a stream of ${node}` },
    ).catch((e: Error) => assert.fail(withLogs(`${e.message}\n--- ztunnel ---\n${zt?.tail(20)}`)));
    const cert = await zt.waitForCertificate(`spiffe://cluster.local/ns/${shop}/sa/app`);
    const leaf = new X509Certificate(dumpedPem(cert.certChain[0]!));
    assert.equal(leaf.subjectAltName, `URI:spiffe://cluster.local/ns/${shop}/sa/app`);
    assert.ok(leaf.checkIssued(new X509Certificate(rootPem)), "issued by meshpilot's root");
  });
});
