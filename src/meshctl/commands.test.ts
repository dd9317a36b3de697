import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { REPO_ROOT, run } from './test-io.js';

const S = 'testdata/meshctl/analyze/schema-validation';
const version = (JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;

test('validate: a valid file succeeds', async () => {
  const r = await run(['validate', '-f', `${S}/valid.yaml`]);
  assert.deepEqual(r, { code: 0, stdout: 'validation succeed (1 object)\n', stderr: '' });
});

test('validate: invalid objects print each error with file:line and exit 1', async () => {
  const r = await run(['validate', '-f', `${S}/invalid-weight.yaml`, '-f', `${S}/unknown-field.yaml`]);
  assert.equal(r.code, 1);
  assert.equal(
    r.stderr,
    [
      `Error: ${S}/invalid-weight.yaml:1 VirtualService default/bad-weight spec.http[0].route[0].weight: weight -5 < 0`,
      `Error: ${S}/unknown-field.yaml:1 DestinationRule default/typo spec.trafficPolicyy: unknown field "trafficPolicyy"`,
      'Error: 2 validation errors in 2 objects',
    ].join('\n') + '\n',
  );
});

test('validate: unparsable 65, no files 64', async () => {
  assert.equal((await run(['validate', '-f', 'testdata/meshctl/analyze/cli/broken/bad.yaml'])).code, 65);
  const none = await run(['validate']);
  assert.equal(none.code, 64);
  assert.match(none.stderr, /^Error: no files given: use -f FILE/);
});

test('version: client version from package.json; --short the number only', async () => {
  assert.deepEqual(await run(['version']), { code: 0, stdout: `client version: ${version}\n`, stderr: '' });
  assert.equal((await run(['version', '--short'])).stdout, `${version}\n`);
  assert.deepEqual(JSON.parse((await run(['version', '-o', 'json'])).stdout), { clientVersion: { version } });
});

test('version --remote: an unreachable control plane is said so on stderr, not fatal', async () => {
  const r = await run(['version', '--remote', '--monitoring-address', '127.0.0.1:1']);
  assert.equal(r.code, 0);
  assert.equal(r.stdout, `client version: ${version}\n`);
  assert.match(r.stderr, /^control plane version: unavailable/);
});

test('--help lists the commands and shared flags; each subcommand has help', async () => {
  const r = await run(['--help']);
  assert.equal(r.code, 0);
  for (const s of ['analyze', 'validate', 'version', '--namespace', '--istioNamespace', '--kubeconfig', '--context']) assert.ok(r.stdout.includes(s), s);
  const bare = await run([]);
  assert.equal(bare.code, 0);
  assert.match(bare.stdout, /^Usage: meshctl /);
  const a = await run(['analyze', '--help']);
  for (const s of ['--recursive', '--all-namespaces', '--output', '--failure-threshold', '--output-threshold', '--suppress', '--list-analyzers', 'Exit codes']) assert.ok(a.stdout.includes(s), s);
});
