/**
 * Against a real kube-apiserver + etcd: meshpilot's admission webhooks.
 *
 * meshpilot runs as a child (`discovery --kubeconfig`, --httpsAddr on a free loopback port,
 * ISTIOD_CUSTOM_HOST=127.0.0.1 so its serving certificate carries the IP the API server dials).
 * The test installs webhook configurations the way Istio's chart does — labelled
 * `istio.io/rev: default`, caBundle EMPTY — and the API server calls meshpilot over verified TLS only
 * once meshpilot's patcher has written its CA's bundle there. Then, as `kubectl apply` would (the
 * same REST calls, through client-node): an invalid VirtualService is refused with meshpilot's
 * message, a valid one is created; Pods in an `istio-injection=enabled` namespace get istio-proxy +
 * istio-init from /inject, one labelled `sidecar.istio.io/inject: "false"` and one in an unlabelled
 * namespace do not.
 *
 * A second part runs the caBundle patcher in this process against the same API server, to show what
 * the child cannot: a trust bundle change (root rotation) is patched in without a restart.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { after, before, describe, it } from 'node:test';
import {
  AdmissionregistrationV1Api,
  ApiException,
  CoreV1Api,
  type V1MutatingWebhookConfiguration,
  type V1Pod,
  type V1ValidatingWebhookConfiguration,
} from '@kubernetes/client-node';
import { createLogger } from '../../src/util/log.js';
import { INJECTION_WEBHOOK_SUFFIX, webhookCaBundleTask } from '../../src/webhooks/ca-bundle-patcher.js';
import { IstioClient, type IstioObject } from '../support/kube-objects.js';
import { KUBE_SETUP_TIMEOUT_MS, kubeSkipReason, meshpilotServiceAccount, startKubeCluster, type KubeCluster } from '../support/kube.js';
import { startMeshpilot, type Meshpilot } from '../support/meshpilot-process.js';
import { freePort } from '../support/ports.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

const skip = kubeSkipReason();

let cluster: KubeCluster;
let admission: AdmissionregistrationV1Api;
let core: CoreV1Api;
let istio: IstioClient;
let mp: Meshpilot | undefined;
let dir: TempDir | undefined;
let systemNs: string;
let ns: string;
let port: number;
let injectWired = false;
const validatorName = (): string => `istio-validator-${systemNs}`;
const created: { kind: 'validating' | 'mutating'; name: string }[] = [];

function withLogs(msg: string): string {
  return `${msg}\n--- meshpilot stderr tail ---\n${mp?.tail(30) ?? '(not running)'}`;
}

/** The Status message of a refused API call (what kubectl prints after "Error from server"). */
function apiError(err: unknown): { code: number; message: string } {
  if (!(err instanceof ApiException)) throw err;
  const body = typeof err.body === 'string' ? err.body : JSON.stringify(err.body);
  let message = body;
  try {
    message = (JSON.parse(body) as { message?: string }).message ?? body;
  } catch {
    // not JSON: keep the text
  }
  return { code: err.code, message };
}

const b64 = (s: string): string => Buffer.from(s).toString('base64');

/** Does a TLS connection to meshpilot's webhook port verify against this PEM bundle (as the API server would)? */
function verifiesWith(caPem: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/httpsReady', ca: caPem, agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.end();
  });
}

function virtualService(name: string, spec: Record<string, unknown>): IstioObject {
  return { apiVersion: 'networking.istio.io/v1', kind: 'VirtualService', metadata: { name, namespace: ns }, spec };
}

async function validatingCaBundle(name: string): Promise<string[]> {
  const c = await admission.readValidatingWebhookConfiguration({ name });
  return (c.webhooks ?? []).map((w) => w.clientConfig.caBundle ?? '');
}

async function mutatingCaBundle(name: string): Promise<string[]> {
  const c = await admission.readMutatingWebhookConfiguration({ name });
  return (c.webhooks ?? []).map((w) => w.clientConfig.caBundle ?? '');
}

