/**
 * The container image without a container runtime: the Dockerfile's steps replayed in temp
 * directories. Its COPY lines are parsed (with .dockerignore applied), so the test copies what the
 * image gets and nothing else: the build stage gets the package files, the tsconfigs and src
 * (no test/), and runs the Dockerfile's build commands; the runtime stage gets the package files,
 * `npm ci --omit=dev` (production dependencies only, --prefer-offline), the build stage's dist and
 * the files read at run time. Then the image's command (ENTRYPOINT + CMD) runs there with a config
 * directory mounted where the CMD expects one, and must become ready on every interface, as the
 * published ports of a bare `docker run IMAGE` need.
 *
 * The build stage's `npm ci` (dev dependencies: tsc, tsx, esbuild) is replaced by a symlink to this
 * checkout's node_modules; the runtime stage's apt-get (iptables for istio-init) and bin wrappers
 * are not replayed. Skipped (outside CI only) when npm cannot install the production dependencies.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { delimiter, dirname, join, posix } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { terminate, trackChild, trackDir } from '../support/cleanup.js';
import { REPO_ROOT } from '../support/paths.js';
import { freePorts } from '../support/ports.js';

const run = promisify(execFile);
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';

interface Stage {
  readonly name: string | undefined;
  readonly workdir: string;
  readonly copies: readonly { from: string | undefined; sources: readonly string[]; dest: string }[];
  readonly runs: readonly string[];
}

interface Dockerfile {
  readonly stages: readonly Stage[];
  readonly entrypoint: readonly string[];
  readonly cmd: readonly string[];
}

/** The instructions this test reads from a Dockerfile (continuation lines joined, comments dropped). */
function parseDockerfile(text: string): Dockerfile {
  const logical: string[] = [];
  let pending = '';
  for (const raw of text.split('\n')) {
    if (/^\s*#/.test(raw)) continue; // also inside a continued instruction
    const line = raw.replace(/\s+$/, '');
    if (line.endsWith('\\')) {
      pending += line.slice(0, -1) + ' ';
      continue;
    }
    const full = (pending + line).trim();
    pending = '';
    if (full !== '') logical.push(full);
  }
  const stages: { name: string | undefined; workdir: string; copies: Stage['copies'][number][]; runs: string[] }[] = [];
  let entrypoint: string[] = [];
  let cmd: string[] = [];
  const json = (rest: string): string[] => {
    const v: unknown = JSON.parse(rest);
    assert.ok(Array.isArray(v) && v.every((x) => typeof x === 'string'), `exec form expected: ${rest}`);
    return v as string[];
  };
  for (const ins of logical) {
    const m = /^(\w+)\s+(.*)$/s.exec(ins);
    assert.ok(m, `cannot read instruction: ${ins}`);
    const op = m[1]!.toUpperCase();
    const rest = m[2]!;
    const stage = stages.at(-1);
    switch (op) {
      case 'FROM': {
        const as = /\s+AS\s+(\S+)$/i.exec(rest);
        stages.push({ name: as?.[1], workdir: '/', copies: [], runs: [] });
        break;
      }
      case 'WORKDIR':
        assert.ok(stage);
        stage.workdir = posix.resolve(stage.workdir, rest);
        break;
      case 'COPY': {
        assert.ok(stage);
        const words = rest.split(/\s+/);
        let from: string | undefined;
        while (words[0]?.startsWith('--')) {
          const flag = words.shift()!;
          if (flag.startsWith('--from=')) from = flag.slice('--from='.length);
        }
        const dest = words.pop();
        assert.ok(dest && words.length > 0, `COPY needs sources and a destination: ${ins}`);
        stage.copies.push({ from, sources: words, dest: posix.resolve(stage.workdir, dest) });
        break;
      }
      case 'RUN':
        assert.ok(stage);
        stage.runs.push(rest);
        break;
      case 'ENTRYPOINT':
        entrypoint = json(rest);
        break;
      case 'CMD':
        cmd = json(rest);
        break;
      default:
        break;
    }
  }
  return { stages, entrypoint, cmd };
}

/** .dockerignore as a predicate over context-relative paths (the last matching pattern decides). */
function dockerignore(text: string): (rel: string) => boolean {
  const rules = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => {
      const negate = l.startsWith('!');
      const pattern = posix.normalize((negate ? l.slice(1) : l).replace(/^\/+/, ''));
      let re = '';
      for (let i = 0; i < pattern.length; i++) {
        const c = pattern[i]!;
        if (c === '*' && pattern[i + 1] === '*') {
          re += pattern[i + 2] === '/' ? '(?:.*/)?' : '.*';
          i += pattern[i + 2] === '/' ? 2 : 1;
        } else if (c === '*') re += '[^/]*';
        else if (c === '?') re += '[^/]';
        else re += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
      }
      // A pattern that names a directory excludes what is in it.
      return { negate, re: new RegExp(`^${re}(?:/.*)?$`) };
    });
  return (rel) => {
    let ignored = false;
    for (const r of rules) if (r.re.test(rel)) ignored = !r.negate;
    return ignored;
  };
}

