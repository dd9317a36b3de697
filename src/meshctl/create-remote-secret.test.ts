import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { run } from './test-io.js';

// The cluster-side behaviour (account, token Secret, output) runs against real API servers in test/e2e/multicluster.test.ts.
describe('meshctl create-remote-secret: bad input is refused before any cluster call', () => {
  for (const [args, message] of [
    [['--name', 'Not_A_Label'], /Not_A_Label is not a valid DNS 1123 label/],
    [['--name', 'c2', '--type', 'primary'], /unsupported type: primary \(remote or config\)/],
    [['--name', 'c2', '--auth-type', 'cert'], /unsupported authentication type: cert/],
    [['--name', 'c2', '--create-service-account', 'maybe'], /--create-service-account: "maybe" is not true or false/],
  ] as const) {
    it(`${args.join(' ')} → exit 64, ${String(message)}`, async () => {
      const res = await run(['create-remote-secret', '--kubeconfig', '/nonexistent/kubeconfig', ...args]);
      assert.equal(res.code, 64, res.stderr);
      assert.match(res.stderr, message);
      assert.equal(res.stdout, '');
    });
  }

  it('an unloadable kubeconfig is one error line, exit 1', async () => {
    const res = await run(['create-remote-secret', '--kubeconfig', '/nonexistent/kubeconfig', '--name', 'c2']);
    assert.equal(res.code, 1);
    assert.match(res.stderr, /^error: cannot load the kubeconfig \(\/nonexistent\/kubeconfig\)/);
  });
});
