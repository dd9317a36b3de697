import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { kubeConfigFromText } from './remote-kube-client.js';

const kubeconfig = (user: string): string =>
  [
    'apiVersion: v1',
    'kind: Config',
    'clusters: [{name: c2, cluster: {server: "https://10.0.0.2:6443", certificate-authority-data: Zm9v}}]',
    `users: [{name: c2, user: ${user}}]`,
    'contexts: [{name: c2, context: {cluster: c2, user: c2}}]',
    'current-context: c2',
  ].join('\n');

describe('kubeConfigFromText', () => {
  it("loads a bearer-token kubeconfig with its current context's cluster", () => {
    const kc = kubeConfigFromText(kubeconfig('{token: abc}'));
    assert.equal(kc.server, 'https://10.0.0.2:6443');
    assert.deepEqual(kc.auth, { kind: 'token', token: 'abc' });
  });

  it('refuses what would run a program or send a local file, naming the field (as istiod)', () => {
    assert.throws(() => kubeConfigFromText(kubeconfig('{exec: {command: sh}}')), /users\[0\] \(c2\)\.user\.exec is not allowed/);
    assert.throws(() => kubeConfigFromText(kubeconfig('{tokenFile: /etc/passwd}')), /user\.tokenFile is not allowed/);
    assert.throws(() => kubeConfigFromText(kubeconfig('{client-key: /k}')), /user\.client-key is not allowed/);
    assert.throws(() => kubeConfigFromText(kubeconfig('{auth-provider: {name: gcp}}')), /auth-provider "gcp" is not allowed .*only oidc/);
    // istiod lets oidc through; the client has no auth providers at all (an exec plugin replaces them), so it is refused too.
    assert.throws(() => kubeConfigFromText(kubeconfig('{auth-provider: {name: oidc, config: {id-token: x}}}')), /auth-provider/);
  });

  it('refuses text that is not a kubeconfig or names no cluster', () => {
    assert.throws(() => kubeConfigFromText('- a\n- b\n'), /not a kubeconfig/);
    assert.throws(() => kubeConfigFromText('a: [\n'), /not a kubeconfig/);
    assert.throws(
      () => kubeConfigFromText(kubeconfig('{token: x}').replace('current-context: c2', 'current-context: nope')),
      /no context "nope"/,
    );
  });
});
