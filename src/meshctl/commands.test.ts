import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
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
      `Error: ${S}/invalid-weight.yaml:11 VirtualService default/bad-weight spec.http[0].route[0].weight: weight -5 < 0`,
      `Error: ${S}/unknown-field.yaml:7 DestinationRule default/typo spec.trafficPolicyy: unknown field "trafficPolicyy"`,
      'Error: 2 validation errors in 2 objects',
    ].join('\n') + '\n',
  );
});

test('validate and analyze: an object defined again is an error at the later definition, naming the first', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'meshctl-dup-'));
  try {
    const dr = (host: string) =>
      `apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata:\n  name: reviews\n  namespace: default\nspec:\n  host: ${host}\n`;
    writeFileSync(path.join(dir, 'a.yaml'), dr('reviews'));
    writeFileSync(path.join(dir, 'b.yaml'), `# again\n---\n${dr('reviews.default.svc.cluster.local')}`);
    const a = path.join(dir, 'a.yaml');
    const b = path.join(dir, 'b.yaml');
    const v = await run(['validate', '-f', dir]);
    assert.equal(v.code, 1);
    assert.equal(
      v.stderr,
      `Error: ${b}:6 DestinationRule default/reviews metadata.name: already defined at ${a}:1; this later definition is ignored\nError: 1 validation error in 1 object\n`,
    );
    const an = await run(['analyze', '--use-kube=false', a, b]);
    assert.ok(
      an.stdout.startsWith(
        `Error [IST0106] (DestinationRule default/reviews ${b}:6) Schema validation error: metadata.name: already defined at ${a}:1; this later definition is ignored\n`,
      ),
      an.stdout,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("validate: istiod's warnings are printed with file:line and do not fail the run", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'meshctl-warn-'));
  try {
    const file = path.join(dir, 'dr.yaml');
    writeFileSync(
      file,
      [
        'apiVersion: networking.istio.io/v1',
        'kind: DestinationRule',
        'metadata:',
        '  name: reviews',
        '  namespace: default',
        'spec:',
        '  host: reviews',
        '  trafficPolicy:',
        '    loadBalancer:',
        '      localityLbSetting:',
        '        failover: [{from: us-east, to: us-west}]',
        '',
      ].join('\n'),
    );
    const r = await run(['validate', '-f', file]);
    assert.deepEqual(r, {
      code: 0,
      stdout: 'validation succeed (1 object, 1 warning)\n',
      stderr: `Warning: ${file}:10 DestinationRule default/reviews spec.trafficPolicy.loadBalancer.localityLbSetting: outlier detection policy must be provided for failover\n`,
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
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
  for (const s of ['analyze', 'validate', 'version', '--namespace', '--istioNamespace', '--kubeconfig', '--context'])
    assert.ok(r.stdout.includes(s), s);
  const bare = await run([]);
  assert.equal(bare.code, 0);
  assert.match(bare.stdout, /^Usage: meshctl /);
  const a = await run(['analyze', '--help']);
  for (const s of [
    '--recursive',
    '--all-namespaces',
    '--output',
    '--failure-threshold',
    '--output-threshold',
    '--suppress',
    '--list-analyzers',
    'Exit codes',
  ])
    assert.ok(a.stdout.includes(s), s);
});

test('--version is `version`: the client version line, -s and -o as there', async () => {
  assert.deepEqual(await run(['--version']), { code: 0, stdout: `client version: ${version}\n`, stderr: '' });
  assert.equal((await run(['--version', '-s'])).stdout, `${version}\n`);
  assert.match((await run(['--help'])).stdout, /--version +print the client version/);
});

test('an unknown command: one line naming it and the commands, exit 64; an unknown flag names itself', async () => {
  const r = await run(['bogus']);
  assert.equal(r.code, 64);
  assert.equal(r.stdout, '');
  const [first, second] = r.stderr.split('\n');
  assert.match(
    first ?? '',
    /^Error: unknown command "bogus" for "meshctl" \(commands: analyze, validate, kube-inject, .*version.*manifest, create-remote-secret, ztunnel-config, waypoint\)$/,
  );
  assert.equal(second, "Run 'meshctl --help' for usage.");
  for (const argv of [['--bogus'], ['version', '--bogus'], ['manifest', 'generate', '--bogus']]) {
    const bad = await run(argv);
    assert.equal(bad.code, 64, argv.join(' '));
    assert.match(bad.stderr, /unknown option '--bogus'/, argv.join(' '));
  }
});

test('every command and subcommand answers --help on stdout with exit 0', async () => {
  const { createProgram, runCli } = await import('./cli.js');
  const sink = { write: () => true };
  const program = await createProgram({ stdout: sink, stderr: sink, env: {}, cwd: REPO_ROOT });
  const paths: string[][] = [];
  const walk = (cmd: typeof program, at: string[]): void => {
    for (const c of cmd.commands) {
      paths.push([...at, c.name()]);
      walk(c, [...at, c.name()]);
    }
  };
  walk(program, []);
  assert.ok(paths.length > 10, JSON.stringify(paths));
  for (const p of paths) {
    // The whole program, proxy-status/proxy-config included (run() leaves them out).
    let stdout = '';
    let stderr = '';
    const code = await runCli([...p, '--help'], {
      stdout: { write: (s: string) => (stdout += s) },
      stderr: { write: (s: string) => (stderr += s) },
      env: {},
      cwd: REPO_ROOT,
    });
    const r = { code, stdout, stderr };
    assert.equal(r.code, 0, p.join(' '));
    assert.match(r.stdout, new RegExp(`^Usage: meshctl ${p.join(' ')}`), p.join(' '));
  }
});
