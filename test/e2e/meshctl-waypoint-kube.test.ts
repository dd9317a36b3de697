/**
 * meshctl's ambient commands against a real kube-apiserver (../shared/kube) with the Gateway API
 * CRDs:
 * - `waypoint apply` server-side applies the Gateway istioctl would (and with --enroll-namespace
 *   labels the namespace istio.io/use-waypoint, warning as istioctl does); `list` and `status` read
 *   Gateways of class istio-waypoint and their Programmed condition (written here through the
 *   status subresource, as the gateway controller would); `delete` by name, --revision and --all.
 * - `ztunnel-config` on a cluster: the ztunnel pod chosen as istioctl chooses it (the DaemonSet's,
 *   the one on --node, the one on a workload pod's node) and its config_dump read through the API
 *   server's pod proxy — here from an HTTP server standing in for the ztunnel admin port on this
 *   host's non-loopback address (the API server refuses to proxy to loopback).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { networkInterfaces } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse, stringify } from 'yaml';
import { runCli } from '../../src/meshctl/cli.js';
import type { CliIO } from '../../src/meshctl/io.js';
import { adminRequest, applyCrds, KUBE_SETUP_TIMEOUT_MS, kubeSkipReason, startKubeCluster, type KubeCluster } from '../support/kube.js';
import { CoreClient } from '../support/kube-objects.js';
import { REPO_ROOT } from '../support/paths.js';

const skip = kubeSkipReason();
const CRD_DIR = join(REPO_ROOT, 'manifests', 'crds', 'gateway-api');
const DUMP = join(REPO_ROOT, 'testdata', 'meshctl', 'ztunnel-config', 'config_dump.json');
let cluster: KubeCluster;

async function meshctl(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const io: CliIO = {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    env: {},
    cwd: REPO_ROOT,
  };
  const code = await runCli([...argv, '-k', cluster.kubeconfigPath], io, { proxyCommands: false });
  return { code, stdout, stderr };
}

async function api(method: string, path: string, body?: unknown, contentType?: string): Promise<Record<string, unknown>> {
  const r = await adminRequest(cluster.env, method, path, body, contentType);
  assert.ok(r.status < 300, `${method} ${path}: ${r.status} ${r.body}`);
  return JSON.parse(r.body) as Record<string, unknown>;
}

const gatewayPath = (ns: string, name: string): string => `/apis/gateway.networking.k8s.io/v1/namespaces/${ns}/gateways/${name}`;

/** What the gateway controller would write: the Programmed condition. */
async function setProgrammed(ns: string, name: string, status: 'True' | 'False'): Promise<void> {
  const gw = await api('GET', gatewayPath(ns, name));
  const generation = (gw.metadata as { generation: number }).generation;
  const condition = {
    type: 'Programmed',
    status,
    reason: status === 'True' ? 'Programmed' : 'Pending',
    message: status === 'True' ? 'ok' : 'waiting',
    lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    observedGeneration: generation,
  };
  await api('PATCH', `${gatewayPath(ns, name)}/status`, { status: { conditions: [condition] } }, 'application/merge-patch+json');
}

// One API server for the file.
before(
  async () => {
    if (skip) return;
    cluster = await startKubeCluster();
    for (const f of readdirSync(CRD_DIR).filter((n) => n.endsWith('.yaml')))
      await applyCrds(cluster.clientNode, cluster.env, join(CRD_DIR, f));
  },
  { timeout: KUBE_SETUP_TIMEOUT_MS },
);

after(async () => {
  await cluster?.stop();
});

