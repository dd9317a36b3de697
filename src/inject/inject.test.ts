import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { parse as parseYaml } from 'yaml';
import { updatingGolden } from '../../test/support/golden.js';
import { DEFAULT_INIT_ARGS } from '../../test/support/cni/init-args.js';
import { parseIptablesFlags } from '../cni/iptables/flags.js';
import { marshalYaml } from '../template/index.js';
import type { AdmissionRequest } from '../webhooks/admission.js';
import { builtinInjector, type InjectorConfig } from './config.js';
import { injectEnvsFromPath, injectionHandler } from './handler.js';
import { deployMetaFromPod, injectPod, type InjectionConfig } from './inject.js';
import { injectorSnapshot } from './injector-source.js';
import type { JsonPatchOp, JsonValue } from '../util/json-patch.js';
import { defaultMeshConfig, meshConfigFromYaml } from './mesh.js';
import { CompiledTemplates, type JsonObject } from './render.js';
import { applyJsonPatch } from './test-support.js';

const TESTDATA = path.resolve(import.meta.dirname, '../../testdata/inject');
const reviewsPod = (): JsonObject => JSON.parse(readFileSync(path.join(TESTDATA, 'reviews-pod.json'), 'utf8')) as JsonObject;

function config(over: Partial<InjectionConfig> = {}): InjectionConfig {
  const { config: injector, values } = builtinInjector();
  return {
    injector,
    templates: new CompiledTemplates(injector, {}),
    values,
    mesh: defaultMeshConfig(),
    revision: '',
    nativeSidecars: false,
    ...over,
  };
}

function rec(v: JsonValue | undefined): JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? v : {};
}

function containers(pod: JsonObject, field: 'containers' | 'initContainers' = 'containers'): JsonObject[] {
  const l = rec(pod.spec)[field];
  return Array.isArray(l) ? (l as JsonObject[]) : [];
}

function named(list: JsonObject[], name: string): JsonObject {
  const c = list.find((e) => e.name === name);
  assert.ok(c !== undefined, `no ${name} in ${list.map((e) => e.name).join(',')}`);
  return c;
}

function envOf(c: JsonObject): Record<string, JsonValue> {
  return Object.fromEntries((c.env as JsonObject[]).map((e) => [String(e.name), e.value ?? e.valueFrom ?? null]));
}

function assertYamlGolden(file: string, value: unknown): void {
  const text = marshalYaml(value);
  if (updatingGolden()) {
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, text);
    return;
  }
  if (!existsSync(file)) assert.fail(`golden file ${file} is missing: run with UPDATE_GOLDEN=1 to create it, then review it`);
  const want = readFileSync(file, 'utf8');
  if (want !== text)
    assert.deepStrictEqual(parseYaml(text), parseYaml(want), `${file} differs (UPDATE_GOLDEN=1 rewrites it; review the diff)`);
}

