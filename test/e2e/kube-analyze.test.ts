/**
 * `meshctl analyze` with the Kubernetes source: `meshctl analyze -k KUBECONFIG` reads Istio config,
 * Services and Pods from a real API server (../shared/kube) and prints istioctl's messages, naming
 * cluster objects without a file; files given beside the cluster win over cluster objects of the
 * same kind and name, as istioctl's.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCli } from '../../src/meshctl/cli.js';
import type { CliIO } from '../../src/meshctl/io.js';
import { KUBE_SETUP_TIMEOUT_MS, kubeSkipReason, startKubeCluster, type KubeCluster } from '../support/kube.js';
import { CoreClient, IstioClient } from '../support/kube-objects.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';

const skip = kubeSkipReason();
let cluster: KubeCluster;
let ns: string;
let dir: TempDir | undefined;

async function meshctl(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const io: CliIO = {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    env: {},
    cwd: dir?.path ?? process.cwd(),
  };
  const code = await runCli(argv, io, { proxyCommands: false });
  return { code, stdout, stderr };
}

describe('meshctl analyze against a real Kubernetes API server', { skip }, () => {
  before(
    async () => {
      cluster = await startKubeCluster();
      await cluster.applyIstioCrds();
      ns = await cluster.namespace('shop');
      const k8s = new CoreClient(cluster.clientNode);
      await k8s.service(ns, {
        metadata: { name: 'web' },
        spec: {
          selector: { app: 'web' },
          ports: [
            { name: 'http', port: 80, targetPort: 8080 },
            { name: 'metrics', port: 9090 },
          ],
        },
      });
      await new IstioClient(cluster.clientNode).create({
        apiVersion: 'networking.istio.io/v1',
        kind: 'VirtualService',
        metadata: { name: 'web', namespace: ns },
        spec: { hosts: ['web'], http: [{ route: [{ destination: { host: 'web.bogus' } }] }] },
      });
      dir = tempDir('meshctl-kube-analyze-');
    },
    { timeout: KUBE_SETUP_TIMEOUT_MS },
  );

  after(async () => {
    await dir?.remove();
    await cluster?.stop();
  });

  it('-k: messages about cluster objects (Namespaces, Services, Istio config), named without a file; exit 79 on an error', async () => {
    const r = await meshctl(['analyze', '-k', cluster.kubeconfigPath, '-n', ns]);
    assert.equal(r.code, 79, r.stderr);
    assert.deepEqual(r.stdout.trimEnd().split('\n'), [
      `Error [IST0101] (VirtualService ${ns}/web) Referenced host not found: "web.bogus"`,
      `Info [IST0102] (Namespace ${ns}) The namespace is not enabled for Istio injection. Run 'kubectl label namespace ${ns} istio-injection=enabled' to enable it, or 'kubectl label namespace ${ns} istio-injection=disabled' to explicitly mark it as not needing injection.`,
      `Info [IST0118] (Service ${ns}/web) Port name metrics (port: 9090, targetPort: 9090) doesn't follow the naming convention of Istio port.`,
    ]);
  });

  it('a file beside the cluster wins over the cluster object of the same name', async () => {
    assert.ok(dir);
    await writeFile(
      join(dir.path, 'vs.yaml'),
      `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: web, namespace: ${ns}}
spec:
  hosts: [web]
  http:
  - route:
    - destination: {host: web, port: {number: 80}}
`,
    );
    const r = await meshctl(['analyze', '-k', cluster.kubeconfigPath, '-n', ns, 'vs.yaml']);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.doesNotMatch(r.stdout, /IST0101/);
    assert.match(r.stdout, /IST0118/, 'cluster Services are still analyzed');
  });

  it('--use-kube=false ignores the cluster; an unreachable cluster is exit 1 naming the kubeconfig', async () => {
    assert.ok(dir);
    // Without the cluster, the file's VirtualService routes to a host nothing defines.
    const files = await meshctl(['analyze', '-k', cluster.kubeconfigPath, '--use-kube', 'false', '-n', ns, 'vs.yaml']);
    assert.equal(files.code, 79);
    assert.equal(files.stdout, `Error [IST0101] (VirtualService ${ns}/web vs.yaml:8) Referenced host not found: "web"\n`);
    const bad = join(dir.path, 'kubeconfig-nowhere');
    await writeFile(
      bad,
      (await import('node:fs')).readFileSync(cluster.kubeconfigPath, 'utf8').replace(cluster.url, 'https://127.0.0.1:1'),
    );
    const down = await meshctl(['analyze', '-k', bad]);
    assert.equal(down.code, 1);
    assert.match(down.stderr, /cannot read the cluster \(.*kubeconfig-nowhere\)/);
  });
});
