import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { tempDir } from '../../test/support/temp-dir.js';
import { fromKubeconfigFiles, fromKubeconfigText, inClusterKubeConfig, kubeconfigContexts, loadKubeConfig } from './kubeconfig.js';

const b64 = (s: string): string => Buffer.from(s).toString('base64');

const TWO_CONTEXTS = `apiVersion: v1
kind: Config
clusters:
- name: east
  cluster:
    server: https://east.example:6443/
    certificate-authority-data: ${b64('EAST CA')}
- name: west
  cluster:
    server: http://127.0.0.1:8080
users:
- name: admin
  user:
    client-certificate-data: ${b64('CERT')}
    client-key-data: ${b64('KEY')}
- name: robot
  user:
    token: abc
contexts:
- name: east-admin
  context: {cluster: east, user: admin, namespace: shop}
- name: west-robot
  context: {cluster: west, user: robot}
current-context: east-admin
`;

describe('kubeconfig', () => {
  it('resolves the current context: server without trailing slash, CA, client certificate, namespace', () => {
    const kc = fromKubeconfigText(TWO_CONTEXTS);
    assert.equal(kc.server, 'https://east.example:6443');
    assert.equal(kc.tls.ca?.toString(), 'EAST CA');
    assert.equal(kc.tls.cert?.toString(), 'CERT');
    assert.equal(kc.tls.key?.toString(), 'KEY');
    assert.deepEqual(kc.auth, { kind: 'none' });
    assert.equal(kc.namespace, 'shop');
    assert.equal(kc.contextName, 'east-admin');
  });

  it('uses a named context instead of current-context, and lists them', () => {
    const kc = fromKubeconfigText(TWO_CONTEXTS, { context: 'west-robot' });
    assert.equal(kc.server, 'http://127.0.0.1:8080');
    assert.deepEqual(kc.auth, { kind: 'token', token: 'abc' });
    assert.equal(kc.namespace, undefined);
    assert.deepEqual(kubeconfigContexts(TWO_CONTEXTS), { contexts: ['east-admin', 'west-robot'], current: 'east-admin' });
  });

  it('names the origin, line and field of what is wrong', () => {
    const origin = 'Secret istio-system/remote key east';
    assert.throws(
      () => fromKubeconfigText(TWO_CONTEXTS.replace('{cluster: east,', '{cluster: north,'), { origin }),
      /Secret istio-system\/remote key east:\d+ contexts\[0\]\.context\.cluster: names cluster "north", which is not defined/,
    );
    assert.throws(() => fromKubeconfigText(TWO_CONTEXTS, { context: 'nope' }), /no context "nope"/);
    assert.throws(
      () => fromKubeconfigText(TWO_CONTEXTS.replace('server: https://east.example:6443/', 'server: ftp://x')),
      /kubeconfig <text>:6 clusters\[0\]\.cluster\.server: "ftp:\/\/x" is neither https nor http/,
    );
    assert.throws(
      () => fromKubeconfigText(TWO_CONTEXTS.replace('token: abc', 'token: [1]'), { context: 'west-robot' }),
      /users\[1\]\.user\.token: must be a string/,
    );
    assert.throws(() => fromKubeconfigText('clusters: {a: 1}'), /kubeconfig <text>:1 clusters: must be a list/);
    assert.throws(() => fromKubeconfigText('a: [\n'), /kubeconfig <text>:\d+: not YAML/);
    assert.throws(
      () => fromKubeconfigText(TWO_CONTEXTS.replace('    token: abc', '    auth-provider: {name: gcp}'), { context: 'west-robot' }),
      /users\[1\]\.user\.auth-provider: auth providers are not supported/,
    );
    assert.throws(
      () => fromKubeconfigText(TWO_CONTEXTS.replace(`    client-key-data: ${b64('KEY')}\n`, '')),
      /needs both the certificate and its key/,
    );
  });

  it('reads files a kubeconfig names relative to that kubeconfig, and merges KUBECONFIG as kubectl (first definition wins)', (t) => {
    const dir = tempDir('kubeconfig');
    t.after(() => dir.remove());
    mkdirSync(join(dir.path, 'pki'));
    writeFileSync(join(dir.path, 'pki', 'ca.crt'), 'FILE CA');
    writeFileSync(join(dir.path, 'pki', 'token'), 'file-token\n');
    const a = join(dir.path, 'a.yaml');
    const b = join(dir.path, 'b.yaml');
    writeFileSync(
      a,
      `clusters: [{name: c, cluster: {server: "https://a:1", certificate-authority: pki/ca.crt}}]
users: [{name: u, user: {tokenFile: pki/token}}]
contexts: [{name: ctx, context: {cluster: c, user: u}}]
`,
    );
    writeFileSync(
      b,
      `clusters: [{name: c, cluster: {server: "https://b:2"}}, {name: d, cluster: {server: "https://d:4"}}]
contexts: [{name: other, context: {cluster: d}}]
current-context: ctx
`,
    );
    const kc = loadKubeConfig({ env: { KUBECONFIG: `${a}:${b}` } });
    assert.equal(kc.server, 'https://a:1', 'the first file defines cluster c');
    assert.equal(kc.tls.ca?.toString(), 'FILE CA');
    assert.deepEqual(kc.auth, { kind: 'tokenFile', file: join(dir.path, 'pki', 'token') });
    assert.equal(fromKubeconfigFiles([a, b], 'other').server, 'https://d:4', 'contexts of the second file are there too');
    assert.equal(loadKubeConfig({ kubeconfig: b, context: 'other' }).server, 'https://d:4');
    assert.throws(() => loadKubeConfig({ kubeconfig: join(dir.path, 'missing') }), /kubeconfig .*missing: cannot read/);
    writeFileSync(
      a,
      'clusters: [{name: c, cluster: {server: "https://a:1", certificate-authority: pki/none.crt}}]\ncontexts: [{name: ctx, context: {cluster: c}}]\n',
    );
    assert.throws(() => fromKubeconfigFiles([a, b]), /a\.yaml:1 clusters\[0\]\.cluster\.certificate-authority: cannot read .*none\.crt/);
  });

  it('in a Pod: the service account token file, its CA and namespace; IPv6 hosts in brackets', (t) => {
    const dir = tempDir('sa');
    t.after(() => dir.remove());
    writeFileSync(join(dir.path, 'token'), 't');
    writeFileSync(join(dir.path, 'ca.crt'), 'SA CA');
    writeFileSync(join(dir.path, 'namespace'), 'istio-system\n');
    const kc = inClusterKubeConfig({ KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' }, dir.path);
    assert.equal(kc.server, 'https://[fd00::1]:443');
    assert.deepEqual(kc.auth, { kind: 'tokenFile', file: join(dir.path, 'token') });
    assert.equal(kc.tls.ca?.toString(), 'SA CA');
    assert.equal(kc.namespace, 'istio-system');
    assert.throws(() => inClusterKubeConfig({ KUBERNETES_SERVICE_HOST: 'h' }, dir.path), /KUBERNETES_SERVICE_PORT must be set/);
    assert.throws(
      () => inClusterKubeConfig({ KUBERNETES_SERVICE_HOST: 'h', KUBERNETES_SERVICE_PORT: '1' }, join(dir.path, 'x')),
      /no service account token/,
    );
  });

  it('an exec plugin: command relative to the kubeconfig, args, env', () => {
    const text = TWO_CONTEXTS.replace(
      '    token: abc',
      '    exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: ./bin/get-token, args: [--x], env: [{name: A, value: b}]}',
    );
    const kc = fromKubeconfigText(text, { context: 'west-robot', baseDir: '/etc/kube' });
    assert.equal(kc.auth.kind, 'exec');
    if (kc.auth.kind !== 'exec') return;
    assert.equal(kc.auth.exec.command, '/etc/kube/bin/get-token');
    assert.deepEqual(kc.auth.exec.args, ['--x']);
    assert.deepEqual(kc.auth.exec.env, { A: 'b' });
    assert.equal(kc.auth.exec.apiVersion, 'client.authentication.k8s.io/v1beta1');
  });
});