describe('injectPod: a Deployment-made pod as the API server sends it', () => {
  const pod = reviewsPod();
  const result = injectPod(pod, 'bookinfo', config());
  assert.ok('patch' in result);
  const injected = applyJsonPatch(pod, result.patch) as JsonObject;

  it('matches the golden (UPDATE_GOLDEN=1 rewrites testdata/inject/reviews-pod.injected.yaml)', () => {
    assertYamlGolden(path.join(TESTDATA, 'reviews-pod.injected.yaml'), injected);
  });

  it('the JSON Patch turns the pod sent into the injected pod, leaving managedFields to the API server', () => {
    const { managedFields, ...meta } = rec(injected.metadata);
    assert.ok(managedFields !== undefined);
    assert.deepStrictEqual({ ...injected, metadata: meta }, result.injected);
    assert.ok(result.patch.every((op) => ['add', 'replace', 'remove'].includes(op.op) && !op.path.startsWith('/metadata/managedFields')));
  });

  it('istio-proxy: image, args, the discovery/CA address, ports, readiness on 15021', () => {
    const proxy = named(containers(injected), 'istio-proxy');
    assert.equal(containers(injected).at(-1)?.name, 'istio-proxy', 'the proxy goes last');
    assert.equal(proxy.image, 'registry.istio.io/testing/proxyv2:latest');
    assert.deepEqual(proxy.args, [
      'proxy',
      'sidecar',
      '--domain',
      '$(POD_NAMESPACE).svc.cluster.local',
      '--proxyLogLevel=warning',
      '--proxyComponentLogLevel=misc:error',
      '--log_output_level=default:info',
    ]);
    assert.deepEqual(proxy.ports, [{ containerPort: 15090, protocol: 'TCP', name: 'http-envoy-prom' }]);
    assert.deepEqual(rec(proxy.readinessProbe).httpGet, { path: '/healthz/ready', port: 15021 });
    const env = envOf(proxy);
    assert.equal(env.CA_ADDR, 'istiod.istio-system.svc:15012');
    // PROXY_CONFIG carries only what differs from istiod's defaults: the discovery address is the default one.
    assert.equal(env.PROXY_CONFIG, '{}\n');
    assert.equal(env.ISTIO_META_WORKLOAD_NAME, 'reviews-v1');
    assert.equal(env.ISTIO_META_OWNER, 'kubernetes://apis/apps/v1/namespaces/bookinfo/deployments/reviews-v1');
    assert.equal(env.ISTIO_META_POD_PORTS, '[\n    {"name":"http","containerPort":9080,"protocol":"TCP"}\n]');
    assert.equal(env.ISTIO_META_APP_CONTAINERS, 'reviews');
    // The app's Prometheus annotations move to the agent, which merges metrics on 15020.
    assert.equal(env.ISTIO_PROMETHEUS_ANNOTATIONS, '{"scrape":"true","path":"/metrics","port":"9080"}');
    // The app's readiness probe goes through the agent; the named port resolves to its number.
    assert.equal(
      env.ISTIO_KUBE_APP_PROBERS,
      '{"/app-health/reviews/readyz":{"httpGet":{"path":"/health","port":9080,"scheme":"HTTP"},"timeoutSeconds":1}}',
    );
    assert.deepEqual(rec(named(containers(injected), 'reviews').readinessProbe).httpGet, {
      path: '/app-health/reviews/readyz',
      port: 15020,
      scheme: 'HTTP',
    });
  });

  it('istio-init: istio-iptables args that meshpilot iptables accepts', () => {
    const init = named(containers(injected, 'initContainers'), 'istio-init');
    const args = init.args as string[];
    assert.deepEqual(args, DEFAULT_INIT_ARGS);
    const parsed = parseIptablesFlags(args.slice(1), {});
    assert.deepEqual(parsed.input, {
      proxyPort: '15001',
      inboundCapturePort: '15006',
      proxyUid: '1337',
      interceptionMode: 'REDIRECT',
      outboundIpRanges: '*',
      outboundIpRangesExclude: '',
      inboundPorts: '*',
      inboundPortsExclude: '15090,15021,15020',
    });
  });

  it('volumes, labels and annotations', () => {
    const volumes = Object.fromEntries((rec(injected.spec).volumes as JsonObject[]).map((v) => [String(v.name), v]));
    // Istio's volumes come first, the pod's own after them (apimachinery's strategic-merge order, as istiod).
    assert.deepEqual(Object.keys(volumes), [
      'workload-socket',
      'credential-socket',
      'workload-certs',
      'istio-envoy',
      'istio-data',
      'istio-podinfo',
      'istio-token',
      'istiod-ca-cert',
      'istio-ca-crl',
      'kube-api-access-x7k2p',
    ]);
    assert.deepEqual(volumes['istio-token'], {
      name: 'istio-token',
      projected: { sources: [{ serviceAccountToken: { path: 'istio-token', expirationSeconds: 43200, audience: 'istio-ca' } }] },
    });
    assert.deepEqual(volumes['istiod-ca-cert'], { name: 'istiod-ca-cert', configMap: { name: 'istio-ca-root-cert' } });
    assert.deepEqual(volumes['istio-envoy'], { name: 'istio-envoy', emptyDir: { medium: 'Memory' } });
    const meta = rec(injected.metadata);
    assert.deepEqual(meta.labels, {
      app: 'reviews',
      'pod-template-hash': '7d8f9c6b5',
      version: 'v1',
      'security.istio.io/tlsMode': 'istio',
      'service.istio.io/canonical-name': 'reviews',
      'service.istio.io/canonical-revision': 'v1',
    });
    const annotations = rec(meta.annotations);
    assert.equal(annotations['istio.io/rev'], 'default');
    assert.equal(annotations['kubectl.kubernetes.io/default-container'], 'reviews');
    assert.equal(annotations['prometheus.io/port'], '15020');
    assert.equal(annotations['prometheus.io/path'], '/stats/prometheus');
    assert.deepEqual(JSON.parse(String(annotations['sidecar.istio.io/status'])), {
      initContainers: ['istio-init'],
      containers: ['istio-proxy'],
      volumes: [
        'workload-socket',
        'credential-socket',
        'workload-certs',
        'istio-envoy',
        'istio-data',
        'istio-podinfo',
        'istio-token',
        'istiod-ca-cert',
        'istio-ca-crl',
      ],
      imagePullSecrets: null,
      revision: 'default',
    });
  });
});

