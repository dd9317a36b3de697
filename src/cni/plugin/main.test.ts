import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { REPO_ROOT } from '../../meshctl/test-io.js';
import { packageVersion } from '../../util/version.js';

/** The plugin bin as a person or a runtime runs it: no CNI_COMMAND unless given. */
function plugin(args: string[], env: Record<string, string> = {}, input = ''): { code: number | null; stdout: string; stderr: string } {
  const { CNI_COMMAND: _drop, ...base } = process.env;
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/cni/plugin/main.ts', ...args], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    input,
    env: { ...base, ...env },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

test("meshpilot-cni without CNI_COMMAND says what it is and its CNI versions (the CNI skel's about), exit 0", () => {
  const about = `meshpilot-cni ${packageVersion()}: meshpilot's CNI plugin (istio-cni's role), run by the container runtime with CNI_COMMAND set\nCNI protocol versions supported: 0.3.0, 0.3.1, 0.4.0, 1.0.0\n`;
  for (const flag of ['--help', '--version']) assert.deepEqual(plugin([flag]), { code: 0, stdout: about, stderr: '' }, flag);
  // Run bare, as the skel: on stderr.
  assert.deepEqual(plugin([]), { code: 0, stdout: '', stderr: about });
  // A runtime's VERSION is still the CNI answer.
  const v = plugin(['--help'], { CNI_COMMAND: 'VERSION' });
  assert.equal(v.code, 0);
  assert.deepEqual(JSON.parse(v.stdout), { cniVersion: '1.0.0', supportedVersions: ['0.3.0', '0.3.1', '0.4.0', '1.0.0'] });
});
