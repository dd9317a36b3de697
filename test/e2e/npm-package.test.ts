/**
 * The package as a user gets it: `npm pack` (its prepack builds), `npm install ./meshpilot-X.tgz`
 * into an empty project from the registry, then every bin run from that project with this Node.
 * Packing happens in a copy of the sources, so the repository's dist/ is left alone.
 * Skipped (outside CI only) when npm cannot reach a registry.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { parse, parseAllDocuments } from 'yaml';
import { terminate, trackChild, trackDir } from '../support/cleanup.js';
import { REPO_ROOT } from '../support/paths.js';
import { freePorts } from '../support/ports.js';

const run = promisify(execFile);
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/**
 * The environment for npm and the bins: this Node first on PATH (the bins' `#!/usr/bin/env node`),
 * and none of the npm_* variables an enclosing `npm test` sets (npm_config_local_prefix would send
 * the install into this repository) except how to reach the registry.
 */
function childEnv(): NodeJS.ProcessEnv {
  const keep = /^npm_config_(registry|cache|userconfig|globalconfig|https?_proxy|proxy|noproxy|strict_ssl|cafile|ca|@.*:registry)$/i;
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^npm_/i.test(k) || keep.test(k)) env[k] = v;
  env.PATH = [dirname(process.execPath), process.env.PATH ?? ''].join(delimiter);
  env.NO_COLOR = '1';
  delete env.INIT_CWD;
  return env;
}

/** Why the registry cannot be used, or undefined when it answers (a package meshpilot depends on). */
async function registryUnreachable(env: NodeJS.ProcessEnv): Promise<string | undefined> {
  try {
    await run(NPM, ['view', 'yaml@2', 'version', '--json', '--fetch-retries=0'], { env, timeout: 30_000 });
    return undefined;
  } catch (err) {
    const lines = String((err as { stderr?: string }).stderr || err)
      .split('\n')
      .filter((l) => l.trim() !== '' && !l.includes('complete log'));
    return `npm cannot reach a registry and CI is unset (npm view yaml: ${lines.slice(0, 2).join(' / ').trim()})`;
  }
}

/** What `npm pack` needs from the repository: sources, build config, the data the symlinks point at. */
const PACK_INPUTS = [
  'package.json',
  'package-lock.json',
  'tsconfig.json',
  'tsconfig.build.json',
  'src',
  'manifests',
  'scripts/stage-package-data.ts',
  'proto/istio/kubernetes',
  'examples',
];

const DEPLOYMENT = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx
`;

const SERVICE_ENTRY = `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata:
  name: httpbin
  namespace: default
spec:
  hosts: [httpbin.example.com]
  ports: [{number: 80, name: http, protocol: HTTP}]
  resolution: DNS
