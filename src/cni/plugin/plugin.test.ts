import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { REPO_ROOT } from '../../../test/support/paths.js';
import { captureConfigFromAnnotations } from '../annotations.js';
import { buildCaptureRules } from '../iptables/builder.js';
import { renderRuleSet } from '../iptables/restore.js';
import { assertGoldenText } from '../../../test/support/cni/golden-text.js';
import { parseCniArgs, parseCniEnv, parsePluginConfig } from './config.js';
import { decideForPod, resultAddresses } from './decide.js';
import { CniCode } from './errors.js';
import { runCniPlugin, type PluginDeps } from './plugin.js';

const PREV = {
  cniVersion: '1.0.0',
  interfaces: [{ name: 'eth0', sandbox: '/var/run/netns/x' }],
  ips: [{ address: '10.22.0.5/16', gateway: '10.22.0.1', interface: 0 }],
};
const CONFIG = {
  cniVersion: '1.0.0',
  name: 'k8s-pod-network',
  type: 'meshpilot-cni',
  kubernetes: { kubeconfig: '/etc/cni/net.d/ZZZ-meshpilot-cni-kubeconfig' },
  exclude_namespaces: ['kube-system'],
  prevResult: PREV,
};
const ENV = {
  CNI_COMMAND: 'ADD',
  CNI_CONTAINERID: 'c1',
  CNI_NETNS: '/run/netns/none-such',
  CNI_IFNAME: 'eth0',
  CNI_PATH: '/opt/cni/bin',
  CNI_ARGS: 'IgnoreUnknown=1;K8S_POD_NAMESPACE=shop;K8S_POD_NAME=cart-1',
};

function pod(annotations: Record<string, string>, extra: Partial<NonNullable<V1Pod['spec']>> = {}): V1Pod {
  return {
    metadata: { name: 'cart-1', namespace: 'shop', annotations },
    spec: { containers: [{ name: 'app' }, { name: 'istio-proxy', args: ['proxy', 'sidecar'] }], ...extra },
  };
}
const injected = { 'sidecar.istio.io/status': '{"containers":["istio-proxy"]}' };

/** The pod is handed in; anything that would run a command fails the test. */
function deps(p: V1Pod, seen: string[] = []): PluginDeps {
  return {
    readPod: () => (ns, name) => {
      seen.push(`${ns}/${name}`);
      return Promise.resolve(p);
    },
    exec: () => () => Promise.reject(new Error('no command may run in this test')),
  };
}

describe('meshpilot-cni: config and environment', () => {
  it('CNI_ARGS pairs', () => {
    assert.deepEqual(parseCniArgs('IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p;K8S_POD_INFRA_CONTAINER_ID=abc'), {
      IgnoreUnknown: '1',
      K8S_POD_NAMESPACE: 'ns',
      K8S_POD_NAME: 'p',
      K8S_POD_INFRA_CONTAINER_ID: 'abc',
    });
    assert.throws(() => parseCniArgs('K8S_POD_NAME'), /invalid CNI_ARGS: "K8S_POD_NAME" is not KEY=VALUE/);
  });

  it('env: command and required variables named; DEL may come without CNI_NETNS', () => {
    assert.throws(() => parseCniEnv({ CNI_COMMAND: 'GC' }), /invalid CNI_COMMAND "GC"/);
    assert.throws(() => parseCniEnv({ ...ENV, CNI_NETNS: '' }), /CNI_NETNS is required for ADD/);
    assert.equal(parseCniEnv({ ...ENV, CNI_COMMAND: 'DEL', CNI_NETNS: '' }).netns, '');
    assert.deepEqual(parseCniEnv({ ...ENV, CNI_PATH: '/a::/b' }).path, ['/a', '/b']);
  });

  it("istio-cni's field names: kubernetes.kubeconfig, exclude_namespaces at the top or under kubernetes", () => {
    const c = parsePluginConfig(JSON.stringify({ ...CONFIG, kubernetes: { kubeconfig: '/k', exclude_namespaces: ['istio-system'] } }));
    assert.equal(c.kubeconfig, '/k');
    assert.deepEqual(c.excludeNamespaces, ['kube-system', 'istio-system']);
    assert.deepEqual(c.prevResult, PREV);
  });

  it('bad network configs name the field', () => {
    assert.throws(
      () => parsePluginConfig('{'),
      (e: { cniCode: number; message: string }) => e.cniCode === CniCode.DECODE_FAILURE && /not JSON/.test(e.message),
    );
    assert.throws(() => parsePluginConfig(JSON.stringify({ ...CONFIG, cniVersion: '2.0.0' })), /incompatible CNI version "2.0.0"/);
    assert.throws(
      () => parsePluginConfig(JSON.stringify({ ...CONFIG, exclude_namespaces: 'kube-system' })),
      /exclude_namespaces must be a list of strings/,
    );
    assert.throws(
      () => parsePluginConfig(JSON.stringify({ ...CONFIG, kubernetes: { kubeconfig: 7 } })),
      /kubernetes.kubeconfig must be a string/,
    );
  });

  it('prevResult addresses, CIDR suffix dropped', () => {
    assert.deepEqual(resultAddresses({ ips: [{ address: '10.22.0.5/16' }, { address: 'fd00::5/64' }] }), [
      { address: '10.22.0.5', family: 4 },
      { address: 'fd00::5', family: 6 },
    ]);
    assert.deepEqual(resultAddresses(undefined), []);
  });
});

