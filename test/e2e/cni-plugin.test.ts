import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { bundlePlugin } from '../../src/cni/install/bundle.js';
import { parseInstallFlags } from '../../src/cni/install/command.js';
import { installCni, type Installation } from '../../src/cni/install/installer.js';
import { cniRuntime, type CniRuntime, type PodSandbox } from '../support/cni/cni-runtime.js';
import { allSaves, availableBackends, createNetns, netnsSkipReason, ownBackend, savesOfGolden, type Netns } from '../support/cni/netns.js';
import { startListeners, tcpConnect, type Listeners } from '../support/cni/traffic.js';
import { CoreClient, readyStatus } from '../support/kube-objects.js';
import {
  adminRequest,
  KUBE_SETUP_TIMEOUT_MS,
  kubeSkipReason,
  serviceAccountCredentials,
  startKubeCluster,
  type KubeCluster,
  type ServiceAccountCredentials,
} from '../support/kube.js';
import { REPO_ROOT } from '../support/paths.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';

/**
 * meshpilot-cni as a container runtime drives it. The installer chains the bundled plugin into a
 * conflist whose primary is Debian's bridge + host-local; the test then plays the runtime (env +
 * stdin, prevResult chained). The bridge plugin runs inside a "node" namespace the test makes, so
 * the bridge and its gateway address exist only there; meshpilot-cni runs in the test's own
 * namespace, where it reaches the real kube-apiserver on loopback and enters CNI_NETNS itself.
 * Pods: "app" (injected, excludeOutboundPorts 9000), "peer" (inject "false"), "bad" (an invalid
 * excludeOutboundIPRanges). Every address is in 10.251.0.0/24, inside those namespaces.
 */

const skip = netnsSkipReason() ?? kubeSkipReason();
const PROXY_UID = 1337;
const GOLDEN = join(REPO_ROOT, 'testdata', 'iptables', 'cni-plugin-e2e.golden');
const STATUS = { 'sidecar.istio.io/status': '{"initContainers":null,"containers":["istio-proxy"],"volumes":["istio-envoy"]}' };
const APP_ANNOTATIONS = { ...STATUS, 'traffic.sidecar.istio.io/excludeOutboundPorts': '9000' };

function podSpec(name: string, annotations: Record<string, string>): V1Pod {
  return {
    metadata: { name, annotations },
    spec: {
      containers: [
        { name: 'app', image: 'app' },
        {
          name: 'istio-proxy',
          image: 'proxyv2',
          args: ['proxy', 'sidecar'],
          securityContext: { runAsUser: PROXY_UID, runAsGroup: PROXY_UID },
        },
      ],
    },
  };
}

/** Someone else's rules in the pod: they must be there, unchanged, after every step. */
function addForeignRules(ns: Netns): void {
  for (const kind of availableBackends()) {
    ns.run(`iptables-${kind}`, '-w', '-t', 'nat', '-N', 'FOREIGN');
    ns.run(`iptables-${kind}`, '-w', '-t', 'nat', '-A', 'OUTPUT', '-p', 'udp', '--dport', '9999', '-j', 'FOREIGN');
  }
}

const CNI_RBAC_FILE = join(REPO_ROOT, 'manifests', 'rbac', 'meshpilot-cni-rbac.yaml');

/** Applies the plugin's RBAC manifest (istio-system → `ns`) and returns a token of its ServiceAccount. */
async function cniServiceAccount(cluster: KubeCluster, ns: string): Promise<ServiceAccountCredentials> {
  const paths: Record<string, string> = {
    ServiceAccount: `/api/v1/namespaces/${ns}/serviceaccounts`,
    ClusterRole: '/apis/rbac.authorization.k8s.io/v1/clusterroles',
    ClusterRoleBinding: '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
  };
  for (const doc of parseAllDocuments(readFileSync(CNI_RBAC_FILE, 'utf8').replaceAll('istio-system', ns)).map(
    (d) => d.toJS() as { kind: string },
  )) {
    const res = await adminRequest(cluster.env, 'POST', paths[doc.kind] ?? '', doc);
    assert.equal(res.status, 201, `${CNI_RBAC_FILE}: ${doc.kind}: ${res.body}`);
  }
  return serviceAccountCredentials(cluster, ns, 'meshpilot-cni');
}

const errorOf = (stdout: string) => JSON.parse(stdout) as { cniVersion: string; code: number; msg: string; details: string };

