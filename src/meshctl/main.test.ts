import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { REPO_ROOT } from './test-io.js';

/** The real bin, as a user runs it: exit codes come from the process. */
function meshctl(...args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/meshctl/main.ts', ...args], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1' },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const C = 'testdata/meshctl/analyze/cli';

test('bin exit codes: 0 clean, 79 issues, 65 unparsable, 64 usage', () => {
  const clean = meshctl('analyze', `${C}/clean`);
  assert.equal(clean.code, 0, clean.stderr);
  assert.equal(clean.stderr, '\u2714 No validation issues found when analyzing namespace: default.\n');
  const issues = meshctl('analyze', `${C}/issues`);
  assert.equal(issues.code, 79);
  assert.match(
    issues.stdout,
    /^Error \[IST0101\] \(VirtualService default\/reviews testdata\/meshctl\/analyze\/cli\/issues\/reviews\.yaml:9\) Referenced host not found: "reviews\.bogus"\n/,
  );
  const broken = meshctl('analyze', `${C}/broken`);
  assert.equal(broken.code, 65);
  assert.match(broken.stderr, /broken\/bad\.yaml/);
  assert.equal(meshctl('analyze', '--nope').code, 64);
});

test('bin reads stdin for -', () => {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/meshctl/main.ts', 'validate', '-f', '-'], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    input: 'apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata: {name: g}\nspec: {servers: []}\n',
  });
  assert.equal(r.status, 1);
  assert.match(r.stderr, /Gateway default\/g spec\.servers: gateway must have at least one server/);
});
