/**
 * Sidecar injection against a real kube-apiserver + etcd, without the webhook server in between:
 * the pod the API server would send to /inject (a dry-run create returns it defaulted, exactly as
 * admission sees it) goes through meshpilot's injection handler with inputs watched from the
 * cluster (istio-sidecar-injector ConfigMap, Namespace labels); the JSON Patch is applied as the
 * API server applies it, and the injected pod must then be accepted by the API server's own
 * validation and come back with istio-proxy, istio-init and Istio's volumes.
 *
 * (The webhook wiring — the API server calling /inject over TLS — is test/e2e/kube-webhooks.test.ts.)
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api } from '@kubernetes/client-node';
import { injectionHandler } from '../../src/inject/index.js';
import { KubeInjectionInputs } from '../../src/inject/kube-inputs.js';
import type { JsonObject } from '../../src/inject/render.js';
import type { JsonPatchOp, JsonValue } from '../../src/util/json-patch.js';
import { applyJsonPatch } from '../../src/inject/test-support.js';
import { createLogger, type Logger } from '../../src/util/log.js';
import type { AdmissionRequest } from '../../src/webhooks/admission.js';
import { DEFAULT_INIT_ARGS } from '../support/cni/init-args.js';
import { adminRequest, KUBE_SETUP_TIMEOUT_MS, kubeSkipReason, startKubeCluster, type KubeCluster } from '../support/kube.js';
import { waitFor } from '../support/wait.js';

const skip = kubeSkipReason();

let cluster: KubeCluster;
let core: CoreV1Api;
let inputs: KubeInjectionInputs;
let systemNs: string;
let injectNs: string;
let plainNs: string;
const errors: string[] = [];

const logger: Logger = createLogger({
  level: 'info',
  sink: (line) => {
    if (process.env.INJECT_E2E_LOGS === '1') process.stderr.write(`${line}\n`);
    const rec = JSON.parse(line) as { level?: string; msg?: string };
    if (rec.level === 'error') errors.push(rec.msg ?? '');
  },
});

function rec(v: JsonValue | undefined): JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? v : {};
}

async function api(method: string, path: string, body?: unknown): Promise<JsonObject> {
  const res = await adminRequest(cluster.env, method, path, body);
  assert.ok(res.status >= 200 && res.status < 300, `${method} ${path}: ${res.status} ${res.body}`);
  return JSON.parse(res.body) as JsonObject;
}

function pod(name: string, labels: Record<string, string> = {}): JsonObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels: { app: 'web', ...labels }, annotations: { 'traffic.sidecar.istio.io/excludeOutboundPorts': '5432' } },
    spec: {
      // Set by the ServiceAccount admission plugin in a full cluster; this API server runs without it.
      serviceAccountName: 'default',
      containers: [
        {
          name: 'app',
          image: 'example/web:1',
          ports: [{ name: 'http', containerPort: 8080 }],
          readinessProbe: { httpGet: { path: '/ready', port: 'http' } },
        },
      ],
    },
  };
}

/** What the API server hands a mutating webhook for this create: the defaulted object. */
async function admissionObject(namespace: string, body: JsonObject): Promise<JsonObject> {
  return api('POST', `/api/v1/namespaces/${namespace}/pods?dryRun=All`, body);
}

function request(namespace: string, object: JsonObject): AdmissionRequest {
  return {
    uid: 'e2e',
    kind: { group: '', version: 'v1', kind: 'Pod' },
    resource: { group: '', version: 'v1', resource: 'pods' },
    namespace,
    operation: 'CREATE',
    object,
  };
}

function names(p: JsonObject, field: 'containers' | 'initContainers'): string[] {
  const list = rec(p.spec)[field];
  return Array.isArray(list) ? list.map((c) => String(rec(c).name)) : [];
}