`;

let work: string | undefined;
let project = '';
let tarball = '';
let skipReason: string | undefined;
const env = childEnv();

/** A bin of the installed package, with this Node; stdout, stderr and exit code (never throws on exit code). */
async function bin(name: string, args: string[], timeout = 60_000): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(join(project, 'node_modules', '.bin', name), args, { cwd: project, env, timeout, maxBuffer: 64 << 20 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code?: unknown; stdout?: string; stderr?: string };
    if (typeof e.code !== 'number') throw err;
    return { code: e.code, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

describe('the npm package: packed, installed from the registry into an empty project, every bin run', { timeout: 300_000 }, () => {
  before(async () => {
    if (!process.env.CI) skipReason = await registryUnreachable(env);
    if (skipReason) return;
    work = mkdtempSync(join(tmpdir(), 'meshpilot-npm-'));
    trackDir(work);
    const src = join(work, 'src');
    for (const p of PACK_INPUTS) cpSync(join(REPO_ROOT, p), join(src, p), { recursive: true, verbatimSymlinks: true });
    // The build tools (tsc, tsx, esbuild) of this checkout; npm pack leaves node_modules out.
    symlinkSync(join(REPO_ROOT, 'node_modules'), join(src, 'node_modules'));
    const packed = await run(NPM, ['pack', '--json', '--pack-destination', work], { cwd: src, env, timeout: 180_000, maxBuffer: 64 << 20 });
    const [info] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('['))) as { filename: string }[];
    assert.ok(info);
    tarball = join(work, info.filename);
    project = join(work, 'project');
    mkdirSync(project);
    writeFileSync(join(project, 'package.json'), '{ "name": "uses-meshpilot", "private": true }\n');
    await run(NPM, ['install', '--no-audit', '--no-fund', '--no-save', tarball], {
      cwd: project,
      env,
      timeout: 180_000,
      maxBuffer: 64 << 20,
    });
  });

  after(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('carries dist, the charts and templates as real files, no tests', (t) => {
    if (skipReason) return t.skip(skipReason);
    const root = join(project, 'node_modules', 'meshpilot');
    const files = readdirSync(root, { recursive: true, withFileTypes: true });
    const paths = files.map((f) => join(f.parentPath, f.name).slice(root.length + 1));
    assert.deepEqual(
      files.filter((f) => f.isSymbolicLink()).map((f) => f.name),
      [],
    );
    // About 1,050 files today (compiled src, charts, templates, examples): the bound catches a stray
    // directory (node_modules, build output) shipped by mistake, not normal growth.
    assert.ok(paths.length < 1500, `${paths.length} files`);
    for (const p of [
      'dist/manifests/charts/meshpilot/files/profile-demo.yaml',
      'dist/manifests/charts/base/files/crd-all.gen.yaml',
      'dist/src/inject/templates/values.yaml',
      'dist/src/bootstrap/console/assets/index.html',
      'dist/src/bootstrap/console/assets/console.js',
      'dist/src/bootstrap/console/assets/console.css',
      'dist/cni/meshpilot-cni',
      'dist/examples/bookinfo/traffic.yaml',
    ]) {
      assert.ok(existsSync(join(root, p)), p);
    }
    assert.deepEqual(
      paths.filter((p) => /\.test\.js$|\/testdata\/|^(src|test|bench|testdata)\//.test(p)),
      [],
    );
  });

  it('every bin answers --help and --version', async (t) => {
    if (skipReason) return t.skip(skipReason);
    const { version } = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };
    for (const name of ['meshpilot', 'meshctl']) {
      const help = await bin(name, ['--help']);
      assert.equal(help.code, 0, `${name} --help: ${help.stderr}`);
      assert.match(help.stdout, /Usage:/, name);
      for (const v of [['--version'], ['version']]) {
        const r = await bin(name, v);
        assert.deepEqual([r.code, r.stdout], [0, `client version: ${version}\n`], `${name} ${v.join(' ')}: ${r.stderr}`);
      }
    }
    const cni = await bin('meshpilot-cni', ['--version']);
    assert.equal(cni.code, 0, cni.stderr);
    assert.match(cni.stdout, new RegExp(`^meshpilot-cni ${version.replaceAll('.', '\\.')}: `));
    const discoveryHelp = await bin('meshpilot', ['discovery', '--help']);
    assert.equal(discoveryHelp.code, 0, discoveryHelp.stderr);
    const demoHelp = await bin('meshpilot', ['demo', '--help']);
    assert.equal(demoHelp.code, 0, demoHelp.stderr);
  });

  it('meshctl manifest generate --set profile=demo and kube-inject work from the package', async (t) => {
    if (skipReason) return t.skip(skipReason);
    const manifest = await bin('meshctl', ['manifest', 'generate', '--set', 'profile=demo']);
    assert.equal(manifest.code, 0, manifest.stderr);
    const kinds = parseAllDocuments(manifest.stdout)
      .map((d) => (d.toJS() as { kind?: string } | null)?.kind)
      .filter((k) => k !== undefined);
    assert.ok(kinds.includes('CustomResourceDefinition') && kinds.includes('Deployment'), kinds.join(','));
    writeFileSync(join(project, 'deployment.yaml'), DEPLOYMENT);
    const injected = await bin('meshctl', ['kube-inject', '-f', 'deployment.yaml']);
    assert.equal(injected.code, 0, injected.stderr);
    // istio-proxy as a container, or as a native sidecar (an init container) where the injector picks those.
    const pod = (
      parse(injected.stdout) as { spec: { template: { spec: { containers: { name: string }[]; initContainers?: { name: string }[] } } } }
    ).spec.template.spec;
    assert.ok(
      [...pod.containers, ...(pod.initContainers ?? [])].some((c) => c.name === 'istio-proxy'),
      injected.stdout,
    );
  });

  it('meshpilot discovery --configDir serves /ready, /version and the web console', async (t) => {
    if (skipReason) return t.skip(skipReason);
    const config = join(project, 'config');
    mkdirSync(config);
    writeFileSync(join(config, 'httpbin.yaml'), SERVICE_ENTRY);
    const [grpc, http, mon] = await freePorts(3);
    const child = spawn(
      join(project, 'node_modules', '.bin', 'meshpilot'),
      [
        'discovery',
        '--configDir',
        config,
        '--grpcAddr',
        `127.0.0.1:${grpc}`,
        '--httpAddr',
        `127.0.0.1:${http}`,
        '--monitoringAddr',
        `127.0.0.1:${mon}`,
        '--secureGRPCAddr',
        '',
        '--httpsAddr',
        '',
      ],
      { cwd: project, env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    trackChild(child);
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (output += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (output += d));
    try {
      const deadline = Date.now() + 60_000;
      let status = 0;
      while (Date.now() < deadline && child.exitCode === null) {
        status = await fetch(`http://127.0.0.1:${http}/ready`).then(
          (r) => r.status,
          () => 0,
        );
        if (status === 200) break;
        await new Promise((r) => setTimeout(r, 250));
      }
      assert.equal(status, 200, `not ready: ${output}`);
      const version = await fetch(`http://127.0.0.1:${http}/version`);
      assert.equal(version.status, 200);
      // The web console's files ship in the package and are served as they are.
      for (const [p, type] of [
        ['/console', /text\/html/],
        ['/console/console.js', /javascript/],
        ['/console/console.css', /text\/css/],
      ] as const) {
        const res = await fetch(`http://127.0.0.1:${http}${p}`);
        const body = await res.text();
        assert.equal(res.status, 200, `${p}: ${body}`);
        assert.match(res.headers.get('content-type') ?? '', type, p);
      }
    } finally {
      await terminate(child);
    }
    assert.equal(child.exitCode, 0, output);
  });
});
