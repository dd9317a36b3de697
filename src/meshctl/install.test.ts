/**
 * meshctl install/upgrade/uninstall/verify-install: what is decided before the cluster is touched —
 * bad values, confirmation, flags. The kubeconfig named points at a port nothing listens on, so a
 * command that reached the cluster would fail differently than these assertions expect.
 * Applying on a real API server is tested in src/install/apply.test.ts and test/e2e/install.test.ts.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { tempDir, type TempDir } from '../../test/support/temp-dir.js';
import type { InstallObject } from '../install/objects.js';
import { runCli, type CliIO } from './cli.js';
import type { InstallRenderer, RenderRequest } from './install.js';
import { REPO_ROOT } from './test-io.js';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

let dir: TempDir;
let kubeconfig: string;

function write(name: string, text: string): string {
  const file = path.join(dir.path, name);
  writeFileSync(file, text);
  return file;
}

async function meshctl(
  argv: readonly string[],
  opts: { renderer?: InstallRenderer; answer?: boolean } = {},
): Promise<Run & { asked: string[] }> {
  let stdout = '';
  let stderr = '';
  const asked: string[] = [];
  const io: CliIO = {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    env: {},
    cwd: REPO_ROOT,
    ...(opts.answer !== undefined ? { confirm: (q: string) => (asked.push(q), Promise.resolve(opts.answer === true)) } : {}),
  };
  const code = await runCli(['--kubeconfig', kubeconfig, ...argv], io, {
    proxyCommands: false,
    ...(opts.renderer ? { installRenderer: opts.renderer } : {}),
  });
  return { code, stdout, stderr, asked };
}

const configMap: InstallObject = {
  chart: 'meshpilot',
  template: 'meshpilot/templates/configmap.yaml',
  object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'istio' } },
};
const gateway: InstallObject = {
  chart: 'gateway',
  release: 'istio-egressgateway',
  template: 'gateway/templates/service.yaml',
  object: { apiVersion: 'v1', kind: 'Service', metadata: { name: 'istio-egressgateway' } },
};

describe('meshctl install commands before the cluster', () => {
  before(() => {
    dir = tempDir();
    kubeconfig = write(
      'kubeconfig',
      'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:9"}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n',
    );
  });
  after(() => dir.remove());

  it('bad values: the error names the key, and nothing is applied (the charts render before the cluster is contacted)', async () => {
    // pilot.replicaCount=-1 is in test/e2e/install.test.ts, which also shows the cluster untouched.
    for (const [argv, key] of [
      [['--set', 'pilot.noSuchKey=1'], 'pilot.noSuchKey'],
      [['--set', 'profile=nope'], 'profile'],
    ] as const) {
      const r = await meshctl(['install', '-y', ...argv]);
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, new RegExp(`^Error: invalid values: ${key.replace('.', '\\.')}: .*\nNothing was applied\\.\n$`), r.stderr);
      assert.equal(r.stdout, '');
    }
  });

  it('values and flags reach the renderer as given; an unreadable -f file is named', async () => {
    const requests: RenderRequest[] = [];
    const renderer: InstallRenderer = (req) => (requests.push(req), Promise.resolve({ objects: [configMap] }));
    const overlay = write('overlay.yaml', 'pilot: {}\n');
    // Declined at the prompt: rendered, asked, nothing else.
    const r = await meshctl(['upgrade', '--set', 'profile=demo', '-f', overlay, '-r', 'canary', '-i', 'mesh-system'], {
      renderer,
      answer: false,
    });
    assert.deepEqual(requests, [{ sets: ['profile=demo'], valuesFiles: [overlay], revision: 'canary', namespace: 'mesh-system' }]);
    // upgrade first looks for the install to upgrade: the unreachable server is the error.
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^Error: .*127\.0\.0\.1:9/);
    const missing = await meshctl(['install', '-y', '-f', 'no-such-overlay.yaml'], { renderer });
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /^Error: cannot read values file no-such-overlay\.yaml: ENOENT/);
  });

  it('without -y: asks on a terminal (declined: nothing done), refuses without one', async () => {
    const renderer: InstallRenderer = () => Promise.resolve({ objects: [configMap, gateway] });
    const declined = await meshctl(['install', '--set', 'profile=demo'], { renderer, answer: false });
    assert.equal(declined.code, 1);
    assert.equal(declined.asked.length, 1);
    assert.match(
      declined.asked[0] ?? '',
      /^This will install the Istio .* "demo" profile \(with components: Istiod, and Egress gateways\) into the cluster\. Proceed\? \(y\/N\) $/,
    );
    assert.equal(declined.stderr, 'Cancelled.\n');
    const refused = await meshctl(['install'], { renderer });
    assert.equal(refused.code, 64);
    assert.equal(
      refused.stderr,
      'Error: install asks for confirmation, but stdin is not a terminal: pass -y (--skip-confirmation) to proceed\n',
    );
  });

  it('flag errors: uninstall needs --revision or --purge (not both), --readiness-timeout and --wait take their syntax', async () => {
    assert.deepEqual(await meshctl(['uninstall', '-y']).then((r) => [r.code, r.stderr]), [
      64,
      'Error: at least one of the --revision or --purge flags must be set (--revision default for an install without one)\n',
    ]);
    assert.deepEqual(await meshctl(['uninstall', '--purge', '-r', 'x', '-y']).then((r) => [r.code, r.stderr]), [
      64,
      'Error: --purge and --revision cannot be used together: --purge removes every revision\n',
    ]);
    const renderer: InstallRenderer = () => Promise.resolve({ objects: [configMap] });
    assert.deepEqual(await meshctl(['install', '-y', '--readiness-timeout', '5 minutes'], { renderer }).then((r) => [r.code, r.stderr]), [
      64,
      'Error: invalid --readiness-timeout "5 minutes": use a Go duration such as 5m0s or 90s\n',
    ]);
    const wait = await meshctl(['install', '-y', '--wait=maybe'], { renderer });
    assert.equal(wait.code, 64);
    assert.match(wait.stderr, /invalid --wait "maybe": use true or false/);
  });
});
