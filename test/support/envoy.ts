/**
 * The real upstream Envoy for data-plane tests: the binary scripts/install-envoy unpacks (the
 * version pinned in scripts/envoy.version), started with a bootstrap, read through its admin API.
 *
 * A test file skips — with the reason printed — only when the binary is absent and CI is unset;
 * CI installs it, so there a missing binary fails the tests.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, linkSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { trackChild, trackDir } from './cleanup.js';
import { REPO_ROOT } from './paths.js';
import { freePort } from './ports.js';
import { tempDir, type TempDir } from './temp-dir.js';
import { waitFor } from './wait.js';

/** The pinned Envoy release (scripts/envoy.version). */
export const ENVOY_VERSION = readFileSync(join(REPO_ROOT, 'scripts', 'envoy.version'), 'utf8').trim();

/** Where the binary is: MESHPILOT_ENVOY, else install-envoy's cache folder. */
export const ENVOY_BINARY = process.env.MESHPILOT_ENVOY ?? join(homedir(), '.cache', 'meshpilot-envoy', ENVOY_VERSION, 'envoy');

/**
 * Why the Envoy tests cannot run here, or undefined when they can. Under CI a missing binary is
 * not a reason to skip: it throws, so the test fails.
 */
export function envoySkipReason(): string | undefined {
  if (existsSync(ENVOY_BINARY)) return undefined;
  const why = `no Envoy binary at ${ENVOY_BINARY} (run scripts/install-envoy, or set MESHPILOT_ENVOY)`;
  if (process.env.CI) throw new Error(`${why}: CI must install it`);
  return why;
}

export interface RunningEnvoy {
  readonly process: ChildProcess;
  /** The admin port on 127.0.0.1, or 0 when the admin API is on `adminSocket`. */
  readonly adminPort: number;
  readonly adminSocket?: string;
  readonly dir: TempDir;
  /** Everything Envoy logged so far. */
  log(): string;
  /** `GET /<path>` on the admin API, as text. */
  admin(path: string): Promise<string>;
  /** Counter and gauge values from `/stats?format=json` whose name matches. */
  stats(filter?: RegExp): Promise<Map<string, number>>;
  /** Sum of every `*.update_rejected` counter (LDS, CDS, RDS, EDS, SDS). */
  rejectedUpdates(): Promise<number>;
  stop(): Promise<void>;
}

export interface EnvoyOptions {
  /** The bootstrap (proto3 JSON); its admin address is set here. */
  readonly bootstrap: Record<string, unknown>;
  /** Envoy's --log-level (default warning). */
  readonly logLevel?: string;
  /** Extra command-line arguments. */
  readonly args?: readonly string[];
  /** Run inside this network namespace (`ip netns exec`); the admin API is then on a unix socket. */
  readonly netns?: string;
  /** Run as this uid/gid (setpriv), as the istio-proxy container runs as 1337. */
  readonly uid?: number;
  /** Admin API on a unix socket in Envoy's directory (implied by `netns`): reachable across namespaces. */
  readonly adminOnSocket?: boolean;
}

let sharedBinary: string | undefined;

/**
 * The binary where another uid can execute it: the install cache sits under the invoking user's
 * home (mode 0700 for root), so a hard link (same file system) or copy goes to a shared temp dir.
 */
function binaryFor(uid: number | undefined): string {
  if (uid === undefined || uid === process.getuid?.()) return ENVOY_BINARY;
  if (sharedBinary) return sharedBinary;
  const dir = mkdtempSync(join(tmpdir(), 'meshpilot-envoy-bin-'));
  trackDir(dir);
  chmodSync(dir, 0o755);
  const target = join(dir, 'envoy');
  try {
    linkSync(ENVOY_BINARY, target);
  } catch {
    writeFileSync(target, readFileSync(ENVOY_BINARY), { mode: 0o755 });
  }
  sharedBinary = target;
  return target;
}

const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p));