describe('sidecar injection with inputs from a real API server', { skip }, () => {
  const handler = (): ReturnType<typeof injectionHandler> => injectionHandler(inputs.injectionOptions({ logger }));

  before(
    async () => {
      cluster = await startKubeCluster();
      core = cluster.clientNode.makeApiClient(CoreV1Api);
      systemNs = await cluster.namespace('mesh-system');
      injectNs = await cluster.namespace('injected', { 'istio-injection': 'enabled' });
      plainNs = await cluster.namespace('plain');
      for (const ns of [injectNs, plainNs])
        await api('POST', `/api/v1/namespaces/${ns}/serviceaccounts`, { metadata: { name: 'default' } });
      inputs = new KubeInjectionInputs({
        kubeConfig: cluster.kubeConfig,
        logger,
        namespace: systemNs,
        revision: '',
        nativeSidecars: 'false',
        env: {},
      });
      await inputs.start();
    },
    { timeout: KUBE_SETUP_TIMEOUT_MS },
  );

  after(async () => {
    await inputs?.stop();
    await cluster?.stop();
  });

  it('a Pod in an istio-injection=enabled namespace: the patch is accepted by the API server and the pod has its sidecar', async () => {
    const sent = await admissionObject(injectNs, pod('web-1'));
    const res = await handler()(request(injectNs, sent));
    assert.equal(res.allowed, true, JSON.stringify(res.status));
    assert.equal(res.patchType, 'JSONPatch');
    const ops = JSON.parse(Buffer.from(res.patch ?? '', 'base64').toString('utf8')) as JsonPatchOp[];
    const injected = applyJsonPatch(sent, ops) as JsonObject;
    // Create it for real: the API server validates every field the templates wrote.
    const stored = await api('POST', `/api/v1/namespaces/${injectNs}/pods`, injected);
    assert.deepEqual(names(stored, 'containers'), ['app', 'istio-proxy']);
    assert.deepEqual(names(stored, 'initContainers'), ['istio-init']);
    const spec = rec(stored.spec);
    const volumes = Object.fromEntries((spec.volumes as JsonObject[]).map((v) => [String(v.name), v]));
    // Istio's template leaves some volume sources empty: the API server defaults them to emptyDir.
    assert.deepEqual(volumes['workload-socket'], { name: 'workload-socket', emptyDir: {} });
    assert.equal(rec(rec(rec(volumes['istio-token']).projected).sources as JsonValue) !== undefined, true);
    assert.deepEqual(rec(volumes['istiod-ca-cert']).configMap, { name: 'istio-ca-root-cert', defaultMode: 420 });
    const init = (spec.initContainers as JsonObject[])[0] ?? {};
    // The default command line with the pod's excluded outbound port (-o) before the log flag.
    assert.deepEqual((init.args as string[]).slice(0, 19), [...DEFAULT_INIT_ARGS.slice(0, -1), '-o', '5432']);
    const proxy = (spec.containers as JsonObject[])[1] ?? {};
    const env = Object.fromEntries((proxy.env as JsonObject[]).map((e) => [String(e.name), e.value ?? null]));
    assert.equal(env.CA_ADDR, 'istiod.istio-system.svc:15012');
    assert.equal(rec(rec(proxy.readinessProbe).httpGet).port, 15021);
    // The app's probe now goes through the agent.
    assert.deepEqual(rec(rec((spec.containers as JsonObject[])[0]).readinessProbe).httpGet, {
      path: '/app-health/app/readyz',
      port: 15020,
      scheme: 'HTTP',
    });
    const meta = rec(stored.metadata);
    assert.equal(rec(meta.labels)['security.istio.io/tlsMode'], 'istio');
    assert.ok(String(rec(meta.annotations)['sidecar.istio.io/status']).includes('"containers":["istio-proxy"]'));
  });

  it('a pod labelled sidecar.istio.io/inject: "false", and a pod in an unlabelled namespace, are allowed unchanged', async () => {
    const off = await admissionObject(injectNs, pod('web-off', { 'sidecar.istio.io/inject': 'false' }));
    assert.deepEqual(await handler()(request(injectNs, off)), { uid: 'e2e', allowed: true });
    const plain = await admissionObject(plainNs, pod('web-2'));
    assert.deepEqual(await handler()(request(plainNs, plain)), { uid: 'e2e', allowed: true });
  });

  it('a namespace labelled with a revision tag that points at this revision (istio-revision-tag-<tag>) is injected', async () => {
    const tagged = await cluster.namespace('tagged', { 'istio.io/rev': 'prod' });
    const sent = await admissionObject(tagged, pod('web-tag'));
    assert.deepEqual(await handler()(request(tagged, sent)), { uid: 'e2e', allowed: true }, 'no tag yet: not ours');
    // As `istioctl tag set prod --revision default` creates it (a webhook that matches nothing here, so it never blocks this test).
    await api('POST', '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations', {
      metadata: { name: 'istio-revision-tag-prod', labels: { 'istio.io/tag': 'prod', 'istio.io/rev': 'default' } },
      webhooks: [
        {
          name: 'rev.namespace.sidecar-injector.istio.io',
          clientConfig: { url: 'https://127.0.0.1:1/inject' },
          rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
          objectSelector: { matchLabels: { 'never-matches': 'true' } },
          failurePolicy: 'Ignore',
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
        },
      ],
    });
    const res = await waitFor(
      async () => {
        const r = await handler()(request(tagged, sent));
        return r.patch !== undefined ? r : undefined;
      },
      { timeoutMs: 10_000, description: 'the tag seen and the pod injected' },
    );
    assert.equal(res.allowed, true);
    assert.deepEqual(inputs.revisionTags(), ['prod']);
  });

  it('follows the istio-sidecar-injector ConfigMap: a new template applies, a broken one is refused and the last good one kept', async () => {
    const template = [
      'metadata:',
      '  labels:',
      '    injected-by: custom-{{ .Revision | default "default" }}',
      'spec:',
      '  containers:',
      '  - name: istio-proxy',
      '    image: "{{ .Values.global.hub }}/custom-proxy:{{ .Values.global.tag }}"',
      '    args: ["--discovery", "{{ .ProxyConfig.DiscoveryAddress }}"]',
    ].join('\n');
    const data = {
      config: `policy: enabled\ntemplates:\n  sidecar: |\n${template
        .split('\n')
        .map((l) => `    ${l}`)
        .join('\n')}\n`,
      values: JSON.stringify({ global: { hub: 'registry.example', tag: '9.9' } }),
    };
    await core.createNamespacedConfigMap({ namespace: systemNs, body: { metadata: { name: 'istio-sidecar-injector' }, data } });
    const sent = await admissionObject(injectNs, pod('web-3'));
    const injected = await waitFor(
      async () => {
        const res = await handler()(request(injectNs, sent));
        const p = applyJsonPatch(sent, JSON.parse(Buffer.from(res.patch ?? '', 'base64').toString('utf8')) as JsonPatchOp[]) as JsonObject;
        return rec(rec(p.metadata).labels)['injected-by'] === 'custom-default' ? p : undefined;
      },
      { timeoutMs: 10_000, description: 'the ConfigMap template in use' },
    );
    const proxy = (rec(injected.spec).containers as JsonObject[]).find((c) => c.name === 'istio-proxy') ?? {};
    assert.equal(proxy.image, 'registry.example/custom-proxy:9.9');
    assert.deepEqual(proxy.args, ['--discovery', 'istiod.istio-system.svc:15012']);
    await api('POST', `/api/v1/namespaces/${injectNs}/pods`, injected);

    await core.replaceNamespacedConfigMap({
      name: 'istio-sidecar-injector',
      namespace: systemNs,
      body: { metadata: { name: 'istio-sidecar-injector' }, data: { config: 'templates:\n  sidecar: "{{ if }}"\n' } },
    });
    await waitFor(
      () => errors.some((e) => e.includes('injection template "sidecar"') && e.includes('keeping the previous injector configuration')),
      {
        timeoutMs: 10_000,
        description: 'the broken template reported',
      },
    );
    const again = await handler()(request(injectNs, await admissionObject(injectNs, pod('web-4'))));
    assert.equal(again.allowed, true);
    assert.ok(
      Buffer.from(again.patch ?? '', 'base64')
        .toString('utf8')
        .includes('custom-proxy'),
      'the last good template still serves',
    );
  });
});