describe('meshpilot-cni chained after bridge + host-local, pods from a real API server', { skip }, () => {
  let cluster: KubeCluster;
  let dir: TempDir;
  let node: Netns;
  let installation: Installation;
  let runtime: CniRuntime;
  const pods = new Map<string, { ns: Netns; sandbox: PodSandbox; pristine: string }>();

  before(
    async () => {
      cluster = await startKubeCluster();
      const k8sNamespace = await cluster.namespace('cni');
      const core = new CoreClient(cluster.clientNode);
      dir = tempDir('meshpilot-cni-e2e-');
      const [netDir, binDir] = [join(dir.path, 'net.d'), join(dir.path, 'bin')];
      mkdirSync(netDir);
      mkdirSync(binDir);
      const ipam = { type: 'host-local', ranges: [[{ subnet: '10.251.0.0/24' }]], dataDir: join(dir.path, 'ipam') };
      writeFileSync(
        join(netDir, '10-bridge.conflist'),
        JSON.stringify({
          cniVersion: '1.0.0',
          name: 'mp-test-net',
          plugins: [{ type: 'bridge', bridge: 'mpbr0', isGateway: true, ipMasq: false, ipam }],
        }),
      );
      const bundle = join(dir.path, 'meshpilot-cni.js');
      await bundlePlugin(bundle);
      // The plugin reads pods as the DaemonSet's service account would: the installer writes its
      // kubeconfig from a mounted token + CA (here a folder the test fills) and the in-cluster env.
      const sa = await cniServiceAccount(cluster, await cluster.namespace('cni-system'));
      const saDir = join(dir.path, 'serviceaccount');
      mkdirSync(saDir);
      writeFileSync(join(saDir, 'token'), sa.token);
      writeFileSync(join(saDir, 'ca.crt'), readFileSync(cluster.env.KUBE_CA_FILE ?? ''));
      const api = new URL(cluster.url);
      const flags = ['--cni-net-dir', netDir, '--cni-bin-dir', binDir, '--plugin-file', bundle, '--log-level', 'debug'];
      installation = await installCni(
        parseInstallFlags(flags, { KUBERNETES_SERVICE_HOST: api.hostname, KUBERNETES_SERVICE_PORT: api.port }, saDir),
      );
      node = createNetns('node');
      runtime = cniRuntime({
        conflistFile: join(netDir, '10-bridge.conflist'),
        cniPath: [binDir, '/usr/lib/cni'],
        runIn: { bridge: node.name },
      });
      for (const [name, annotations] of [
        ['app', APP_ANNOTATIONS],
        ['peer', { ...STATUS, 'sidecar.istio.io/inject': 'false' }],
        ['bad', { ...STATUS, 'traffic.sidecar.istio.io/excludeOutboundIPRanges': '10.0.0.0/33' }],
        ['tproxy', { ...STATUS, 'sidecar.istio.io/interceptionMode': 'TPROXY' }],
      ] as const) {
        await core.pod(k8sNamespace, podSpec(`${name}-pod`, annotations), readyStatus());
        const ns = createNetns(name);
        addForeignRules(ns);
        pods.set(name, {
          ns,
          sandbox: {
            containerId: `c-${name}-${process.pid}`,
            netns: `/run/netns/${ns.name}`,
            namespace: k8sNamespace,
            name: `${name}-pod`,
          },
          pristine: await allSaves(ns),
        });
      }
    },
    { timeout: KUBE_SETUP_TIMEOUT_MS },
  );

  after(async () => {
    for (const p of pods.values()) {
      await runtime?.del(p.sandbox).catch(() => undefined);
      p.ns.remove();
    }
    node?.remove();
    await installation?.uninstall();
    await dir?.remove();
    await cluster?.stop();
  });

  const pod = (name: string) => pods.get(name)!;
  let appResult: unknown;
  let peerIp = '';
  let appIp = '';

  it('the installer chained meshpilot-cni last, after the primary bridge entry, with a token kubeconfig', () => {
    assert.deepEqual(
      runtime.plugins.map((p) => p.type),
      ['bridge', 'meshpilot-cni'],
    );
    const kubeconfig = readFileSync(String((runtime.plugins[1]!.kubernetes as { kubeconfig: string }).kubeconfig), 'utf8');
    assert.match(kubeconfig, /token: \S+/);
    assert.doesNotMatch(kubeconfig, /client-certificate/);
  });

  it('ADD: a pod with inject "false" gets its network and no capture; prevResult passes through unchanged', async () => {
    const runs = await runtime.add(pod('peer').sandbox);
    assert.deepEqual(
      runs.map((r) => [r.type, r.code]),
      [
        ['bridge', 0],
        ['meshpilot-cni', 0],
      ],
      runs.map((r) => r.stdout + r.stderr).join('\n'),
    );
    assert.deepEqual(JSON.parse(runs[1]!.stdout), JSON.parse(runs[0]!.stdout));
    assert.match(runs[1]!.stderr, /sidecar.istio.io\/inject: "false"/);
    peerIp = String((JSON.parse(runs[0]!.stdout) as { ips: Array<{ address: string }> }).ips[0]?.address).split('/')[0] ?? '';
    assert.equal(await allSaves(pod('peer').ns), pod('peer').pristine, 'no rules added');
    // CHECK of a pod that must not be captured: passes while it has no ISTIO_* chain, fails naming one.
    const result = JSON.parse(runs[1]!.stdout) as unknown;
    const meshpilot = runtime.plugins[1]!;
    assert.equal((await runtime.invoke(meshpilot, 'CHECK', pod('peer').sandbox, result)).code, 0);
    const kind = availableBackends()[0]!;
    pod('peer').ns.run(`iptables-${kind}`, '-w', '-t', 'nat', '-N', 'ISTIO_OUTPUT');
    try {
      const stray = await runtime.invoke(meshpilot, 'CHECK', pod('peer').sandbox, result);
      assert.equal(stray.code, 1);
      assert.equal(errorOf(stray.stdout).details, `iptables-${kind} -t nat ISTIO_OUTPUT`);
    } finally {
      pod('peer').ns.run(`iptables-${kind}`, '-w', '-t', 'nat', '-X', 'ISTIO_OUTPUT');
    }
  });

  it('ADD: an injected pod gets the golden rule set (iptables-save equals the golden loaded into a twin namespace)', async () => {
    const runs = await runtime.add(pod('app').sandbox);
    assert.deepEqual(
      runs.map((r) => [r.type, r.code]),
      [
        ['bridge', 0],
        ['meshpilot-cni', 0],
      ],
      runs.map((r) => r.stdout + r.stderr).join('\n'),
    );
    assert.equal(runs[1]!.stdout, runs[0]!.stdout.trim() === '' ? '' : `${JSON.stringify(JSON.parse(runs[0]!.stdout))}\n`);
    appResult = JSON.parse(runs[1]!.stdout);
    appIp = String((appResult as { ips: Array<{ address: string }> }).ips[0]?.address).split('/')[0] ?? '';
    const kind = await ownBackend(pod('app').ns);
    assert.equal(await allSaves(pod('app').ns), await savesOfGolden(readFileSync(GOLDEN, 'utf8'), kind, addForeignRules));
  });

  it('CHECK passes while the rules are there, and fails naming the rule once one is removed; ADD again restores them', async () => {
    const ok = await runtime.check(pod('app').sandbox, appResult);
    assert.deepEqual(
      ok.map((r) => [r.type, r.code, r.stdout]),
      [
        ['bridge', 0, ''],
        ['meshpilot-cni', 0, ''],
      ],
      ok.map((r) => r.stderr).join('\n'),
    );
    const kind = await ownBackend(pod('app').ns);
    const applied = await allSaves(pod('app').ns);
    pod('app').ns.run(`iptables-${kind}`, '-w', '-t', 'nat', '-D', 'OUTPUT', '-j', 'ISTIO_OUTPUT');
    const meshpilot = runtime.plugins[1]!;
    const broken = await runtime.invoke(meshpilot, 'CHECK', pod('app').sandbox, appResult);
    assert.equal(broken.code, 1);
    assert.equal(errorOf(broken.stdout).code, 102);
    assert.match(errorOf(broken.stdout).details, /iptables -t nat OUTPUT -j ISTIO_OUTPUT/);
    const again = await runtime.invoke(meshpilot, 'ADD', pod('app').sandbox, appResult);
    assert.equal(again.code, 0, again.stdout);
    assert.equal(await allSaves(pod('app').ns), applied);
  });

  describe('real traffic in the captured pod', () => {
    let appListeners: Listeners;
    let peerListeners: Listeners;
    before(async () => {
      appListeners = await startListeners(
        pod('app').ns,
        ['tcp,0.0.0.0,15001,app-15001', 'tcp,0.0.0.0,15006,app-15006', 'tcp,0.0.0.0,8080,app-8080'],
        PROXY_UID,
      );
      peerListeners = await startListeners(pod('peer').ns, ['tcp,0.0.0.0,8000,peer-8000', 'tcp,0.0.0.0,9000,peer-9000']);
    });
    after(async () => {
      await appListeners?.stop();
      await peerListeners?.stop();
    });

    it('outbound TCP to the other pod reaches 15001, which reads the original destination', async () => {
      const n = appListeners.seen.length;
      assert.equal(await tcpConnect(pod('app').ns, peerIp, 8000), 'app-15001');
      assert.equal(appListeners.seen[n]?.origDst, `${peerIp}:8000`);
    });

    it('the proxy (uid 1337) and the excluded port 9000 are not redirected', async () => {
      assert.equal(await tcpConnect(pod('app').ns, peerIp, 8000, PROXY_UID), 'peer-8000');
      assert.equal(await tcpConnect(pod('app').ns, peerIp, 9000), 'peer-9000');
    });

    it('inbound from the other pod to the app port reaches 15006', async () => {
      const n = appListeners.seen.length;
      assert.equal(await tcpConnect(pod('peer').ns, appIp, 8080), 'app-15006');
      assert.deepEqual([appListeners.seen[n]?.origDst, appListeners.seen[n]?.peer.split(':')[0]], [`${appIp}:8080`, peerIp]);
    });
  });

  it('DEL removes every meshpilot chain and nothing else; again is a no-op; with the namespace gone it still succeeds', async () => {
    const meshpilot = runtime.plugins[1]!;
    for (let i = 0; i < 2; i++) {
      const r = await runtime.invoke(meshpilot, 'DEL', pod('app').sandbox, appResult);
      assert.equal(r.code, 0, r.stdout + r.stderr);
      assert.equal(await allSaves(pod('app').ns), pod('app').pristine);
    }
    const peer = await startListeners(pod('peer').ns, ['tcp,0.0.0.0,8000,peer-8000']);
    try {
      assert.equal(await tcpConnect(pod('app').ns, peerIp, 8000), 'peer-8000', 'no longer captured');
    } finally {
      await peer.stop();
    }
    const gone = await runtime.invoke(meshpilot, 'DEL', { ...pod('app').sandbox, netns: '/run/netns/mp-gone-namespace' }, appResult);
    assert.deepEqual([gone.code, gone.stdout], [0, '']);
  });

  it('a bad annotation fails ADD with a CNI error naming it, and the namespace is left as it was', async () => {
    const runs = await runtime.add(pod('bad').sandbox);
    assert.deepEqual(
      runs.map((r) => [r.type, r.code]),
      [
        ['bridge', 0],
        ['meshpilot-cni', 1],
      ],
    );
    const e = errorOf(runs[1]!.stdout);
    assert.deepEqual([e.cniVersion, e.code], ['1.0.0', 101]);
    assert.match(e.msg, /bad-pod: .*traffic\.sidecar\.istio\.io\/excludeOutboundIPRanges annotation.*"10\.0\.0\.0\/33"/);
    assert.equal(await allSaves(pod('bad').ns), pod('bad').pristine);
    const del = await runtime.del(pod('bad').sandbox);
    assert.ok(
      del.every((r) => r.code === 0),
      del.map((r) => r.stdout + r.stderr).join('\n'),
    );
  });

  it('TPROXY: ADD programs marks and policy routing; DEL (the pod still readable) removes those too', async () => {
    const { ns, sandbox, pristine } = pod('tproxy');
    const routing = () => `${ns.run('ip', 'rule', 'list')}\n${ns.run('ip', 'route', 'show', 'table', 'all')}`;
    const routesBefore = routing();
    const runs = await runtime.add(sandbox);
    assert.deepEqual(
      runs.map((r) => [r.type, r.code]),
      [
        ['bridge', 0],
        ['meshpilot-cni', 0],
      ],
      runs.map((r) => r.stdout + r.stderr).join('\n'),
    );
    const result = JSON.parse(runs[1]!.stdout) as unknown;
    assert.match(await allSaves(ns), /-A PREROUTING -p tcp -m mark --mark 0x539 -j CONNMARK --save-mark/);
    assert.match(ns.run('ip', 'rule', 'list'), /fwmark 0x539 lookup 133/);
    const check = await runtime.invoke(runtime.plugins[1]!, 'CHECK', sandbox, result);
    assert.equal(check.code, 0, check.stdout);
    const del = await runtime.invoke(runtime.plugins[1]!, 'DEL', sandbox, result);
    assert.equal(del.code, 0, del.stdout + del.stderr);
    assert.equal(await allSaves(ns), pristine);
    // The bridge's own addresses and routes stay; only the TPROXY rule and table 133 go.
    assert.doesNotMatch(routing(), /fwmark 0x539|table 133/);
    assert.equal((await runtime.invoke(runtime.plugins[0]!, 'DEL', sandbox, result)).code, 0);
    assert.equal(routing(), routesBefore);
  });

  it('a pod the API does not know fails ADD (never starts uncaptured silently)', async () => {
    const ghost = { ...pod('bad').sandbox, name: 'no-such-pod' };
    const r = await runtime.invoke(runtime.plugins[1]!, 'ADD', ghost, appResult);
    assert.equal(r.code, 1);
    assert.equal(errorOf(r.stdout).code, 100);
    assert.match(errorOf(r.stdout).msg, /cannot read pod .*\/no-such-pod from the Kubernetes API: HTTP 404/);
  });
});