describe('injectPod: traffic annotations, mesh config and native sidecars', () => {
  it('traffic.sidecar.istio.io annotations reach the istio-init args, and meshpilot iptables reads them', () => {
    const pod = reviewsPod();
    rec(pod.metadata).annotations = {
      'traffic.sidecar.istio.io/includeOutboundIPRanges': '10.0.0.0/8,172.16.0.0/12',
      'traffic.sidecar.istio.io/excludeOutboundIPRanges': '10.96.0.1/32',
      'traffic.sidecar.istio.io/excludeOutboundPorts': '5432,6379',
      'traffic.sidecar.istio.io/includeInboundPorts': '9080',
      'traffic.sidecar.istio.io/excludeInboundPorts': '9443',
      'traffic.sidecar.istio.io/excludeInterfaces': 'eth1',
      'sidecar.istio.io/interceptionMode': 'TPROXY',
    };
    const result = injectPod(pod, 'bookinfo', config());
    assert.ok('patch' in result);
    const args = named(containers(result.injected, 'initContainers'), 'istio-init').args as string[];
    const parsed = parseIptablesFlags(args.slice(1), {});
    assert.deepEqual(parsed.input, {
      proxyPort: '15001',
      inboundCapturePort: '15006',
      proxyUid: '1337',
      interceptionMode: 'TPROXY',
      outboundIpRanges: '10.0.0.0/8,172.16.0.0/12',
      outboundIpRangesExclude: '10.96.0.1/32',
      inboundPorts: '9080',
      inboundPortsExclude: '15090,15021,9443,15020',
      outboundPortsExclude: '5432,6379',
      excludeInterfaces: 'eth1',
    });
    // TPROXY needs NET_ADMIN in the proxy and runs it as root.
    const sc = rec(named(containers(result.injected), 'istio-proxy').securityContext);
    assert.deepEqual(rec(sc.capabilities).add, ['NET_ADMIN']);
    assert.equal(sc.runAsUser, 0);
  });

  it('proxy.istio.io/config and the mesh defaultConfig reach PROXY_CONFIG; the discovery address follows the mesh config', () => {
    const pod = reviewsPod();
    rec(pod.metadata).annotations = { 'proxy.istio.io/config': 'proxyMetadata:\n  ISTIO_META_DNS_CAPTURE: "true"\nconcurrency: 2\n' };
    const mesh = meshConfigFromYaml(
      'defaultConfig:\n  discoveryAddress: meshpilot.mesh.svc:15012\ntrustDomain: example.org\n',
      'ConfigMap istio-system/istio key mesh',
    );
    const result = injectPod(pod, 'bookinfo', config({ mesh }));
    assert.ok('patch' in result);
    const env = envOf(named(containers(result.injected), 'istio-proxy'));
    assert.equal(
      env.PROXY_CONFIG,
      '{"discoveryAddress":"meshpilot.mesh.svc:15012","concurrency":2,"proxyMetadata":{"ISTIO_META_DNS_CAPTURE":"true"}}\n',
    );
    assert.equal(env.ISTIO_META_DNS_CAPTURE, 'true');
    assert.equal(env.TRUST_DOMAIN, 'example.org');
  });

  it('native sidecars: istio-proxy becomes an init container with restartPolicy Always, after istio-init', () => {
    const result = injectPod(reviewsPod(), 'bookinfo', config({ nativeSidecars: true }));
    assert.ok('patch' in result);
    assert.deepEqual(
      containers(result.injected, 'initContainers').map((c) => c.name),
      ['istio-init', 'istio-proxy'],
    );
    assert.equal(named(containers(result.injected, 'initContainers'), 'istio-proxy').restartPolicy, 'Always');
    assert.deepEqual(
      containers(result.injected).map((c) => c.name),
      ['reviews'],
    );
  });

  it('skips what istiod skips, with the reason', () => {
    const disabled = reviewsPod();
    rec(disabled.metadata).labels = { app: 'reviews', 'sidecar.istio.io/inject': 'false' };
    assert.deepEqual(injectPod(disabled, 'bookinfo', config()), { skipped: 'label sidecar.istio.io/inject="false"' });
    const host = reviewsPod();
    rec(host.spec).hostNetwork = true;
    assert.deepEqual(injectPod(host, 'bookinfo', config()), { skipped: 'the pod uses the host network' });
    const done = injectPod(reviewsPod(), 'bookinfo', config());
    assert.ok('patch' in done);
    assert.deepEqual(injectPod(done.injected, 'bookinfo', config()), { skipped: 'already injected (sidecar.istio.io/status is set)' });
    assert.deepEqual(injectPod(reviewsPod(), 'bookinfo', config({ namespaceLabels: { 'istio-injection': 'disabled' } })), {
      skipped:
        'no injection webhook selects it (namespace labels {"istio-injection":"disabled"}, pod label sidecar.istio.io/inject=(unset))',
    });
    assert.ok('patch' in injectPod(reviewsPod(), 'bookinfo', config({ namespaceLabels: { 'istio-injection': 'enabled' } })));
  });

  it('a bad traffic annotation fails with the annotation and value named', () => {
    const pod = reviewsPod();
    rec(pod.metadata).annotations = { 'traffic.sidecar.istio.io/includeOutboundIPRanges': '10.0.0.0/8,bogus' };
    assert.throws(() => injectPod(pod, 'bookinfo', config()), {
      message:
        "invalid value '10.0.0.0/8,bogus' for annotation 'traffic.sidecar.istio.io/includeOutboundIPRanges': includeIPRanges invalid: failed parsing cidr 'bogus'",
    });
  });

  it('owner of a Deployment, CronJob and bare pod (istiod GetDeployMetaFromPod)', () => {
    assert.deepEqual(deployMetaFromPod(reviewsPod()), {
      typeMeta: { apiVersion: 'apps/v1', kind: 'Deployment' },
      deployMeta: { name: 'reviews-v1', namespace: 'bookinfo' },
    });
    const job: JsonObject = {
      metadata: {
        generateName: 'backup-29412345-',
        namespace: 'ops',
        ownerReferences: [{ apiVersion: 'batch/v1', kind: 'Job', name: 'backup-29412345', controller: true }],
      },
    };
    assert.deepEqual(deployMetaFromPod(job), {
      typeMeta: { apiVersion: 'batch/v1', kind: 'CronJob' },
      deployMeta: { name: 'backup', namespace: 'ops' },
    });
    assert.deepEqual(deployMetaFromPod({ metadata: { name: 'solo', namespace: 'x' } }), {
      typeMeta: { apiVersion: 'v1', kind: 'Pod' },
      deployMeta: { name: 'solo', namespace: 'x' },
    });
  });
});