describe('meshctl waypoint against a real Kubernetes API server', { skip }, () => {
  let ns: string;
  let other: string;

  before(async () => {
    ns = await cluster.namespace('wp');
    other = await cluster.namespace('billing', { 'istio.io/dataplane-mode': 'ambient' });
  });

  it('apply: the generated Gateway, server-side applied; a missing namespace is named', async () => {
    const r = await meshctl('waypoint', 'apply', '-n', ns, '--for', 'service');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `✅ waypoint ${ns}/waypoint applied\n`);
    const gw = (await api('GET', gatewayPath(ns, 'waypoint'))) as { metadata: { labels: Record<string, string> }; spec: unknown };
    assert.deepEqual(gw.metadata.labels, { 'istio.io/waypoint-for': 'service' });
    assert.deepEqual(gw.spec, {
      gatewayClassName: 'istio-waypoint',
      listeners: [{ name: 'mesh', port: 15008, protocol: 'HBONE', allowedRoutes: { namespaces: { from: 'Same' } } }],
    });
    const missing = await meshctl('waypoint', 'apply', '-n', 'no-such-ns');
    assert.equal(missing.code, 1);
    assert.equal(missing.stderr, 'Error: namespace: no-such-ns not found\n');
  });

  it('list and status: PROGRAMMED from the Gateway status; -A adds NAMESPACE', async () => {
    // The CRD's default status: Programmed Unknown until a controller writes it.
    const notYet = await meshctl('waypoint', 'list', '-n', ns);
    assert.equal(
      notYet.stdout,
      'NAME         REVISION     TRAFFIC TYPE     PROGRAMMED\nwaypoint     default      service          Unknown\n',
    );
    await setProgrammed(ns, 'waypoint', 'False');
    const pending = await meshctl('waypoint', 'status', '-n', ns, '--wait=false');
    assert.equal(
      pending.stdout,
      'NAME         STATUS     TYPE           REASON      MESSAGE\nwaypoint     False      Programmed     Pending     waiting\n',
    );
    const timedOut = await meshctl('waypoint', 'status', '-n', ns, '--waypoint-timeout', '1s');
    assert.equal(timedOut.code, 1);
    assert.equal(
      timedOut.stderr,
      `Error: failed to print waypoint status: timed out while retrieving status for waypoint\t${ns}/waypoint\n`,
    );

    await setProgrammed(ns, 'waypoint', 'True');
    const ready = await meshctl('waypoint', 'status', '-n', ns);
    assert.equal(
      ready.stdout,
      'NAME         STATUS     TYPE           REASON         MESSAGE\nwaypoint     True       Programmed     Programmed     ok\n',
    );
    const all = await meshctl('waypoint', 'list', '-A');
    assert.match(
      all.stdout,
      new RegExp(`^NAMESPACE +NAME +REVISION +TRAFFIC TYPE +PROGRAMMED\n${ns} +waypoint +default +service +True\n$`),
    );
    assert.equal((await meshctl('waypoint', 'list', '-n', other)).stdout, 'No waypoints found.\n');
  });

  it('apply --wait returns once the waypoint is programmed', async () => {
    const r = await meshctl('waypoint', 'apply', '-n', ns, '--for', 'service', '--wait', '--waypoint-timeout', '20s');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `✅ waypoint ${ns}/waypoint applied\n✅ waypoint ${ns}/waypoint is ready!\n`);
  });

  it('--enroll-namespace labels the namespace (warning when it is not ambient), and does not overwrite without --overwrite', async () => {
    const first = await meshctl('waypoint', 'apply', '-n', ns, '--name', 'east', '--enroll-namespace');
    assert.equal(first.code, 0, first.stderr);
    assert.equal(
      first.stdout,
      `⚠️ Warning: namespace is not enrolled in ambient. Consider running\t\`kubectl label namespace ${ns} istio.io/dataplane-mode=ambient\`\n` +
        `✅ waypoint ${ns}/east applied\n✅ namespace ${ns} labeled with "istio.io/use-waypoint: east"\n`,
    );
    const labels = async (): Promise<Record<string, string>> =>
      ((await api('GET', `/api/v1/namespaces/${ns}`)).metadata as { labels: Record<string, string> }).labels;
    assert.equal((await labels())['istio.io/use-waypoint'], 'east');

    const again = await meshctl('waypoint', 'apply', '-n', ns, '--name', 'west', '--enroll-namespace');
    assert.equal(
      again.stdout,
      `⚠️ Warning: namespace (${ns}) already has an enrolled Waypoint. Consider adding the \`--overwrite\` flag to your apply command.\n`,
    );
    assert.equal(await adminRequest(cluster.env, 'GET', gatewayPath(ns, 'west')).then((r) => r.status), 404, 'nothing applied');
    const over = await meshctl('waypoint', 'apply', '-n', ns, '--name', 'west', '--enroll-namespace', '--overwrite', '-r', 'canary');
    assert.equal(over.code, 0, over.stderr);
    assert.equal((await labels())['istio.io/use-waypoint'], 'west');

    // An ambient namespace: no warning.
    const quiet = await meshctl('waypoint', 'apply', '-n', other, '--enroll-namespace');
    assert.equal(
      quiet.stdout,
      `✅ waypoint ${other}/waypoint applied\n✅ namespace ${other} labeled with "istio.io/use-waypoint: waypoint"\n`,
    );
  });

  it("without -n: the kubeconfig context's namespace", async () => {
    const kc = parse(readFileSync(cluster.kubeconfigPath, 'utf8')) as { contexts: { context: Record<string, unknown> }[] };
    for (const c of kc.contexts) c.context.namespace = other;
    const file = join(dirname(cluster.kubeconfigPath), 'with-namespace.kubeconfig');
    writeFileSync(file, stringify(kc));
    let stdout = '';
    const io: CliIO = { stdout: { write: (s: string) => (stdout += s) }, stderr: { write: () => true }, env: {}, cwd: REPO_ROOT };
    assert.equal(await runCli(['waypoint', 'list', '-k', file], io, { proxyCommands: false }), 0);
    assert.match(stdout, /^waypoint +default +none +Unknown$/m);
  });

  it('delete: by name (a missing one is named), by --revision, then --all', async () => {
    const byName = await meshctl('waypoint', 'delete', 'east', 'ghost', '-n', ns);
    assert.equal(byName.code, 0, byName.stderr);
    assert.equal(byName.stdout, `waypoint ${ns}/ghost not found\nwaypoint ${ns}/east deleted\n`);
    const byRev = await meshctl('waypoint', 'delete', '-r', 'canary', '-n', ns);
    assert.equal(byRev.stdout, `waypoint ${ns}/west deleted\n`);
    const all = await meshctl('waypoint', 'delete', '--all', '-n', ns);
    assert.equal(all.stdout, `waypoint ${ns}/waypoint deleted\n`);
    assert.equal((await meshctl('waypoint', 'list', '-n', ns)).stdout, 'No waypoints found.\n');
  });
});