/** Copies a context path (file or tree) to dest as COPY does: symlinks kept, ignored paths left out. */
function copyFromContext(context: string, rel: string, dest: string, ignored: (rel: string) => boolean): void {
  const src = join(context, rel);
  cpSync(src, dest, {
    recursive: true,
    verbatimSymlinks: true,
    filter: (from) => {
      const r = posix.normalize(
        from
          .slice(context.length + 1)
          .split('\\')
          .join('/'),
      );
      return from === context || !ignored(r);
    },
  });
}

/** This Node first on PATH, none of the npm_* variables of an enclosing `npm test` but how to reach the registry. */
function childEnv(): NodeJS.ProcessEnv {
  const keep = /^npm_config_(registry|cache|userconfig|globalconfig|https?_proxy|proxy|noproxy|strict_ssl|cafile|ca|@.*:registry)$/i;
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^npm_/i.test(k) || keep.test(k)) env[k] = v;
  env.PATH = [dirname(process.execPath), process.env.PATH ?? ''].join(delimiter);
  env.NO_COLOR = '1';
  delete env.INIT_CWD;
  delete env.NODE_TEST_CONTEXT;
  delete env.KUBERNETES_SERVICE_HOST;
  delete env.KUBERNETES_SERVICE_PORT;
  return env;
}

/** The first non-internal IPv4 address of this machine, to show a listener is not loopback only. */
function externalIPv4(): string | undefined {
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return undefined;
}