function request(object: unknown, over: Partial<AdmissionRequest> = {}): AdmissionRequest {
  return {
    uid: 'uid-1',
    kind: { group: '', version: 'v1', kind: 'Pod' },
    resource: { group: '', version: 'v1', resource: 'pods' },
    namespace: 'bookinfo',
    operation: 'CREATE',
    object,
    ...over,
  };
}

function decodePatch(patch: string | undefined): JsonPatchOp[] {
  assert.ok(patch !== undefined);
  return JSON.parse(Buffer.from(patch, 'base64').toString('utf8')) as JsonPatchOp[];
}

describe('injectionHandler', () => {
  const snapshot = injectorSnapshot(undefined, 'builtin', {});
  const namespaces: Record<string, Record<string, string>> = { bookinfo: { 'istio-injection': 'enabled' }, plain: {} };
  const handler = injectionHandler({ injector: () => snapshot, meshConfig: defaultMeshConfig, namespaceLabels: (ns) => namespaces[ns] });

  it('answers a Pod CREATE with a base64 JSONPatch that injects', async () => {
    const pod = reviewsPod();
    const res = await handler(request(pod));
    assert.equal(res.uid, 'uid-1');
    assert.equal(res.allowed, true);
    assert.equal(res.patchType, 'JSONPatch');
    const injected = applyJsonPatch(pod, decodePatch(res.patch)) as JsonObject;
    assert.deepEqual(
      containers(injected).map((c) => c.name),
      ['reviews', 'istio-proxy'],
    );
  });

  it('allows without a patch: opted out, other namespaces, other operations and kinds', async () => {
    const optedOut = reviewsPod();
    rec(optedOut.metadata).labels = { 'sidecar.istio.io/inject': 'false' };
    assert.deepEqual(await handler(request(optedOut)), { uid: 'uid-1', allowed: true });
    const elsewhere = reviewsPod();
    delete rec(elsewhere.metadata).namespace; // pods made from generateName may come without one
    assert.deepEqual(await handler(request(elsewhere, { namespace: 'plain' })), { uid: 'uid-1', allowed: true });
    assert.deepEqual(await handler(request(reviewsPod(), { operation: 'UPDATE' })), { uid: 'uid-1', allowed: true });
    assert.deepEqual(
      await handler(
        request(
          {},
          {
            kind: { group: 'apps', version: 'v1', kind: 'Deployment' },
            resource: { group: 'apps', version: 'v1', resource: 'deployments' },
          },
        ),
      ),
      { uid: 'uid-1', allowed: true },
    );
  });

  it('refuses with the template, line and column when a template fails (istiod: the pod is not admitted)', async () => {
    const injector: InjectorConfig = {
      ...snapshot.injector,
      templates: { sidecar: 'spec:\n  containers:\n  - name: istio-proxy\n    image: {{ .Values.global.proxy.image.nope.deeper }}\n' },
    };
    const broken = { ...snapshot, injector, templates: new CompiledTemplates(injector, {}) };
    const h = injectionHandler({ injector: () => broken, meshConfig: defaultMeshConfig });
    const res = await h(request(reviewsPod()));
    assert.equal(res.allowed, false);
    assert.match(res.status?.message ?? '', /^failed to run injection template: template: sidecar:4:/);
    assert.match(res.status?.message ?? '', /nope/);
  });

  it('refuses a request object that is not a pod object', async () => {
    const res = await handler(request('nonsense'));
    assert.deepEqual(res, {
      uid: 'uid-1',
      allowed: false,
      status: { code: 400, message: 'could not decode the Pod: request.object is not a JSON object' },
    });
  });

  it("counts istiod's sidecar_injection_* metrics", async () => {
    const registry = new Registry();
    const h = injectionHandler({
      injector: () => snapshot,
      meshConfig: defaultMeshConfig,
      namespaceLabels: (ns) => namespaces[ns],
      registry,
    });
    await h(request(reviewsPod()));
    const optedOut = reviewsPod();
    rec(optedOut.metadata).labels = { 'sidecar.istio.io/inject': 'false' };
    await h(request(optedOut));
    await h(request('nonsense'));
    const value = async (name: string): Promise<number> =>
      (await registry.getSingleMetric(name)?.get())?.values.find((v) => !('le' in v.labels))?.value ?? -1;
    assert.equal(await value('sidecar_injection_requests_total'), 3);
    assert.equal(await value('sidecar_injection_success_total'), 3);
    assert.equal(await value('sidecar_injection_skip_total'), 1);
    assert.equal(await value('sidecar_injection_failure_total'), 1);
    const histogram = await registry.getSingleMetric('sidecar_injection_time_seconds')?.get();
    assert.equal(
      histogram?.values.find((v) => (v as { metricName?: string }).metricName === 'sidecar_injection_time_seconds_count')?.value,
      3,
    );
    // A second handler on the same registry shares the metrics instead of failing to register them.
    injectionHandler({ injector: () => snapshot, meshConfig: defaultMeshConfig, registry });
  });

  it('reads cluster and network from /inject path parameters (istiod parseInjectEnvs)', async () => {
    assert.deepEqual(injectEnvsFromPath('/inject/cluster/east/net/network1'), {
      ISTIO_META_CLUSTER_ID: 'east',
      ISTIO_META_NETWORK: 'network1',
    });
    assert.deepEqual(injectEnvsFromPath('/inject/:ENV:cluster=east:ENV:net=n--1:ENV:FOO=a=b'), {
      ISTIO_META_CLUSTER_ID: 'east',
      ISTIO_META_NETWORK: 'n--1',
      FOO: 'a=b',
    });
    assert.deepEqual(injectEnvsFromPath('/inject'), {});
    const res = await handler(request(reviewsPod()), '/inject/cluster/east/net/network1');
    const injected = applyJsonPatch(reviewsPod(), decodePatch(res.patch)) as JsonObject;
    const env = envOf(named(containers(injected), 'istio-proxy'));
    assert.equal(env.ISTIO_META_CLUSTER_ID, 'east');
    assert.equal(env.ISTIO_META_NETWORK, 'network1');
    assert.equal(rec(rec(injected.metadata).labels)['topology.istio.io/network'], 'network1');
  });
});