/** This host's first non-loopback IPv4 address (the API server proxies to pod IPs that are not loopback). */
function hostAddress(): string | undefined {
  return Object.values(networkInterfaces())
    .flat()
    .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
}

describe(
  'meshctl ztunnel-config on a cluster: the ztunnel chosen as istioctl, read through the pod proxy',
  { skip: skip ?? (hostAddress() ? undefined : 'no non-loopback IPv4 address') },
  () => {
    // The names the captured dump's workloads have, and the default Istio namespace.
    const system = 'istio-system';
    const shop = 'shop';
    let admin: Server;
    let port = 0;
    const asked: string[] = [];

    before(
      async () => {
        for (const name of [system, shop]) await api('POST', '/api/v1/namespaces', { metadata: { name } });
        admin = createServer((req, res) => {
          asked.push(req.url ?? '');
          res.setHeader('content-type', 'application/json');
          res.end(readFileSync(DUMP));
        });
        await new Promise<void>((r) => admin.listen(0, hostAddress(), r));
        port = (admin.address() as { port: number }).port;
        await api('POST', `/apis/apps/v1/namespaces/${system}/daemonsets`, {
          metadata: { name: 'ztunnel' },
          spec: {
            selector: { matchLabels: { app: 'ztunnel' } },
            template: { metadata: { labels: { app: 'ztunnel' } }, spec: { containers: [{ name: 'istio-proxy', image: 'ztunnel' }] } },
          },
        });
        const core = new CoreClient(cluster.clientNode);
        const running = (ip: string) => ({
          phase: 'Running',
          podIP: ip,
          podIPs: [{ ip }],
          conditions: [{ type: 'Ready', status: 'True' }],
        });
        const pod = (name: string, labels: Record<string, string>, node: string) => ({
          metadata: { name, labels },
          spec: { nodeName: node, containers: [{ name: 'c', image: 'x' }] },
        });
        await core.pod(system, pod('ztunnel-a', { app: 'ztunnel' }, 'node-a'), running('10.9.0.1'));
        await core.pod(system, pod('ztunnel-b', { app: 'ztunnel' }, 'node-b'), running(hostAddress()!));
        await core.pod(shop, pod('vm-2', { app: 'vm' }, 'node-b'), running('10.9.0.3'));
      },
      { timeout: KUBE_SETUP_TIMEOUT_MS },
    );

    after(() => {
      admin?.close();
    });

    it('--node: the DaemonSet pod on that node, its config_dump through pods/<name>:<port>/proxy', async () => {
      const r = await meshctl('ztunnel-config', 'workloads', '--node', 'node-b', '--proxy-admin-port', String(port));
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(asked.splice(0), ['/config_dump']);
      assert.equal(r.stdout.split('\n').length, 5, r.stdout);
      assert.match(r.stdout, /^shop +vm-2 +10\.44\.0\.22 +None +HBONE$/m);
    });

    it('a workload pod: the ztunnel of its node, output filtered to that workload', async () => {
      const r = await meshctl('zc', 'workloads', `vm-2.${shop}`, '--proxy-admin-port', String(port));
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, 'NAMESPACE POD NAME ADDRESS    NODE WAYPOINT PROTOCOL\nshop      vm-2     10.44.0.22      None     HBONE\n');
      assert.deepEqual(asked.splice(0), ['/config_dump']);
    });

    it('per-ztunnel output with several ztunnels and none named: refused as istioctl; a named ztunnel pod is asked directly', async () => {
      const r = await meshctl('zc', 'certificates', '--proxy-admin-port', String(port));
      assert.equal(r.code, 64);
      assert.match(r.stderr, /ztunnel pod name or --node must be set/);
      const named = await meshctl('zc', 'certificates', `ztunnel-b.${system}`, '--proxy-admin-port', String(port));
      assert.equal(named.code, 0, named.stderr);
      assert.match(named.stdout, /^spiffe:\/\/cluster\.local\/ns\/shop\/sa\/vm-sa +Leaf +Available/m);
      const unreachable = await meshctl('zc', 'services', `ztunnel-a.${system}`, '--proxy-admin-port', String(port));
      assert.equal(unreachable.code, 1);
      assert.match(unreachable.stderr, new RegExp(`failed to execute command on ztunnel-a\\.${system} Ztunnel`));
    });
  },
);