describe('meshpilot-cni: which pods are captured (istio-cni checks)', () => {
  const skipOf = (p: V1Pod): string | undefined => {
    const d = decideForPod(p, []);
    return 'skip' in d ? d.skip : undefined;
  };
  it('an injected sidecar pod is captured, with the sidecar uid/gid and env', () => {
    const d = decideForPod(
      pod(injected, {
        containers: [
          {
            name: 'istio-proxy',
            securityContext: { runAsUser: 1000670000, runAsGroup: 7 },
            env: [{ name: 'ISTIO_META_DNS_CAPTURE', value: 'true' }],
          },
        ],
      }),
      [],
    );
    assert.ok('capture' in d);
    assert.deepEqual([d.capture.proxyUid, d.capture.proxyGid, d.capture.proxyEnv], [1000670000, 7, { ISTIO_META_DNS_CAPTURE: 'true' }]);
  });
  it('a native sidecar (init container istio-proxy) counts', () => {
    assert.equal(
      skipOf(pod(injected, { containers: [{ name: 'app' }], initContainers: [{ name: 'istio-proxy', restartPolicy: 'Always' }] })),
      undefined,
    );
  });
  it('skips: no sidecar, istio-init present, gateway proxy, DISABLE_ENVOY, inject "false", no status annotation', () => {
    assert.match(skipOf(pod(injected, { containers: [{ name: 'app' }] })) ?? '', /no istio-proxy container/);
    assert.match(skipOf(pod(injected, { initContainers: [{ name: 'istio-init' }] })) ?? '', /istio-init init container/);
    assert.match(
      skipOf(pod(injected, { containers: [{ name: 'istio-proxy', args: ['proxy', 'router'] }] })) ?? '',
      /proxy type is "router"/,
    );
    assert.match(
      skipOf(pod(injected, { containers: [{ name: 'istio-proxy', env: [{ name: 'DISABLE_ENVOY', value: 'true' }] }] })) ?? '',
      /DISABLE_ENVOY/,
    );
    assert.match(skipOf(pod({ ...injected, 'sidecar.istio.io/inject': 'false' })) ?? '', /sidecar.istio.io\/inject: "false"/);
    assert.equal(
      skipOf(pod({ ...injected, 'sidecar.istio.io/inject': 'maybe' })),
      undefined,
      'unparsable: ignored, as strconv.ParseBool fails in istio-cni',
    );
    assert.match(skipOf(pod({})) ?? '', /no sidecar.istio.io\/status annotation/);
  });
  it('the sidecar.istio.io/inject label wins over the annotation; the proxy type is read only from `proxy <type>` first (istio-cni source)', () => {
    const labelled = (value: string, annotations: Record<string, string>): V1Pod => ({
      ...pod(annotations),
      metadata: { ...pod(annotations).metadata, labels: { 'sidecar.istio.io/inject': value } },
    });
    assert.match(
      skipOf(labelled('false', { ...injected, 'sidecar.istio.io/inject': 'true' })) ?? '',
      /labelled sidecar.istio.io\/inject: "false"/,
    );
    assert.equal(skipOf(labelled('true', { ...injected, 'sidecar.istio.io/inject': 'false' })), undefined);
    assert.equal(skipOf(pod(injected, { containers: [{ name: 'istio-proxy', args: ['--x', 'proxy', 'router'] }] })), undefined);
  });
});

