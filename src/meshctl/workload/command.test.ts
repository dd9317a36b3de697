import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { parseAgentOptions } from '../../agent/options.js';
import { run } from '../test-io.js';
import { shellQuote } from './vm-files.js';

const dir = mkdtempSync(path.join(tmpdir(), 'mp-wl-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const GROUP = `apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata:
  name: reviews-vm
  namespace: bookinfo
  annotations:
    proxy.istio.io/config: |
      statusPort: 15030
spec:
  metadata:
    labels: { app: reviews, version: v3 }
  template:
    serviceAccount: reviews
    network: vm-net
    ports: { http: 9080, grpc: 9090 }
  probe:
    periodSeconds: 2
    httpGet: { port: 9080, path: /health }
`;

describe('meshctl x workload entry configure', () => {
  it('without a cluster writes mesh.yaml, cluster.env and hosts as istioctl does, and the agent runs from them', async () => {
    const wg = path.join(dir, 'wg.yaml');
    writeFileSync(wg, GROUP);
    const meshFile = path.join(dir, 'mesh-config.yaml');
    writeFileSync(meshFile, 'trustDomain: example.org\ndefaultConfig:\n  meshId: mesh1\n  proxyMetadata: { FOO: bar }\n');
    const root = path.join(dir, 'root.pem');
    writeFileSync(root, '-----BEGIN CERTIFICATE-----\nroot\n-----END CERTIFICATE-----\n');
    const out = path.join(dir, 'out');
    const r = await run([
      'x', 'workload', 'entry', 'configure', '-f', wg, '-o', out, '--clusterID', 'c1', '--autoregister',
      '--meshConfig', meshFile, '--rootCert', root, '--ingressIP', '192.0.2.7',
    ]); // prettier-ignore
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Configuration generation into directory .* was successful/);
    assert.match(r.stderr, /istio-token was not written/);

    const mesh = parseYaml(readFileSync(path.join(out, 'mesh.yaml'), 'utf8')) as { defaultConfig: Record<string, unknown> };
    const pc = mesh.defaultConfig;
    assert.equal(pc.meshId, 'mesh1');
    assert.equal(pc.statusPort, 15030, 'the proxy.istio.io/config annotation applies');
    assert.deepEqual(pc.readinessProbe, { periodSeconds: 2, httpGet: { port: 9080, path: '/health' } });
    const md = pc.proxyMetadata as Record<string, string>;
    assert.deepEqual(md, {
      FOO: 'bar',
      CANONICAL_SERVICE: 'reviews',
      CANONICAL_REVISION: 'v3',
      POD_NAMESPACE: 'bookinfo',
      SERVICE_ACCOUNT: 'reviews',
      TRUST_DOMAIN: 'example.org',
      ISTIO_META_CLUSTER_ID: 'c1',
      ISTIO_META_MESH_ID: 'mesh1',
      ISTIO_META_NETWORK: 'vm-net',
      ISTIO_META_WORKLOAD_NAME: 'reviews-vm',
      ISTIO_META_POD_PORTS: '[{"name":"grpc","containerPort":9090},{"name":"http","containerPort":9080}]',
      ISTIO_METAJSON_LABELS:
        '{"app":"reviews","service.istio.io/canonical-name":"reviews","service.istio.io/canonical-revision":"v3","version":"v3"}',
      ISTIO_META_DNS_CAPTURE: 'true',
      ISTIO_META_AUTO_REGISTER_GROUP: 'reviews-vm',
    });

    const env = readFileSync(path.join(out, 'cluster.env'), 'utf8');
    assert.ok(env.includes('ISTIO_INBOUND_PORTS=9090,9080\n'), env);
    assert.ok(env.includes('ISTIO_LOCAL_EXCLUDE_PORTS=22,15090,15021,15030\n'), 'the status port is excluded from capture');
    assert.ok(env.includes('ISTIO_SERVICE=reviews-vm.bookinfo\n'));
    assert.ok(env.includes("ISTIO_SERVICE_CIDR='*'\n"));
    assert.ok(env.includes(`ISTIO_METAJSON_LABELS=${shellQuote(md.ISTIO_METAJSON_LABELS!)}\n`));
    const lines = env.trimEnd().split('\n');
    assert.deepEqual(lines, [...lines].sort(), 'sorted as istioctl writes them');
    assert.equal(readFileSync(path.join(out, 'hosts'), 'utf8'), '192.0.2.7 istiod.istio-system.svc\n');
    assert.equal(readFileSync(path.join(out, 'root-cert.pem'), 'utf8'), readFileSync(root, 'utf8'));
    assert.equal(existsSync(path.join(out, 'istio-token')), false);

    // The VM's agent, with mesh.yaml where pilot-agent reads it and cluster.env as its environment.
    const envVars = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf('=')), parseYaml(l.slice(l.indexOf('=') + 1)) as string]));
    const agent = parseAgentOptions(['--meshConfig', path.join(out, 'mesh.yaml'), '--podIp', '10.0.0.9'], { ...envVars, PROXY_CONFIG: '' });
    assert.equal(agent.extraMetadata.AUTO_REGISTER_GROUP, 'reviews-vm');
    assert.equal(agent.namespace, 'bookinfo');
    assert.equal(agent.serviceAccount, 'reviews');
    assert.equal(agent.trustDomain, 'example.org');
    assert.deepEqual(agent.labels, JSON.parse(md.ISTIO_METAJSON_LABELS!));
    assert.equal(agent.readinessProbe?.periodMs, 2000);
    assert.deepEqual(agent.readinessProbe?.method, { httpGet: { port: 9080, path: '/health' } });
  });

  it('refuses bad usage and a bad WorkloadGroup with the file, line and field', async () => {
    assert.equal((await run(['x', 'workload', 'entry', 'configure', '-o', dir])).code, 64);
    const noOut = await run(['x', 'workload', 'entry', 'configure', '-f', 'x.yaml']);
    assert.deepEqual([noOut.code, noOut.stderr], [64, 'Error: expecting an output directory\n']);
    const bad = path.join(dir, 'bad.yaml');
    writeFileSync(bad, GROUP.replace('port: 9080, path', 'port: 0, path'));
    const r = await run(['x', 'workload', 'entry', 'configure', '-f', bad, '-o', path.join(dir, 'bad-out')]);
    assert.equal(r.code, 64);
    assert.match(
      r.stderr,
      /bad\.yaml:1 WorkloadGroup bookinfo\/reviews-vm spec\.probe\.httpGet\.port: port number 0 must be in the range 1\.\.65535/,
    );
  });

  it('shell-quotes values as Go shellescape does', () => {
    assert.deepEqual(['', 'plain-1.2:3', '*', `it's`, '{"a":1}'].map(shellQuote), ["''", 'plain-1.2:3', "'*'", `'it'"'"'s'`, `'{"a":1}'`]);
  });
});
