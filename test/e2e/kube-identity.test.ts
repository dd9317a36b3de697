/**
 * Against a real kube-apiserver + etcd: meshpilot's CSR service (TLS,
 * --secureGRPCAddr) authenticates Kubernetes service-account tokens with TokenReview. meshpilot runs
 * with a token of the `istiod` ServiceAccount from manifests/rbac (not as cluster-admin), and no
 * "forbidden" may appear in its log.
 *
 * - A TokenRequest token (audience istio-ca) for ns/<shop>/sa/pay gets a certificate whose only URI
 *   SAN is spiffe://cluster.local/ns/<shop>/sa/pay — even when the CSR asks for another identity.
 * - Refused: a token for another audience; an expired token (the API server's TokenRequest will not
 *   issue one shorter than 10 minutes, so the test signs one itself with the API server's own
 *   service-account signing key — same issuer, kid, claims and account as a real token, exp in the
 *   past; the same construction with a future exp is accepted, which shows only the expiry differs);
 *   a token signed by another key; a token whose ServiceAccount was deleted after it was issued.
 * - `meshpilot agent` with a TokenRequest token file gets its certificate files.
 * - The root is published as ConfigMap istio-ca-root-cert in the workload namespace (and is what the
 *   clients here trust).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { X509Certificate, createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { access, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { AuthenticationV1Api, CoreV1Api } from '@kubernetes/client-node';
import { createKeyAndCsr } from '../../src/agent/csr.js';
import { callCreateCertificate, type CsrCallResult } from '../../src/security/csr/test-client.js';
import { trackChild } from '../support/cleanup.js';
import {
  KUBE_SETUP_TIMEOUT_MS,
  kubeSkipReason,
  meshpilotServiceAccount,
  resignedToken,
  startKubeCluster,
  type KubeCluster,
} from '../support/kube.js';
import { levelOf, startMeshpilot, type Meshpilot } from '../support/meshpilot-process.js';
import { MESHPILOT_CLI, PARENT_WATCHDOG_URL, REPO_ROOT } from '../support/paths.js';
import { freePorts } from '../support/ports.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

const skip = kubeSkipReason();
const UNAUTHENTICATED = 16;

let cluster: KubeCluster;
let core: CoreV1Api;
let mp: Meshpilot | undefined;
let dir: TempDir | undefined;
let shop: string;
let systemNs: string;
let secureAddr: string;
let rootPem: string;

const withLogs = (msg: string): string => `${msg}\n--- meshpilot stderr tail ---\n${mp?.tail(30) ?? '(not running)'}`;
const exists = (p: string): Promise<boolean> =>
  access(p).then(
    () => true,
    () => false,
  );

async function tokenFor(namespace: string, sa: string, audiences = ['istio-ca']): Promise<string> {
  const tr = await core.createNamespacedServiceAccountToken({ namespace, name: sa, body: { spec: { audiences, expirationSeconds: 600 } } });
  assert.ok(tr.status?.token, 'TokenRequest returned a token');
  return tr.status.token;
}

async function csrCall(token: string, hint = `spiffe://cluster.local/ns/${shop}/sa/pay`): Promise<CsrCallResult> {
  const { csrPem } = await createKeyAndCsr('ECDSA', hint);
  return callCreateCertificate({ address: secureAddr, rootPem, csrPem, token, ttlSeconds: 3600 });
}

function uriSans(certPem: string): string[] {
  const san = new X509Certificate(certPem).subjectAltName ?? '';
  return san
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.startsWith('URI:'))
    .map((s) => s.slice(4));
}

function refused(r: CsrCallResult, why: string): string {
  assert.equal(r.ok, false, withLogs(`${why}: the CSR was signed`));
  assert.ok(!r.ok);
  assert.equal(r.code, UNAUTHENTICATED, withLogs(`${why}: gRPC code ${r.code} (${r.details})`));
  return r.details;
}

describe('Kubernetes service-account tokens at the CSR service (TokenReview)', { skip }, () => {
  before(
    async () => {
      cluster = await startKubeCluster();
      core = cluster.clientNode.makeApiClient(CoreV1Api);
      await cluster.applyIstioCrds();
      systemNs = await cluster.namespace('istio-sys');
      shop = await cluster.namespace('shop');
      await core.createNamespacedServiceAccount({ namespace: shop, body: { metadata: { name: 'pay' } } });
      const creds = await meshpilotServiceAccount(cluster, systemNs);
      dir = tempDir('meshpilot-kube-identity-');
      const [port] = (await freePorts(1)) as [number];
      secureAddr = `127.0.0.1:${port}`;
      mp = await startMeshpilot({
        configDir: dir.path,
        args: ['--kubeconfig', creds.kubeconfigPath, '--secureGRPCAddr', secureAddr, '--caDir', path.join(dir.path, 'ca')],
        // The clients here dial istiod.istio-system.svc (istio-agent's default CA name); the serving cert names the test's namespace.
        env: { POD_NAMESPACE: systemNs, POD_NAME: 'istiod-identity-0', ISTIOD_CUSTOM_HOST: 'istiod.istio-system.svc' },
        readyTimeoutMs: 60_000,
      });
      // The root as workloads get it: the ConfigMap meshpilot publishes in their namespace.
      rootPem = await waitFor(
        async () =>
          (await core.readNamespacedConfigMap({ namespace: shop, name: 'istio-ca-root-cert' }).catch(() => undefined))?.data?.[
            'root-cert.pem'
          ],
        { timeoutMs: 20_000, description: `istio-ca-root-cert in ${shop}` },
      ).catch((e: Error) => assert.fail(withLogs(e.message)));
      assert.equal(rootPem, await readFile(path.join(dir.path, 'ca', 'root-cert.pem'), 'utf8'), "the published root is the CA's");
    },
    { timeout: KUBE_SETUP_TIMEOUT_MS },
  );

  after(async () => {
    const forbidden = mp?.logs().filter((l) => /forbidden/i.test(l.raw)) ?? [];
    const crashed = mp !== undefined && !mp.alive();
    const tail = mp?.tail(30);
    await mp?.stop();
    await dir?.remove();
    await cluster?.stop();
    if (crashed) assert.fail(`meshpilot exited during the tests\n${tail}`);
    assert.deepEqual(
      forbidden.map((l) => l.raw),
      [],
      "meshpilot, running as the manifest's ServiceAccount, was refused an API call",
    );
  });

  it('a TokenRequest token for ns/<shop>/sa/pay (audience istio-ca) gets a certificate for exactly that identity', async () => {
    const token = await tokenFor(shop, 'pay');
    const r = await csrCall(token);
    assert.ok(r.ok, withLogs(`CSR refused: ${r.ok ? '' : r.details}`));
    assert.deepEqual(uriSans(r.certChain[0]!), [`spiffe://cluster.local/ns/${shop}/sa/pay`]);
    // The chain verifies against the published root (openssl-equivalent check with node's X509).
    const leaf = new X509Certificate(r.certChain[0]!);
    assert.ok(leaf.checkIssued(new X509Certificate(rootPem)), 'leaf issued by the published root');
    // The CSR's own SAN is only a hint: asking for another identity still yields the reviewed one.
    const sneaky = await csrCall(token, 'spiffe://cluster.local/ns/kube-system/sa/admin');
    assert.ok(sneaky.ok, withLogs('CSR with another SAN hint refused'));
    assert.deepEqual(uriSans(sneaky.certChain[0]!), [`spiffe://cluster.local/ns/${shop}/sa/pay`]);
  });

  it('refuses a token issued for another audience', async () => {
    const details = refused(await csrCall(await tokenFor(shop, 'pay', ['not-istio'])), 'audience not-istio');
    assert.match(details, /token audiences \["not-istio"\] is invalid for the target audiences \["istio-ca"\]/);
  });

  it("refuses an expired token signed with the API server's own key (the same token with a future exp passes)", async () => {
    const real = await tokenFor(shop, 'pay');
    const apiServerKey = createPrivateKey(await readFile(path.join(cluster.dir, 'pki', 'sa.key')));
    const now = Math.floor(Date.now() / 1000);
    const valid = await csrCall(await resignedToken(real, apiServerKey, { iat: now - 60, exp: now + 600 }));
    assert.ok(valid.ok, withLogs(`control: the re-signed, unexpired token was refused: ${valid.ok ? '' : valid.details}`));
    const details = refused(await csrCall(await resignedToken(real, apiServerKey, { iat: now - 1800, exp: now - 600 })), 'expired token');
    assert.match(details, /expired/i);
  });

  it('refuses a token signed by a key the API server does not know', async () => {
    const real = await tokenFor(shop, 'pay');
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const now = Math.floor(Date.now() / 1000);
    refused(await csrCall(await resignedToken(real, privateKey, { iat: now - 60, exp: now + 600 })), 'foreign signing key');
  });

  it('refuses a token whose ServiceAccount was deleted after it was issued', async () => {
    await core.createNamespacedServiceAccount({ namespace: shop, body: { metadata: { name: 'gone' } } });
    const token = await tokenFor(shop, 'gone');
    const before = await csrCall(token, `spiffe://cluster.local/ns/${shop}/sa/gone`);
    assert.ok(before.ok, withLogs('control: the token was refused while its ServiceAccount existed'));
    await core.deleteNamespacedServiceAccount({ namespace: shop, name: 'gone' });
    // The API server's authenticator looks the account up in its informer cache: wait until it agrees.
    const auth = cluster.clientNode.makeApiClient(AuthenticationV1Api);
    await waitFor(
      async () => (await auth.createTokenReview({ body: { spec: { token, audiences: ['istio-ca'] } } })).status?.authenticated !== true,
      {
        timeoutMs: 15_000,
        description: "the API server to stop authenticating the deleted account's token",
      },
    );
    const details = refused(await csrCall(token, `spiffe://cluster.local/ns/${shop}/sa/gone`), 'deleted ServiceAccount');
    assert.match(details, /serviceaccounts "gone" not found/);
  });

  it('meshpilot agent with a TokenRequest token file gets certificate files for its identity', async () => {
    assert.ok(dir);
    const base = path.join(dir.path, 'agent');
    await mkdir(base, { recursive: true });
    const tokenFile = path.join(base, 'istio-token');
    await writeFile(tokenFile, await tokenFor(shop, 'pay'));
    const rootFile = path.join(base, 'root.pem');
    await writeFile(rootFile, rootPem);
    const out = path.join(base, 'certs');
    const env: Record<string, string | undefined> = { ...process.env, MESHPILOT_PARENT_WATCHDOG: '1' };
    for (const k of Object.keys(env))
      if (k === 'NODE_TEST_CONTEXT' || k.startsWith('GRPC_XDS') || k.startsWith('ISTIO_META')) delete env[k];
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '--import',
        PARENT_WATCHDOG_URL,
        MESHPILOT_CLI,
        'agent',
        '--mode',
        'grpc',
        '--xdsAddr',
        secureAddr,
        '--caRootCert',
        rootFile,
        '--tokenFile',
        tokenFile,
        '--outputDir',
        out,
        '--grpcBootstrap',
        path.join(base, 'grpc-bootstrap.json'),
        '--xdsSocket',
        path.join(base, 'XDS'),
        '--podName',
        'pay-0',
        '--namespace',
        shop,
        '--serviceAccount',
        'pay',
        '--podIp',
        '127.0.0.1',
        '--labels',
        'app=pay',
        '--secretTTL',
        '1h',
      ],
      { cwd: REPO_ROOT, env, stdio: ['pipe', 'ignore', 'pipe'] },
    );
    trackChild(child);
    const lines: string[] = [];
    createInterface({ input: child.stderr! }).on('line', (l) => lines.push(l));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    try {
      await waitFor(() => exists(path.join(out, 'cert-chain.pem')), { timeoutMs: 30_000, description: "the agent's cert-chain.pem" }).catch(
        (e: Error) => assert.fail(`${e.message}\n--- agent ---\n${lines.slice(-20).join('\n')}`),
      );
      assert.deepEqual(uriSans(await readFile(path.join(out, 'cert-chain.pem'), 'utf8')), [`spiffe://cluster.local/ns/${shop}/sa/pay`]);
    } finally {
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(t);
    }
  });

  it("logs no error while serving (every refusal above is the caller's, not meshpilot's)", () => {
    assert.ok(mp);
    const errors = mp.logs().filter((l) => levelOf(l) === 'error');
    assert.deepEqual(
      errors.map((l) => l.raw),
      [],
    );
  });
});