describe('meshpilot-cni: golden of the e2e pod', () => {
  it('cni-plugin-e2e: the rules test/e2e/cni-plugin.test.ts expects in its injected pod (excludeOutboundPorts 9000, uid 1337)', () => {
    const d = decideForPod(
      pod(
        { ...injected, 'traffic.sidecar.istio.io/excludeOutboundPorts': '9000' },
        { containers: [{ name: 'istio-proxy', securityContext: { runAsUser: 1337, runAsGroup: 1337 } }] },
      ),
      [{ address: '10.251.0.3', family: 4 }],
    );
    assert.ok('capture' in d);
    const text = renderRuleSet(buildCaptureRules(captureConfigFromAnnotations(d.annotations, d.capture)));
    assertGoldenText(join(REPO_ROOT, 'testdata', 'iptables', 'cni-plugin-e2e.golden'), text);
  });
});

describe('meshpilot-cni: the CNI protocol', () => {
  const stdin = JSON.stringify(CONFIG);

  it('VERSION lists the versions spoken', async () => {
    const r = await runCniPlugin({ CNI_COMMAND: 'VERSION' }, '');
    assert.equal(r.code, 0);
    assert.deepEqual(JSON.parse(r.stdout), { cniVersion: '1.0.0', supportedVersions: ['0.3.0', '0.3.1', '0.4.0', '1.0.0'] });
  });

  it('ADD of a skipped pod passes prevResult through unchanged and touches nothing', async () => {
    const seen: string[] = [];
    const r = await runCniPlugin(ENV, stdin, deps(pod({}), seen));
    assert.equal(r.code, 0, r.stdout);
    assert.deepEqual(JSON.parse(r.stdout), PREV);
    assert.deepEqual(seen, ['shop/cart-1']);
    assert.match(r.stderr, /skipped: pod shop\/cart-1: no sidecar.istio.io\/status/);
  });

  it('ADD in an excluded namespace does not even read the pod', async () => {
    const seen: string[] = [];
    const r = await runCniPlugin({ ...ENV, CNI_ARGS: 'K8S_POD_NAMESPACE=kube-system;K8S_POD_NAME=dns' }, stdin, deps(pod(injected), seen));
    assert.equal(r.code, 0);
    assert.deepEqual(seen, []);
    assert.deepEqual(JSON.parse(r.stdout), PREV);
  });

  it('errors are CNI error objects on stdout with a non-zero exit, in the request cniVersion', async () => {
    const bad = await runCniPlugin(
      ENV,
      JSON.stringify({ ...CONFIG, cniVersion: '0.4.0' }),
      deps(pod({ ...injected, 'traffic.sidecar.istio.io/excludeOutboundIPRanges': '10.0.0.0/33' })),
    );
    assert.equal(bad.code, 1);
    const e = JSON.parse(bad.stdout) as Record<string, unknown>;
    assert.deepEqual(Object.keys(e), ['cniVersion', 'code', 'msg', 'details']);
    assert.equal(e.cniVersion, '0.4.0');
    assert.equal(e.code, CniCode.INVALID_POD_CONFIG);
    assert.match(String(e.msg), /pod shop\/cart-1: .*traffic.sidecar.istio.io\/excludeOutboundIPRanges annotation.*10\.0\.0\.0\/33/);

    const unchained = await runCniPlugin(ENV, JSON.stringify({ ...CONFIG, prevResult: undefined }), deps(pod(injected)));
    assert.equal(JSON.parse(unchained.stdout).code, CniCode.INVALID_NETWORK_CONFIG);
    assert.match(JSON.parse(unchained.stdout).msg, /must be chained after a primary plugin/);

    const noNetns = await runCniPlugin(ENV, stdin, deps(pod(injected)));
    assert.equal(noNetns.code, 1);
    assert.equal(JSON.parse(noNetns.stdout).code, CniCode.CONTAINER_UNKNOWN);
    assert.match(JSON.parse(noNetns.stdout).msg, /network namespace \/run\/netns\/none-such \(CNI_NETNS\) does not exist/);
  });

  it('no kubeconfig in the plugin config: a clear error, never an uncaptured pod', async () => {
    const r = await runCniPlugin(ENV, JSON.stringify({ ...CONFIG, kubernetes: {} }));
    assert.equal(r.code, 1);
    assert.match(JSON.parse(r.stdout).msg, /kubernetes.kubeconfig is required/);
  });

  it('a node without usable iptables fails ADD with a clear error (the pod must not start uncaptured)', async () => {
    const ran: string[] = [];
    const noIptables: PluginDeps = {
      readPod: () => () => Promise.resolve(pod(injected)),
      exec: (netns) => (cmd) => {
        ran.push(`${netns} ${cmd}`);
        return Promise.resolve({ code: 127, stdout: '', stderr: `${cmd}: not found\n` });
      },
    };
    // Any existing namespace path will do: nothing runs for real.
    const r = await runCniPlugin({ ...ENV, CNI_NETNS: '/proc/self/ns/net' }, stdin, noIptables);
    assert.equal(r.code, 1);
    const e = JSON.parse(r.stdout) as { code: number; msg: string; details: string };
    assert.equal(e.code, CniCode.CAPTURE_FAILED);
    assert.match(
      e.msg,
      /pod shop\/cart-1: cannot program traffic capture in \/proc\/self\/ns\/net: no usable iptables found .*install the iptables package/,
    );
    assert.match(e.details, /must not start uncaptured/);
    assert.ok(ran.length > 0 && ran.every((l) => l.startsWith('/proc/self/ns/net ')), 'commands were aimed at CNI_NETNS');
  });

  it('CHECK of a pod that must not be captured fails if ISTIO_* chains exist; one captured by its istio-init is not judged', async () => {
    const saves: Record<string, string> = { 'iptables-nft-save': '*nat\n:OUTPUT ACCEPT [0:0]\nCOMMIT\n', 'iptables-legacy-save': '' };
    const ran: string[] = [];
    const withSaves = (p: V1Pod): PluginDeps => ({
      readPod: () => () => Promise.resolve(p),
      exec: () => (cmd) => {
        ran.push(cmd);
        return Promise.resolve(
          cmd in saves ? { code: 0, stdout: saves[cmd] ?? '', stderr: '' } : { code: 1, stdout: '', stderr: 'not here' },
        );
      },
    });
    const env = { ...ENV, CNI_COMMAND: 'CHECK', CNI_NETNS: '/proc/self/ns/net' };
    const off = pod({ ...injected, 'sidecar.istio.io/inject': 'false' });
    const clean = await runCniPlugin(env, stdin, withSaves(off));
    assert.equal(clean.code, 0, clean.stdout);
    assert.match(clean.stderr, /CHECK: pod shop\/cart-1: annotated sidecar.istio.io\/inject: "false": no ISTIO_\* chains, as expected/);
    saves['iptables-nft-save'] = '*nat\n:OUTPUT ACCEPT [0:0]\n:ISTIO_OUTPUT - [0:0]\n-A OUTPUT -j ISTIO_OUTPUT\nCOMMIT\n';
    const dirty = await runCniPlugin(env, stdin, withSaves(off));
    assert.equal(dirty.code, 1);
    const e = JSON.parse(dirty.stdout) as { code: number; msg: string; details: string };
    assert.equal(e.code, CniCode.CAPTURE_FAILED);
    assert.match(
      e.msg,
      /CHECK: pod shop\/cart-1: annotated sidecar.istio.io\/inject: "false", so it must not be captured, yet 1 ISTIO_\* chain\(s\) exist in \/proc\/self\/ns\/net/,
    );
    assert.equal(e.details, 'iptables-nft -t nat ISTIO_OUTPUT');
    ran.length = 0;
    const initMode = await runCniPlugin(env, stdin, withSaves(pod(injected, { initContainers: [{ name: 'istio-init' }] })));
    assert.equal(initMode.code, 0, initMode.stdout);
    assert.deepEqual(ran, [], 'its istio-init made those chains: nothing checked');
  });

  it('DEL succeeds when the namespace is gone (or not given)', async () => {
    for (const netns of ['/run/netns/none-such', '']) {
      const r = await runCniPlugin({ ...ENV, CNI_COMMAND: 'DEL', CNI_NETNS: netns }, stdin, deps(pod(injected)));
      assert.equal(r.code, 0, r.stdout);
      assert.equal(r.stdout, '');
    }
  });
});
