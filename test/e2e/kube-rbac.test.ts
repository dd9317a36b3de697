/**
 * What meshpilot does when its RBAC is short of a permission — it must say so,
 * clearly, at error level, naming the permission (the other Kubernetes e2e tests fail on any
 * "forbidden" line while running with the full manifest).
 *
 * meshpilot runs with manifests/rbac/meshpilot-rbac.yaml minus two rules (tokenreviews create;
 * configmaps create): the CSR service refuses a valid token with the API server's 403 in the
 * details and logs "TokenReview forbidden …"; the root-cert publisher logs "forbidden to create
 * ConfigMap istio-ca-root-cert …". A reflector (list + watch) without the right logs its 403 the
 * same way; the lease elector too.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, type V1Node } from '@kubernetes/client-node';
import { createKeyAndCsr } from '../../src/agent/csr.js';
import { Reflector } from '../../src/config/sources/kube/index.js';
import { startLeaderElection } from '../../src/leader/leader-election.js';
import { callCreateCertificate } from '../../src/security/csr/test-client.js';
import { createLogger } from '../../src/util/log.js';
import {
  KUBE_SETUP_TIMEOUT_MS,
  kubeSkipReason,
  meshpilotServiceAccount,
  serviceAccountCredentials,
  startKubeCluster,
  type KubeCluster,
  type RbacDocument,
} from '../support/kube.js';
import { levelOf, startMeshpilot, type Meshpilot } from '../support/meshpilot-process.js';
import { freePorts } from '../support/ports.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

const skip = kubeSkipReason();

let cluster: KubeCluster;
let core: CoreV1Api;
let mp: Meshpilot | undefined;
let dir: TempDir | undefined;
let systemNs: string;
let shop: string;
let secureAddr: string;

/** The manifest without the tokenreviews rule and without "create" on configmaps. */
function withoutTokenReviewAndCreate(doc: RbacDocument): RbacDocument {
  if (doc.kind !== 'ClusterRole') return doc;
  return {
    ...doc,
    rules: (doc.rules ?? []).filter(
      (r) =>
        !(r.resources ?? []).includes('tokenreviews') &&
        !((r.resources ?? []).includes('configmaps') && (r.verbs ?? []).includes('create')),
    ),
  };
}

const errorLines = (mp: Meshpilot, re: RegExp): string[] =>
  mp
    .logs()
    .filter((l) => levelOf(l) === 'error' && re.test(String(l.json?.msg ?? '')))
    .map((l) => l.raw);

describe('meshpilot with a permission missing from its RBAC', { skip }, () => {
  before(
    async () => {
      cluster = await startKubeCluster();
      core = cluster.clientNode.makeApiClient(CoreV1Api);
      systemNs = await cluster.namespace('istio-sys');
      shop = await cluster.namespace('shop');
      await core.createNamespacedServiceAccount({ namespace: shop, body: { metadata: { name: 'pay' } } });
      const creds = await meshpilotServiceAccount(cluster, systemNs, withoutTokenReviewAndCreate);
      dir = tempDir('meshpilot-kube-rbac-');
      const [port] = (await freePorts(1)) as [number];
      secureAddr = `127.0.0.1:${port}`;
      mp = await startMeshpilot({
        configDir: dir.path,
        args: ['--kubeconfig', creds.kubeconfigPath, '--secureGRPCAddr', secureAddr, '--caDir', path.join(dir.path, 'ca')],
        env: { POD_NAMESPACE: systemNs, POD_NAME: 'istiod-rbac-0', ISTIOD_CUSTOM_HOST: 'istiod.istio-system.svc' },
        readyTimeoutMs: 60_000,
      });
    },
    { timeout: KUBE_SETUP_TIMEOUT_MS },
  );

  after(async () => {
    await mp?.stop();
    await dir?.remove();
    await cluster?.stop();
  });

  it('the root-cert publisher logs that it may not create ConfigMaps, naming the namespace', async () => {
    assert.ok(mp);
    const line = await mp.waitForLog(
      (l) => levelOf(l) === 'error' && /forbidden to create ConfigMap istio-ca-root-cert/.test(String(l.json?.msg)),
      { timeoutMs: 15_000, description: 'the forbidden create' },
    );
    assert.match(String(line.json?.msg), /needs create, update on configmaps/);
    assert.equal(line.json?.status, 403);
    assert.equal(typeof line.json?.namespace, 'string');
    assert.equal(
      await core.readNamespacedConfigMap({ namespace: shop, name: 'istio-ca-root-cert' }).then(
        () => 'exists',
        () => 'absent',
      ),
      'absent',
    );
  });

  it('a valid token is refused with the 403 in the details, and meshpilot logs the missing tokenreviews permission', async () => {
    assert.ok(mp);
    const tr = await core.createNamespacedServiceAccountToken({
      namespace: shop,
      name: 'pay',
      body: { spec: { audiences: ['istio-ca'], expirationSeconds: 600 } },
    });
    const rootPem = await import('node:fs/promises').then((fs) => fs.readFile(path.join(dir!.path, 'ca', 'root-cert.pem'), 'utf8'));
    const { csrPem } = await createKeyAndCsr('ECDSA', `spiffe://cluster.local/ns/${shop}/sa/pay`);
    const r = await callCreateCertificate({ address: secureAddr, rootPem, csrPem, token: tr.status?.token ?? '' });
    assert.equal(r.ok, false, 'signed without a TokenReview');
    assert.match(r.ok ? '' : r.details, /TokenReview request failed \(HTTP 403\)/);
    const lines = await waitFor(() => errorLines(mp!, /TokenReview forbidden/), {
      timeoutMs: 5_000,
      description: 'the TokenReview error line',
    });
    assert.match(lines[0] ?? '', /needs \\?"create\\?" on tokenreviews.authentication.k8s.io/);
  });

  it('a reflector and the lease elector without rights log their 403 at error level, naming what is missing', async () => {
    await core.createNamespacedServiceAccount({ namespace: shop, body: { metadata: { name: 'nobody' } } });
    const nobody = await serviceAccountCredentials(cluster, shop, 'nobody');
    const lines: Record<string, unknown>[] = [];
    const log = createLogger({ level: 'debug', sink: (l) => lines.push(JSON.parse(l) as Record<string, unknown>) });
    const nodes = new Reflector<V1Node>({
      name: 'nodes',
      kubeConfig: nobody.kubeConfig,
      targets: [{ path: '/api/v1/nodes' }],
      logger: log,
      onBatch: () => {},
      backoff: { initialMs: 50, maxMs: 200 },
    });
    void nodes.start();
    const le = startLeaderElection({
      kubeConfig: nobody.kubeConfig,
      namespace: shop,
      name: 'istio-leader',
      identity: 'x',
      leaseDurationMs: 3000,
      renewDeadlineMs: 2000,
      retryPeriodMs: 200,
      logger: log,
      onStartedLeading: () => {},
    });
    try {
      await waitFor(
        () =>
          lines.some(
            (l) => l.level === 'error' && /forbidden — meshpilot's service account needs list and watch on nodes/.test(String(l.msg)),
          ),
        { timeoutMs: 5_000, description: "the reflector's forbidden line" },
      );
      await waitFor(
        () =>
          lines.some(
            (l) =>
              l.level === 'error' &&
              /forbidden to read the Lease; .*needs get, create and update on leases.coordination.k8s.io/.test(String(l.msg)),
          ),
        { timeoutMs: 5_000, description: "the elector's forbidden line" },
      );
      assert.equal(le.isLeader(), false);
    } finally {
      await Promise.all([nodes.stop(), le.stop()]);
    }
  });
});