const dockerfile = parseDockerfile(readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8'));
const ignored = dockerignore(existsSync(join(REPO_ROOT, '.dockerignore')) ? readFileSync(join(REPO_ROOT, '.dockerignore'), 'utf8') : '');
const env = childEnv();

describe('the container image, replayed from the Dockerfile', { timeout: 240_000 }, () => {
  let work = '';
  let runtime = '';
  let skipReason: string | undefined;

  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'meshpilot-image-'));
    trackDir(work);
    const [build, final] = [dockerfile.stages[0], dockerfile.stages.at(-1)];
    assert.ok(build && final && build !== final && build.name, 'a named build stage and a runtime stage');
    const root = (stage: Stage): string => join(work, stage === build ? 'build' : 'runtime');
    const place = (stage: Stage, imagePath: string): string => join(root(stage), posix.relative(stage.workdir, imagePath));
    const copyAll = (stage: Stage, only: (from: string | undefined) => boolean): void => {
      for (const c of stage.copies) {
        if (!only(c.from)) continue;
        for (const s of c.sources) {
          const multi = c.sources.length > 1 || c.dest.endsWith('/');
          if (c.from !== undefined) {
            const fromStage = dockerfile.stages.find((st) => st.name === c.from);
            assert.ok(fromStage, `COPY --from=${c.from}: no such stage`);
            cpSync(place(fromStage, posix.resolve(fromStage.workdir, s)), place(stage, c.dest), {
              recursive: true,
              verbatimSymlinks: true,
            });
          } else {
            const rel = posix.normalize(s.replace(/\/$/, ''));
            const dest = multi ? join(place(stage, c.dest), posix.basename(rel)) : place(stage, c.dest);
            mkdirSync(dirname(dest), { recursive: true });
            copyFromContext(REPO_ROOT, rel, dest, ignored);
          }
        }
      }
    };

    // Build stage: its COPY set, the dev dependencies, its build commands as written.
    mkdirSync(root(build), { recursive: true });
    copyAll(build, () => true);
    assert.ok(
      build.runs.some((r) => /^npm ci\b/.test(r)),
      `the build stage installs with npm ci: ${build.runs.join(' | ')}`,
    );
    symlinkSync(join(REPO_ROOT, 'node_modules'), join(root(build), 'node_modules'));
    for (const r of build.runs.filter((x) => !/^npm ci\b/.test(x))) {
      await run('sh', ['-c', r], { cwd: root(build), env, timeout: 180_000, maxBuffer: 64 << 20 });
    }

    // Runtime stage: the package files, production dependencies, then what it copies from the build and the context.
    runtime = root(final);
    mkdirSync(runtime, { recursive: true });
    const install = final.runs.find((r) => /^npm ci\b/.test(r));
    assert.ok(install && /--omit=dev/.test(install), `the runtime stage installs production dependencies only: ${final.runs.join(' | ')}`);
    const firstCopies = final.copies.filter((c) => c.sources.every((s) => /^package(-lock)?\.json$/.test(s)));
    for (const c of firstCopies) for (const s of c.sources) cpSync(join(REPO_ROOT, s), join(runtime, s));
    try {
      await run(NPM, ['ci', '--omit=dev', '--no-audit', '--no-fund', '--prefer-offline', '--fetch-retries=1'], {
        cwd: runtime,
        env: { ...env, NODE_ENV: 'production' },
        timeout: 180_000,
        maxBuffer: 64 << 20,
      });
    } catch (err) {
      const lines = String((err as { stderr?: string }).stderr || err)
        .split('\n')
        .filter((l) => /npm error/.test(l) && !l.includes('complete log'));
      if (process.env.CI) throw err;
      skipReason = `npm ci --omit=dev cannot run here and CI is unset (${lines.slice(0, 2).join(' / ').trim()})`;
      return;
    }
    copyAll({ ...final, copies: final.copies.filter((c) => !firstCopies.includes(c)) }, () => true);
  });

  after(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('the build needs nothing outside its COPY set (no test/ in the image)', (t) => {
    if (skipReason) return t.skip(skipReason);
    for (const p of [
      'dist/src/cli/meshpilot.js',
      'dist/src/meshctl/main.js',
      'dist/cni/meshpilot-cni',
      'src/inject/templates',
      'src/bootstrap/console/assets/index.html',
      'src/bootstrap/console/assets/console.js',
      'src/bootstrap/console/assets/console.css',
      'manifests/charts/meshpilot/Chart.yaml',
    ]) {
      assert.ok(existsSync(join(runtime, p)), p);
    }
    assert.equal(existsSync(join(runtime, 'test')), false);
    assert.equal(existsSync(join(runtime, 'dist', 'test')), false);
    const built = readdirSync(join(runtime, 'dist', 'src'), { recursive: true }).map(String);
    assert.deepEqual(
      built.filter((f) => /\.test\.js$/.test(f)),
      [],
    );
    // Only production dependencies: no TypeScript, no tsx.
    assert.equal(existsSync(join(runtime, 'node_modules', 'typescript')), false);
    assert.equal(existsSync(join(runtime, 'node_modules', 'tsx')), false);
    // The charts' symlinks resolve inside the image.
    for (const f of readdirSync(join(runtime, 'manifests'), { recursive: true }).map(String)) statSync(join(runtime, 'manifests', f));
  });

  it('meshctl runs from the runtime set (charts, templates)', async (t) => {
    if (skipReason) return t.skip(skipReason);
    const out = await run(process.execPath, ['dist/src/meshctl/main.js', 'manifest', 'generate', '--set', 'profile=minimal'], {
      cwd: runtime,
      env: { ...env, NODE_ENV: 'production' },
      timeout: 60_000,
      maxBuffer: 64 << 20,
    });
    assert.match(out.stdout, /kind: Deployment/);
  });

  it('`docker run IMAGE`: ENTRYPOINT + CMD serve the mounted config on every interface', async (t) => {
    if (skipReason) return t.skip(skipReason);
    assert.deepEqual(dockerfile.entrypoint, ['meshpilot']);
    const [command, ...flags] = dockerfile.cmd;
    assert.equal(command, 'discovery');
    const flag = (name: string): string | undefined => flags.find((f) => f.startsWith(`--${name}=`))?.slice(name.length + 3);
    const listen = ['grpcAddr', 'secureGRPCAddr', 'httpAddr', 'monitoringAddr', 'httpsAddr'];
    for (const name of listen) assert.match(flag(name) ?? '', /^:\d+$/, `--${name} in CMD listens on every interface (":port")`);
    const configDir = flag('configDir');
    const caDir = flag('caDir');
    assert.ok(configDir && caDir, 'CMD names the config directory to mount and a writable CA directory');

    // The CMD's paths and ports moved into this test's sandbox; the hosts (every interface) stay.
    const sandbox = join(work, 'rootfs');
    cpSync(join(REPO_ROOT, 'examples', 'bookinfo'), join(sandbox, configDir), { recursive: true });
    const host = externalIPv4() ?? '127.0.0.1';
    // A free port can be taken by a parallel test between freePorts() and the server's listen: then start again on others.
    const start = async (): Promise<{ child: ReturnType<typeof spawn>; status: number; output: () => string; httpPort: number }> => {
      const ports = await freePorts(listen.length, '0.0.0.0');
      const port = new Map(listen.map((name, i) => [name, ports[i]!]));
      const args = flags.map((f) => {
        const m = /^--(\w+)=(.*)$/.exec(f);
        if (!m) return f;
        const [, name, value] = m as unknown as [string, string, string];
        if (name === 'configDir' || name === 'caDir') return `--${name}=${join(sandbox, value)}`;
        if (port.has(name)) return `--${name}=${value.replace(/\d+$/, String(port.get(name)))}`;
        return f;
      });
      const child = spawn(process.execPath, ['dist/src/cli/meshpilot.js', command!, ...args], {
        cwd: runtime,
        env: { ...env, NODE_ENV: 'production' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      trackChild(child);
      let output = '';
      child.stdout!.setEncoding('utf8').on('data', (d: string) => (output += d));
      child.stderr!.setEncoding('utf8').on('data', (d: string) => (output += d));
      const deadline = Date.now() + 60_000;
      let status = 0;
      while (Date.now() < deadline && child.exitCode === null) {
        status = await fetch(`http://${host}:${port.get('httpAddr')}/ready`).then(
          (r) => r.status,
          () => 0,
        );
        if (status === 200) break;
        await new Promise((r) => setTimeout(r, 250));
      }
      return { child, status, output: () => output, httpPort: port.get('httpAddr')! };
    };
    let started = await start();
    for (let attempt = 1; attempt < 3 && started.status !== 200 && /EADDRINUSE/.test(started.output()); attempt++) {
      await terminate(started.child);
      started = await start();
    }
    const { child, status, output, httpPort } = started;
    try {
      assert.equal(status, 200, `not ready on ${host}: ${output()}`);
      // The web console from the image's files (loopback: remote callers need a token, as for /debug/*).
      for (const p of ['/console', '/console/console.js', '/console/console.css']) {
        const res = await fetch(`http://127.0.0.1:${httpPort}${p}`);
        assert.equal(res.status, 200, `${p}: ${await res.text()}`);
      }
      assert.match(output(), /config loaded: 12 objects/);
      assert.match(output(), /listening: xDS gRPC 0\.0\.0\.0:\d+/);
      assert.ok(
        existsSync(join(sandbox, caDir, 'root-cert.pem')) || readdirSync(join(sandbox, caDir)).length > 0,
        'the CA state is in --caDir',
      );
    } finally {
      await terminate(child);
    }
    assert.equal(child.exitCode, 0, output());
  });
});
