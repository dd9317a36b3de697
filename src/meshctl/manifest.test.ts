/**
 * `meshctl manifest generate` as a user runs it: values files relative to the working directory,
 * `-o DIR` writing one file per release and template, and bad values ending with one line on
 * stderr naming the key, nothing on stdout. (Equality with `helm template`:
 * test/e2e/install-render.test.ts.) The empty profile plus the CNI keeps these renders small.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { tempDir, type TempDir } from '../../test/support/temp-dir.js';
import { run } from './test-io.js';

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)))
    .sort();
}

describe('meshctl manifest generate', () => {
  let dir: TempDir;
  before(() => {
    dir = tempDir('manifest-generate-');
  });
  after(() => dir.remove());

  it('prints the rendered documents, and with -o writes them per release and template', async () => {
    const args = ['manifest', 'generate', '--set', 'profile=empty', '--set', 'cni.enabled=true'];
    const printed = await run(args);
    assert.equal(printed.code, 0, printed.stderr);
    assert.match(printed.stdout, /^---\n# Source: cni\/templates\/serviceaccount\.yaml\napiVersion: v1\nkind: ServiceAccount\n/);
    const kinds = [...printed.stdout.matchAll(/^kind: (\w+)$/gm)].map((m) => m[1]);
    assert.deepEqual(kinds, ['ServiceAccount', 'ConfigMap', 'ClusterRole', 'ClusterRoleBinding', 'DaemonSet']);

    const out = join(dir.path, 'out');
    const written = await run([...args, '-o', out]);
    assert.equal(written.code, 0, written.stderr);
    assert.equal(written.stdout, '');
    assert.match(written.stderr, /^wrote 5 objects in 5 files under /);
    const files = filesUnder(out);
    assert.deepEqual(
      files,
      ['configmap-cni.yaml', 'clusterrole.yaml', 'clusterrolebinding.yaml', 'daemonset.yaml', 'serviceaccount.yaml']
        .sort()
        .map((f) => join('istio-cni', 'cni', 'templates', f)),
    );
    const joined = files.map((f) => readFileSync(join(out, f), 'utf8'));
    assert.deepEqual(joined.sort(), printed.stdout.split(/(?=^---\n)/m).sort());
  });

  it('reads -f files relative to the working directory and names a missing one', async () => {
    const overlay = join(dir.path, 'cni.yaml');
    writeFileSync(overlay, 'cni:\n  enabled: true\n  cniConfFileName: 10-bridge.conflist\n');
    const ok = await run(['manifest', 'generate', '--set', 'profile=empty', '-f', relative(process.cwd(), overlay)]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /CNI_CONF_NAME: 10-bridge\.conflist/);
    const missing = await run(['manifest', 'generate', '-f', 'no-such-values.yaml']);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /^Error: invalid values: \/.*no-such-values\.yaml: cannot read values file: ENOENT/);
  });

  it('ends bad values with one line naming the key, exit 1, nothing on stdout', async () => {
    for (const [set, line] of [
      [
        'pilot.replicaCount=-1',
        'Error: invalid values: pilot.replicaCount: minimum: got -1, want 0 (chart meshpilot, values.schema.json)\n',
      ],
      [
        'pilot.replicas=2',
        'Error: invalid values: pilot.replicas: unknown key (additional properties are not allowed here) (chart meshpilot, values.schema.json)\n',
      ],
      [
        'profile=production',
        'Error: invalid values: profile: unknown profile "production" (one of default, demo, minimal, remote, empty)\n',
      ],
    ] as const) {
      const r = await run(['manifest', 'generate', '--set', set]);
      assert.deepEqual([r.code, r.stdout, r.stderr], [1, '', line]);
    }
  });
});