/**
 * setpriv (util-linux) in front of Envoy: as `uid` when given, and with a parent-death signal,
 * so Envoy dies with this process even when it is SIGKILLed and no exit handler runs (`ip netns
 * exec` and setpriv exec in place: this process stays Envoy's parent).
 */
function guarded(uid: number | undefined): string[] {
  if (!SETPRIV) {
    if (uid !== undefined) throw new Error('setpriv (util-linux) is needed to run Envoy as another uid');
    return [];
  }
  return [SETPRIV, '--pdeathsig', 'KILL', ...(uid === undefined ? [] : [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups'])];
}

/** GET over a unix socket (fetch cannot dial one). */
function getOverSocket(socketPath: string, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path, method: 'GET', timeout: 10_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      res.on('end', () => resolve(body));
    });
    req.on('timeout', () => req.destroy(new Error(`admin ${path} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

let nextBaseId = 1000 + (process.pid % 1000) * 10;

/** Starts Envoy and waits until its admin API answers. */
export async function startEnvoy(o: EnvoyOptions): Promise<RunningEnvoy> {
  const dir = tempDir('meshpilot-envoy-');
  if (o.uid !== undefined) {
    chmodSync(dir.path, 0o755);
    chownSync(dir.path, o.uid, o.uid);
  }
  const onSocket = o.adminOnSocket ?? o.netns !== undefined;
  const adminPort = onSocket ? 0 : await freePort();
  const adminSocket = onSocket ? join(dir.path, 'admin.sock') : undefined;
  const address = adminSocket
    ? { pipe: { path: adminSocket, mode: 0o600 } }
    : { socket_address: { address: '127.0.0.1', port_value: adminPort } };
  const bootstrap = { ...o.bootstrap, admin: { address } };
  const file = join(dir.path, 'envoy.json');
  writeFileSync(file, JSON.stringify(bootstrap, null, 2), { mode: 0o644 });
  const envoyArgs = [
    '-c',
    file,
    '--base-id',
    String(nextBaseId++),
    '--log-level',
    o.logLevel ?? 'warning',
    '--concurrency',
    '1',
    ...(o.args ?? []),
  ];
  const inNetns = o.netns === undefined ? [] : ['ip', 'netns', 'exec', o.netns];
  const argv = [...inNetns, ...guarded(o.uid), binaryFor(o.uid), ...envoyArgs];
  const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
  trackChild(child);
  let output = '';
  child.stdout.on('data', (b: Buffer) => (output += b.toString()));
  child.stderr.on('data', (b: Buffer) => (output += b.toString()));
  const admin = async (path: string): Promise<string> => {
    const rel = `/${path.replace(/^\//, '')}`;
    if (adminSocket) return getOverSocket(adminSocket, rel);
    const res = await fetch(`http://127.0.0.1:${adminPort}${rel}`);
    return res.text();
  };
  const stats = async (filter?: RegExp): Promise<Map<string, number>> => {
    const body = JSON.parse(await admin('stats?format=json')) as { stats: { name?: string; value?: number }[] };
    const out = new Map<string, number>();
    for (const s of body.stats)
      if (s.name !== undefined && typeof s.value === 'number' && (!filter || filter.test(s.name))) out.set(s.name, s.value);
    return out;
  };
  const envoy: RunningEnvoy = {
    process: child,
    adminPort,
    ...(adminSocket ? { adminSocket } : {}),
    dir,
    log: () => output,
    admin,
    stats,
    async rejectedUpdates() {
      let sum = 0;
      for (const v of (await stats(/update_rejected$/)).values()) sum += v;
      return sum;
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }
      await dir.remove();
    },
  };
  try {
    await waitFor(
      async () => {
        if (child.exitCode !== null) throw new Error(`envoy exited with ${child.exitCode}:\n${output}`);
        return (await admin('ready')).trim().length > 0;
      },
      { timeoutMs: 20_000, description: `Envoy admin on ${adminSocket ?? `127.0.0.1:${adminPort}`}` },
    );
  } catch (err) {
    await envoy.stop();
    throw err;
  }
  return envoy;
}