function validatorConfig(name: string, revision: string, path = '/validate'): V1ValidatingWebhookConfiguration {
  return {
    metadata: { name, labels: { app: 'istiod', 'istio.io/rev': revision } },
    webhooks: [
      {
        name: 'rev.validation.istio.io',
        // caBundle left out: "patched at runtime when the webhook is ready", as Istio's chart ships it.
        clientConfig: { url: `https://127.0.0.1:${port}${path}` },
        rules: [
          {
            operations: ['CREATE', 'UPDATE'],
            apiGroups: ['security.istio.io', 'networking.istio.io', 'telemetry.istio.io', 'extensions.istio.io'],
            apiVersions: ['*'],
            resources: ['*'],
          },
        ],
        // This test's namespaces only (the system one gets meshpilot's dry-run probe Gateway); other
        // revisions' configurations below match nothing, so they never block anything.
        namespaceSelector: {
          matchExpressions: [
            { key: 'kubernetes.io/metadata.name', operator: 'In', values: revision === 'default' ? [ns, systemNs] : ['no-such-namespace'] },
          ],
        },
        // Fail open until meshpilot has shown it refuses invalid config, as Istio's chart ships it.
        failurePolicy: 'Ignore',
        sideEffects: 'None',
        admissionReviewVersions: ['v1', 'v1beta1'],
        timeoutSeconds: 10,
      },
    ],
  };
}

function injectorConfig(): V1MutatingWebhookConfiguration {
  return {
    metadata: { name: 'istio-sidecar-injector', labels: { app: 'sidecar-injector', 'istio.io/rev': 'default' } },
    webhooks: [
      {
        name: 'namespace.sidecar-injector.istio.io',
        clientConfig: { url: `https://127.0.0.1:${port}/inject` },
        rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
        namespaceSelector: { matchLabels: { 'istio-injection': 'enabled' } },
        failurePolicy: 'Fail',
        sideEffects: 'None',
        reinvocationPolicy: 'Never',
        admissionReviewVersions: ['v1', 'v1beta1'],
      },
      {
        // Not Istio's (name suffix): its caBundle is not ours to write. It matches no object.
        name: 'audit.example.io',
        clientConfig: { url: `https://127.0.0.1:${port}/elsewhere` },
        rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
        objectSelector: { matchLabels: { 'never-matches': 'true' } },
        failurePolicy: 'Ignore',
        sideEffects: 'None',
        admissionReviewVersions: ['v1'],
      },
    ],
  };
}

