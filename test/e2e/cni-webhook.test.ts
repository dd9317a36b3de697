import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { AdmissionregistrationV1Api, CoreV1Api, type V1Container, type V1Pod } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { bundlePlugin } from '../../src/cni/install/bundle.js';
import { cniRuntime, type CniRuntime, type PodSandbox } from '../support/cni/cni-runtime.js';
import { meshpilotInNetns } from '../support/cni/meshpilot-in-netns.js';
import { allSaves, connect, createNetns, netnsSkipReason, ownBackend, savesOfGolden, type Netns } from '../support/cni/netns.js';
import { builtinInjector, injectionHandler, type Values } from '../../src/inject/index.js';
import { KubeInjectionInputs } from '../../src/inject/kube-inputs.js';
import { IstioCa } from '../../src/security/ca/istio-ca.js';
import { createLogger } from '../../src/util/log.js';
import { validationHandler, WebhookServer } from '../../src/webhooks/index.js';
import { KUBE_SETUP_TIMEOUT_MS, kubeSkipReason, startKubeCluster, type KubeCluster } from '../support/kube.js';
import { REPO_ROOT } from '../support/paths.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

/**
 * CNI mode through the sidecar injector. The API server calls meshpilot's /inject
 * (WebhookServer in this process, reached through a MutatingWebhookConfiguration with a loopback
 * URL and the test CA's bundle) with Istio's own template; the istio-sidecar-injector ConfigMap
 * holds Istio's chart values with `pilot.cni.enabled: true` and the image values that point
 * injection at a meshpilot image. Then, in network namespaces the test makes:
 * - the CNI pod: meshpilot-cni ADD (the esbuild bundle, driven as a runtime does) leaves
 *   istio-cni's golden rule set, and the pod's istio-validation (its own args, as uid 1337)
 *   passes (that it fails without the rules: test/e2e/cni-validation.test.ts);
 * - without CNI values the pod gets istio-init, whose args through `meshpilot istio-iptables` give
 *   the same capture as the CNI plugin did. Not byte-identical, exactly as in Istio: istio-cni
 *   defaults excludeOutboundPorts to the agent's status port 15020 (cni/pkg/plugin/
 *   sidecar_redirect.go) where the template passes no -o, and appends its inbound exclusions as
 *   15020,15021,15090 where the template writes -d 15090,15021,15020; nothing else differs.
 */

const skip = netnsSkipReason() ?? kubeSkipReason();
/** istio-cni's rules for a pod injected with default values (its own defaults: see the last test). */
const CNI_GOLDEN = join(REPO_ROOT, 'testdata', 'iptables', 'cni-basic.golden');
/** istio-init's, from the args Istio's template renders with default values. */
const INIT_GOLDEN = join(REPO_ROOT, 'testdata', 'iptables', 'injection-defaults.golden');
const IMAGE_VALUES = { hub: 'ghcr.io/meshpilot', tag: '0.1.0', proxy: { image: 'meshpilot' }, proxy_init: { image: 'meshpilot' } };

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** `over` merged into `base` (objects recursively), as Helm layers values. */
function merged(base: Values, over: Record<string, unknown>): Values {
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) out[k] = isRecord(v) && isRecord(out[k]) ? merged(out[k] as Values, v) : v;
  return out;
}

/** The injector ConfigMap as Istio's chart writes it: the template config and the full values. */
function injectorConfigMap(over: Record<string, unknown>): Record<string, string> {
  const { config, values } = builtinInjector();
  return {
    config: stringify({ policy: config.policy, defaultTemplates: config.defaultTemplates, templates: config.templates }),
    values: JSON.stringify(merged(values, over)),
  };
}

const byName = (list: V1Container[] | undefined, name: string): V1Container | undefined => list?.find((c) => c.name === name);

