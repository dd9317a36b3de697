/**
 * `meshctl analyze -k` reads what the newer analyzers need from a real API server: Deployments
 * (apps/v1), gateway credential Secrets, the injector ConfigMap, EnvoyFilters and Telemetries, and
 * Pod annotations — and reports them as istioctl does, without file positions.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppsV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { KUBE_SETUP_TIMEOUT_MS, kubeSkipReason, startKubeCluster, type KubeCluster } from '../../../test/support/kube.js';
import { CoreClient, IstioClient, readyStatus } from '../../../test/support/kube-objects.js';
import { run } from '../test-io.js';

const skip = kubeSkipReason();
let cluster: KubeCluster | undefined;
let ns = '';

// Expired at the start of 2021 (the same credential as testdata/meshctl/analyze/gateway-secret/invalid.yaml).
const EXPIRED_CERT = `-----BEGIN CERTIFICATE-----
MIIBHDCBwgIBATAKBggqhkjOPQQDAjAaMRgwFgYDVQQDDA9vbGQuZXhhbXBsZS5j
b20wHhcNMjAwMTAxMDAwMDAwWhcNMjEwMTAxMDAwMDAwWjAaMRgwFgYDVQQDDA9v
bGQuZXhhbXBsZS5jb20wWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAARutnXvXmse
WRBbp3Lh4pLdWy2beshs6NfI3JuuuMXBtb8cHz8L+GHdJs4oRhgw6Unu0CO+Jf0i
gPo/SvqtGJfyMAoGCCqGSM49BAMCA0kAMEYCIQDeT32lxD3xSFtGrX4kjTpkshm1
GrH49nU/7oZjoFpfDwIhAObXfosnEIzFY19QpJefSeC+hLX5d9avfEjJiTpHpXx+
-----END CERTIFICATE-----
`;

describe('meshctl analyze -k: Deployments, Secrets, EnvoyFilters, Telemetries and annotations from a real API server', { skip }, () => {
  before(
    async () => {
      cluster = await startKubeCluster();
      await cluster.applyIstioCrds();
      const kc = cluster.clientNode;
      ns = await cluster.namespace('dns', { 'istio-injection': 'enabled' });
      const core = new CoreClient(kc);
      await core.pod(
        ns,
        {
          metadata: { name: 'gw', labels: { istio: 'dns-gateway' }, annotations: { 'sidecar.istio.io/bogus': 'x' } },
          spec: { containers: [{ name: 'istio-proxy', image: 'proxyv2' }] },
        },
        readyStatus('10.0.0.5'),
      );
      for (const [name, protocol] of [
        ['dns-tcp', 'TCP'],
        ['dns-udp', 'UDP'],
      ] as const) {
        await core.service(ns, {
          metadata: { name },
          spec: { selector: { app: 'coredns' }, ports: [{ name: `${protocol.toLowerCase()}-dns`, port: 53, protocol }] },
        });
      }
      await core.service(ns, {
        metadata: { name: 'gw' },
        spec: { selector: { istio: 'dns-gateway' }, ports: [{ name: 'tls', port: 443 }] },
      });
      // The injector's ConfigMap names another proxy image than the gateway pod runs (IST0158).
      await core.core.createNamespacedConfigMap({
        namespace: ns,
        body: {
          metadata: { name: 'istio-sidecar-injector' },
          data: { values: JSON.stringify({ global: { hub: 'registry.example.com/istio', tag: '1.28.0', proxy: { image: 'proxyv2' } } }) },
        },
      });
      await core.core.createNamespacedSecret({
        namespace: ns,
        body: { metadata: { name: 'old-cert' }, stringData: { cert: EXPIRED_CERT, key: 'not checked once the certificate is expired' } },
      });
      await kc.makeApiClient(AppsV1Api).createNamespacedDeployment({
        namespace: ns,
        body: {
          metadata: { name: 'coredns' },
          spec: {
            selector: { matchLabels: { app: 'coredns' } },
            template: { metadata: { labels: { app: 'coredns' } }, spec: { containers: [{ name: 'coredns', image: 'coredns' }] } },
          },
        },
      });
      await new IstioClient(kc).create({
        apiVersion: 'networking.istio.io/v1',
        kind: 'Gateway',
        metadata: { name: 'dns', namespace: ns },
        spec: {
          selector: { istio: 'dns-gateway' },
          servers: [
            {
              port: { number: 443, name: 'tls', protocol: 'TLS' },
              hosts: ['dns.example.com'],
              tls: { mode: 'SIMPLE', credentialName: 'old-cert' },
            },
          ],
        },
      });
      const custom = kc.makeApiClient(CustomObjectsApi);
      await custom.createNamespacedCustomObject({
        group: 'networking.istio.io',
        version: 'v1alpha3',
        plural: 'envoyfilters',
        namespace: ns,
        body: {
          apiVersion: 'networking.istio.io/v1alpha3',
          kind: 'EnvoyFilter',
          metadata: { name: 'replace-cluster' },
          spec: { configPatches: [{ applyTo: 'CLUSTER', patch: { operation: 'REPLACE', value: { name: 'c' } } }] },
        },
      });
      for (const name of ['logs', 'traces']) {
        await custom.createNamespacedCustomObject({
          group: 'telemetry.istio.io',
          version: 'v1',
          plural: 'telemetries',
          namespace: ns,
          body: { apiVersion: 'telemetry.istio.io/v1', kind: 'Telemetry', metadata: { name }, spec: {} },
        });
      }
    },
    { timeout: KUBE_SETUP_TIMEOUT_MS },
  );

  after(async () => {
    await cluster?.stop();
  });

  it('reports the cluster objects by kind and name, exit 79', async () => {
    assert.ok(cluster);
    const r = await run(['analyze', '-k', cluster.kubeconfigPath, '-n', ns]);
    assert.equal(r.code, 79, r.stderr);
    assert.deepEqual(r.stdout.trimEnd().split('\n'), [
      `Error [IST0152] (EnvoyFilter ${ns}/replace-cluster) The REPLACE operation is only valid for HTTP_FILTER and NETWORK_FILTER.`,
      `Error [IST0160] (Telemetry ${ns}/logs) The Telemetries [logs traces] in namespace "${ns}" have no workload selector, which can lead to undefined behavior.`,
      `Error [IST0160] (Telemetry ${ns}/traces) The Telemetries [logs traces] in namespace "${ns}" have no workload selector, which can lead to undefined behavior.`,
      `Error [IST0161] (Gateway ${ns}/dns) The credential referenced by the Gateway dns in namespace ${ns} is invalid, which can cause the traffic not to work as expected.`,
      `Warning [IST0108] (Pod ${ns}/gw) Unknown annotation: sidecar.istio.io/bogus`,
      `Warning [IST0116] (Deployment ${ns}/coredns) This deployment coredns is associated with multiple services using port 53 but different protocols: [${ns}/dns-tcp ${ns}/dns-udp]`,
      `Warning [IST0133] (EnvoyFilter ${ns}/replace-cluster) Schema validation warning: EnvoyFilter exposes internal implementation details that may change at any time. Prefer other APIs if possible, and exercise extreme caution, especially around upgrades.`,
      `Warning [IST0158] (Namespace ${ns}) The Istio proxy images of the pods running in the namespace do not match the image defined in the injection configuration (pod names: [gw]). This often happens after upgrading the Istio control-plane and can be fixed by redeploying the pods.`,
    ]);
  });

  it('--remote-contexts: a Service that differs between the primary (files over the cluster) and a remote cluster is IST0170', async () => {
    assert.ok(cluster);
    // A second context to the same API server stands for the remote cluster; the primary's `gw`
    // comes from the file (port 8443), the remote's from the API server (port 443).
    const kc = new KubeConfig();
    kc.loadFromFile(cluster.kubeconfigPath);
    const current = kc.getContextObject(kc.getCurrentContext());
    assert.ok(current);
    kc.addContext({ ...current, name: 'west' });
    const dir = mkdtempSync(join(tmpdir(), 'mp-remote-contexts-'));
    try {
      const kubeconfig = join(dir, 'kubeconfig');
      writeFileSync(kubeconfig, kc.exportConfig());
      const file = `apiVersion: v1
kind: Service
metadata:
  name: gw
  namespace: ${ns}
spec:
  selector:
    istio: dns-gateway
  ports:
  - name: tls
    port: 8443
`;
      const r = await run(['analyze', '-k', kubeconfig, '--remote-contexts', 'west', '-n', ns, '-'], file);
      assert.deepEqual(
        r.stdout.split('\n').filter((l) => l.includes('IST0170')),
        [
          `Warning [IST0170] (Service ${ns}/gw stdin.yaml:1) The service gw in namespace "${ns}" is inconsistent across clusters ["default" "west"], which can lead to undefined behaviors. The inconsistent behaviors are: service ports are inconsistent.`,
        ],
        r.stderr,
      );
      const unknown = await run(['analyze', '-k', kubeconfig, '--remote-contexts', 'east', '-n', ns]);
      assert.equal(unknown.code, 1);
      assert.match(unknown.stderr, /no context "east"/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