describe('meshpilot admission webhooks on a real Kubernetes API server', { skip }, () => {
  before(
    async () => {
      cluster = await startKubeCluster();
      await cluster.applyIstioCrds();
      admission = cluster.clientNode.makeApiClient(AdmissionregistrationV1Api);
      core = cluster.clientNode.makeApiClient(CoreV1Api);
      istio = new IstioClient(cluster.clientNode);
      systemNs = await cluster.namespace('mesh-system');
      ns = await cluster.namespace('shop');
      dir = tempDir();
      port = await freePort();
      mp = await startMeshpilot({
        configDir: dir.path,
        // As the RBAC manifest's istiod ServiceAccount, not cluster-admin.
        args: ['--kubeconfig', (await meshpilotServiceAccount(cluster, systemNs)).kubeconfigPath, '--httpsAddr', `127.0.0.1:${port}`],
        env: { POD_NAMESPACE: systemNs, ISTIOD_CUSTOM_HOST: '127.0.0.1' },
        readyTimeoutMs: 60_000,
      });
      const listening = await mp.waitForLog((l) => l.json?.msg === 'webhook server listening (HTTPS)', {
        description: 'webhook server listening',
      });
      injectWired = listening.json?.inject === true;
    },
    { timeout: KUBE_SETUP_TIMEOUT_MS },
  );

  after(async () => {
    // A Fail-policy webhook whose server is gone blocks every matching request: remove them first.
    for (const c of created) {
      await (
        c.kind === 'validating'
          ? admission.deleteValidatingWebhookConfiguration({ name: c.name })
          : admission.deleteMutatingWebhookConfiguration({ name: c.name })
      ).catch(() => {});
    }
    const crashed = mp !== undefined && !mp.alive();
    const tail = mp?.tail(30);
    await mp?.stop();
    await dir?.remove();
    await cluster?.stop();
    assert.ok(!crashed, `meshpilot died during the test:\n${tail}`);
  });

  it("patches the CA bundle into the validating configuration it owns (label istio.io/rev=default), not into another revision's; then fails closed", async () => {
    await admission.createValidatingWebhookConfiguration({ body: validatorConfig(validatorName(), 'default') });
    created.push({ kind: 'validating', name: validatorName() });
    await admission.createValidatingWebhookConfiguration({ body: validatorConfig('istio-validator-canary-elsewhere', 'canary') });
    created.push({ kind: 'validating', name: 'istio-validator-canary-elsewhere' });
    const [bundle] = await waitFor(
      async () => {
        const b = await validatingCaBundle(validatorName());
        return b[0] ? b : undefined;
      },
      { timeoutMs: 20_000, description: withLogs('caBundle patched into the validating webhook') },
    );
    const pem = Buffer.from(bundle!, 'base64').toString('utf8');
    assert.match(pem, /^-----BEGIN CERTIFICATE-----/);
    assert.ok(await verifiesWith(pem), 'the patched bundle verifies the serving certificate at the URL the API server dials');
    assert.ok(!(await verifiesWith(readFileSync(cluster.env.KUBE_CA_FILE ?? '', 'utf8'))), 'and another CA does not');
    // istiod's controller: once a dry-run invalid Gateway is refused through the API server, Ignore becomes Fail.
    await waitFor(
      async () => (await admission.readValidatingWebhookConfiguration({ name: validatorName() })).webhooks?.[0]?.failurePolicy === 'Fail',
      {
        timeoutMs: 20_000,
        description: withLogs('failurePolicy switched to Fail'),
      },
    );
    await mp!.waitForLog((l) => l.json?.msg === 'endpoint rejected invalid config: switching validation to fail-close', {
      description: 'the switch logged',
    });
    const canary = await admission.readValidatingWebhookConfiguration({ name: 'istio-validator-canary-elsewhere' });
    assert.deepEqual(
      canary.webhooks?.map((w) => [w.clientConfig.caBundle ?? '', w.failurePolicy]),
      [['', 'Ignore']],
      "a canary revision's configuration is left alone",
    );
  });

  it("refuses an invalid VirtualService with meshpilot's message, as kubectl apply would see it", async () => {
    const bad = virtualService('bad-regex', {
      hosts: ['web'],
      http: [{ match: [{ uri: { regex: '(' } }], route: [{ destination: { host: 'web' } }] }],
    });
    // The API server picks up a webhook configuration change asynchronously: poll until our answer is the one it relays.
    const refusal = await waitFor(
      async () => {
        try {
          await istio.create(bad);
          await istio.delete('VirtualService', ns, 'bad-regex');
          throw new Error('created: the webhook did not refuse it');
        } catch (err) {
          const e = apiError(err);
          return e.message.includes('denied the request') ? e : undefined;
        }
      },
      { timeoutMs: 20_000, description: withLogs('the invalid VirtualService refused by the webhook') },
    );
    assert.equal(
      refusal.message,
      'admission webhook "rev.validation.istio.io" denied the request: configuration is invalid: spec.http[0].match[0].uri.regex: error parsing regexp: missing closing ): `(`; Istio uses RE2 style regex-based match (https://github.com/google/re2/wiki/Syntax)',
    );
    // istiod sets no status.code on a denial, nor does meshpilot: the API server answers 400 (kubectl: "Error from server (BadRequest)").
    assert.equal(refusal.code, 400);
    await mp!.waitForLog((l) => l.json?.msg === 'configuration is invalid' && String(l.json.object).includes('bad-regex'), {
      description: "the denial in meshpilot's log",
    });
    const metrics = await (await fetch(`http://${mp!.monitoringAddr}/metrics`)).text();
    assert.match(
      metrics,
      /galley_validation_failed\{group="networking.istio.io",version="v1",resource="virtualservices",reason="invalid_resource"\} [1-9]/,
    );
  });

  it('admits a valid VirtualService, and an UPDATE that breaks it is refused', async () => {
    await istio.create(virtualService('web', { hosts: ['web'], http: [{ route: [{ destination: { host: 'web' } }] }] }));
    await assert.rejects(
      istio.patch('VirtualService', ns, 'web', [{ op: 'replace', path: '/spec/http/0/route/0/weight', value: -5 }]),
      (err: unknown) =>
        apiError(err).message.endsWith('denied the request: configuration is invalid: spec.http[0].route[0].weight: weight -5 < 0'),
    );
  });

  it('re-patches the caBundle when someone else changes it', async () => {
    const [ours] = await validatingCaBundle(validatorName());
    const other = b64(readFileSync(cluster.env.KUBE_CA_FILE ?? '', 'utf8'));
    await admission.patchValidatingWebhookConfiguration({
      name: validatorName(),
      body: [{ op: 'replace', path: '/webhooks/0/clientConfig/caBundle', value: other }],
    });
    await waitFor(async () => (await validatingCaBundle(validatorName()))[0] === ours, {
      timeoutMs: 20_000,
      description: withLogs('the caBundle restored'),
    });
  });

  it("patches the injector configuration's *sidecar-injector.istio.io webhooks only", async () => {
    await admission.createMutatingWebhookConfiguration({ body: injectorConfig() });
    created.push({ kind: 'mutating', name: 'istio-sidecar-injector' });
    const [ours] = await validatingCaBundle(validatorName());
    await waitFor(async () => (await mutatingCaBundle('istio-sidecar-injector'))[0] === ours, {
      timeoutMs: 20_000,
      description: withLogs('caBundle patched into the injector'),
    });
    assert.deepEqual((await mutatingCaBundle('istio-sidecar-injector'))[1], '', "audit.example.io is not Istio's");
  });

  describe('sidecar injection through /inject', () => {
    let injectNs: string;
    let plainNs: string;
    const pod = (name: string, labels: Record<string, string> = {}): V1Pod => ({
      metadata: { name, labels: { app: 'web', ...labels } },
      // Named explicitly: this API server runs without the ServiceAccount admission plugin, which would
      // set `default` (the injected istio-token volume needs a service account).
      spec: { serviceAccountName: 'web', containers: [{ name: 'app', image: 'example/web', ports: [{ containerPort: 8080 }] }] },
    });
    /** Creates a pod; a refusal becomes an error carrying the API server's message. */
    const createPod = async (namespace: string, body: V1Pod): Promise<V1Pod> => {
      try {
        return await core.createNamespacedPod({ namespace, body });
      } catch (err) {
        const e = apiError(err);
        throw new Error(`pod ${namespace}/${body.metadata?.name ?? ''} refused (${e.code}): ${e.message}`, { cause: err });
      }
    };
    const containerNames = (p: V1Pod): { containers: string[]; init: string[] } => ({
      containers: (p.spec?.containers ?? []).map((c) => c.name),
      init: (p.spec?.initContainers ?? []).map((c) => c.name),
    });

    before(async () => {
      assert.ok(injectWired, withLogs('meshpilot logged inject: false — /inject is not wired to the sidecar injector'));
      injectNs = await cluster.namespace('injected', { 'istio-injection': 'enabled' });
      plainNs = await cluster.namespace('plain');
    });

    it('a Pod created in an istio-injection=enabled namespace gets istio-proxy and istio-init', async () => {
      // Injection may race the caBundle patch of the previous test by a few ms: poll the first create.
      const created = await waitFor(async () => createPod(injectNs, pod('web-1')), {
        timeoutMs: 20_000,
        description: withLogs('the first pod created through the injector'),
      });
      const names = containerNames(created);
      assert.ok(names.containers.includes('app'), JSON.stringify(names));
      assert.ok(names.init.includes('istio-init'), JSON.stringify(names));
      // istio-proxy is a container, or a native sidecar (an init container that keeps running) where
      // ENABLE_NATIVE_SIDECARS=auto finds the nodes new enough (this cluster has none).
      const nativeProxy = created.spec?.initContainers?.find((c) => c.name === 'istio-proxy');
      assert.ok(names.containers.includes('istio-proxy') || nativeProxy?.restartPolicy === 'Always', JSON.stringify(names));
      // The injector records what it added (istiod's sidecar.istio.io/status).
      const status = JSON.parse(created.metadata?.annotations?.['sidecar.istio.io/status'] ?? '{}') as {
        initContainers?: string[] | null;
        containers?: string[] | null;
      };
      assert.deepEqual([...(status.initContainers ?? []), ...(status.containers ?? [])].sort(), ['istio-init', 'istio-proxy']);
    });

    it('a Pod labelled sidecar.istio.io/inject: "false" is not injected', async () => {
      const created = await createPod(injectNs, pod('web-off', { 'sidecar.istio.io/inject': 'false' }));
      assert.deepEqual(containerNames(created), { containers: ['app'], init: [] });
    });

    it('a Pod in a namespace without the label is not injected', async () => {
      const created = await createPod(plainNs, pod('web-2'));
      assert.deepEqual(containerNames(created), { containers: ['app'], init: [] });
    });
  });

  describe('caBundle patcher in process: a trust bundle change is patched in without a restart', () => {
    it("follows onCaBundleChange, with the child's patcher not owning this revision", async () => {
      const name = 'istio-validator-rotation';
      const body = validatorConfig(name, 'rotation-test');
      await admission.createValidatingWebhookConfiguration({ body });
      created.push({ kind: 'validating', name });
      let bundle = '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n';
      const listeners = new Set<() => void>();
      const stop = new AbortController();
      const task = webhookCaBundleTask({
        kubeConfig: cluster.kubeConfig,
        logger: createLogger({ level: 'warn' }),
        revision: 'rotation-test',
        targets: [
          { kind: 'ValidatingWebhookConfiguration', name: 'unused' },
          { kind: 'MutatingWebhookConfiguration', name: 'unused', webhookSuffix: INJECTION_WEBHOOK_SUFFIX },
        ],
        caBundlePem: () => bundle,
        onCaBundleChange: (l) => {
          listeners.add(l);
          return () => listeners.delete(l);
        },
      });
      const running = task(stop.signal);
      try {
        await waitFor(async () => (await validatingCaBundle(name))[0] === b64(bundle), {
          timeoutMs: 20_000,
          description: 'first bundle patched',
        });
        bundle = '-----BEGIN CERTIFICATE-----\nBBBB\n-----END CERTIFICATE-----\n';
        for (const l of listeners) l();
        await waitFor(async () => (await validatingCaBundle(name))[0] === b64(bundle), {
          timeoutMs: 20_000,
          description: 'rotated bundle patched',
        });
        assert.deepEqual(
          await mutatingCaBundle('istio-sidecar-injector').then((b) => b[0] !== b64(bundle)),
          true,
          "the default revision's injector is not this patcher's",
        );
      } finally {
        stop.abort();
        await running;
      }
      assert.equal(listeners.size, 0, 'the task unsubscribed when stopped');
    });
  });
});