describe('CNI mode through the injection webhook: istio-validation, meshpilot-cni, and istio-init giving the same rules', { skip }, () => {
  let cluster: KubeCluster;
  let core: CoreV1Api;
  let admission: AdmissionregistrationV1Api;
  let inputs: KubeInjectionInputs;
  let server: WebhookServer;
  let dir: TempDir;
  let runtime: CniRuntime;
  let systemNs: string;
  let appNs: string;
  const namespaces: Netns[] = [];
  const webhookName = `meshpilot-cni-e2e-${process.pid}`;

  /** A pod namespace with an address (a veth to a peer namespace), as the primary plugin would leave it. */
  const podNetns = (role: string, address: string): { ns: Netns; prevResult: unknown } => {
    const ns = createNetns(role);
    const peer = createNetns(`${role}peer`);
    namespaces.push(ns, peer);
    connect(ns, [`${address}/24`], peer, [`${address.replace(/\.\d+$/, '.1')}/24`]);
    return {
      ns,
      prevResult: {
        cniVersion: '1.0.0',
        interfaces: [{ name: 'eth0', sandbox: `/run/netns/${ns.name}` }],
        ips: [{ address: `${address}/24`, interface: 0 }],
      },
    };
  };

  const createPod = (name: string): Promise<V1Pod> =>
    core.createNamespacedPod({
      namespace: appNs,
      // Named: this API server runs without the ServiceAccount admission plugin.
      body: {
        metadata: { name, labels: { app: name } },
        spec: { serviceAccountName: 'web', containers: [{ name: 'app', image: 'example/web', ports: [{ containerPort: 8080 }] }] },
      },
    });

  before(
    async () => {
      dir = tempDir('meshpilot-cni-webhook-');
      const logger = createLogger({ level: 'warn' });
      const binDir = join(dir.path, 'bin');
      mkdirSync(binDir);
      const [started] = await Promise.all([startKubeCluster(), bundlePlugin(join(binDir, 'meshpilot-cni'))]);
      cluster = started;
      chmodSync(join(binDir, 'meshpilot-cni'), 0o755);
      core = cluster.clientNode.makeApiClient(CoreV1Api);
      admission = cluster.clientNode.makeApiClient(AdmissionregistrationV1Api);
      systemNs = await cluster.namespace('istio-system');
      appNs = await cluster.namespace('shop', { 'istio-injection': 'enabled' });
      await core.createNamespacedConfigMap({
        namespace: systemNs,
        body: {
          metadata: { name: 'istio-sidecar-injector' },
          data: injectorConfigMap({ global: IMAGE_VALUES, pilot: { cni: { enabled: true } } }),
        },
      });
      inputs = new KubeInjectionInputs({
        kubeConfig: cluster.kubeConfig,
        logger,
        namespace: systemNs,
        revision: '',
        nativeSidecars: 'false',
        env: {},
      });
      await inputs.start();
      const ca = await IstioCa.create({
        trustDomain: 'cluster.local',
        caDir: join(dir.path, 'ca'),
        caCertsDir: join(dir.path, 'no-cacerts'),
        logger,
      });
      server = await WebhookServer.start({
        host: '127.0.0.1',
        port: 0,
        identity: await ca.generateKeyCert(['127.0.0.1'], 3_600_000),
        logger,
        handlers: { validate: validationHandler({ logger }), inject: injectionHandler(inputs.injectionOptions({ logger })) },
      });
      await admission.createMutatingWebhookConfiguration({
        body: {
          metadata: { name: webhookName },
          webhooks: [
            {
              name: 'namespace.sidecar-injector.istio.io',
              clientConfig: {
                url: `https://127.0.0.1:${server.port}/inject`,
                caBundle: Buffer.from(ca.trustBundlePem()).toString('base64'),
              },
              rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
              namespaceSelector: { matchLabels: { 'istio-injection': 'enabled', 'kubernetes.io/metadata.name': appNs } },
              failurePolicy: 'Fail',
              sideEffects: 'None',
              admissionReviewVersions: ['v1'],
            },
          ],
        },
      });
      const conflist = join(dir.path, 'meshpilot.conflist');
      writeFileSync(
        conflist,
        JSON.stringify({
          cniVersion: '1.0.0',
          name: 'mp-webhook-net',
          plugins: [{ type: 'meshpilot-cni', kubernetes: { kubeconfig: cluster.kubeconfigPath } }],
        }),
      );
      runtime = cniRuntime({ conflistFile: conflist, cniPath: [binDir] });
    },
    { timeout: KUBE_SETUP_TIMEOUT_MS },
  );

  after(async () => {
    // A Fail-policy webhook whose server is gone would block pod creation: remove it first.
    await admission?.deleteMutatingWebhookConfiguration({ name: webhookName }).catch(() => undefined);
    await server?.close();
    await inputs?.stop();
    for (const ns of namespaces) ns.remove();
    await dir?.remove();
    await cluster?.stop();
  });

  let cniPod: V1Pod;
  let cniSaves = '';

  it('pilot.cni.enabled: the created Pod has istio-validation (uid 1337, no NET_ADMIN) and no istio-init; images from global.hub/tag/proxy(_init).image', async () => {
    cniPod = await createPod('cni-app');
    const inits = cniPod.spec?.initContainers ?? [];
    assert.deepEqual(
      inits.map((c) => c.name),
      ['istio-validation'],
    );
    const validation = inits[0]!;
    assert.deepEqual(validation.args?.slice(0, 1), ['istio-iptables']);
    assert.deepEqual(validation.args?.slice(-2), ['--run-validation', '--skip-rule-apply']);
    assert.deepEqual([validation.securityContext?.runAsUser, validation.securityContext?.capabilities?.add], [1337, undefined]);
    const proxy = byName(cniPod.spec?.containers, 'istio-proxy');
    assert.deepEqual(proxy?.args?.slice(0, 2), ['proxy', 'sidecar']);
    assert.deepEqual([validation.image, proxy?.image], ['ghcr.io/meshpilot/meshpilot:0.1.0', 'ghcr.io/meshpilot/meshpilot:0.1.0']);
  });

  it("after meshpilot-cni ADD left istio-cni's rule set, the pod's istio-validation passes (its own args and uid)", async () => {
    const { ns, prevResult } = podNetns('cnipod', '10.254.1.2');
    const validation = byName(cniPod.spec?.initContainers, 'istio-validation')!;
    const as = { uid: Number(validation.securityContext?.runAsUser), gid: Number(validation.securityContext?.runAsGroup) };
    const sandbox: PodSandbox = { containerId: `c-cni-${process.pid}`, netns: `/run/netns/${ns.name}`, namespace: appNs, name: 'cni-app' };
    const add = await runtime.invoke(runtime.plugins[0]!, 'ADD', sandbox, prevResult);
    assert.equal(add.code, 0, add.stdout + add.stderr);
    assert.deepEqual(JSON.parse(add.stdout), prevResult);
    cniSaves = await allSaves(ns);
    assert.equal(cniSaves, await savesOfGolden(readFileSync(CNI_GOLDEN, 'utf8'), await ownBackend(ns)));

    const late = await meshpilotInNetns(ns, validation.args ?? [], as);
    assert.equal(late.code, 0, late.stdout + late.stderr);
    assert.match(late.stdout, /validation passed: a connection to 127\.0\.0\.6:15002 was redirected to 127\.0\.0\.1:15006/);
  });

  it("without CNI values the Pod gets istio-init; its args through meshpilot istio-iptables give the CNI plugin's rules but istio-cni's outbound 15020 exclusion", async () => {
    assert.ok(cniSaves !== '', 'the CNI case ran');
    await core.replaceNamespacedConfigMap({
      name: 'istio-sidecar-injector',
      namespace: systemNs,
      body: { metadata: { name: 'istio-sidecar-injector' }, data: injectorConfigMap({ global: IMAGE_VALUES }) },
    });
    // The injector follows the ConfigMap through its watch: dry-run creates until it has.
    await waitFor(
      async () => {
        const probe = await core.createNamespacedPod({
          namespace: appNs,
          dryRun: 'All',
          body: { metadata: { name: 'probe' }, spec: { serviceAccountName: 'web', containers: [{ name: 'app', image: 'x' }] } },
        });
        return byName(probe.spec?.initContainers, 'istio-init') !== undefined;
      },
      { timeoutMs: 10_000, description: 'the injector using the ConfigMap without pilot.cni.enabled' },
    );
    const pod = await createPod('init-app');
    const inits = pod.spec?.initContainers ?? [];
    assert.deepEqual(
      inits.map((c) => c.name),
      ['istio-init'],
    );
    const init = inits[0]!;
    assert.deepEqual(
      [init.image, init.securityContext?.runAsUser, init.securityContext?.capabilities?.add],
      ['ghcr.io/meshpilot/meshpilot:0.1.0', 0, ['NET_ADMIN', 'NET_RAW']],
    );
    const { ns } = podNetns('initpod', '10.254.2.2');
    const r = await meshpilotInNetns(ns, init.args ?? []);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const initSaves = await allSaves(ns);
    assert.equal(initSaves, await savesOfGolden(readFileSync(INIT_GOLDEN, 'utf8'), await ownBackend(ns)));
    const lines = (text: string) => new Set(text.split('\n'));
    const [cni, initMode] = [lines(cniSaves), lines(initSaves)];
    assert.deepEqual(
      [...initMode].filter((l) => !cni.has(l)),
      [],
      'every istio-init rule is one the CNI plugin made',
    );
    assert.deepEqual(
      [...cni].filter((l) => !initMode.has(l)),
      ['-A ISTIO_OUTPUT -p tcp -m tcp --dport 15020 -j RETURN', '-A ISTIO_OUTPUT -p udp -m udp --dport 15020 -j RETURN'],
    );
  });
});
