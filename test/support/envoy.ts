/**
 * The real upstream Envoy for data-plane tests: the binary scripts/install-envoy unpacks (the
 * version pinned in scripts/envoy.version), started with a bootstrap, read through its admin API.
 *
 * A test file skips — with the reason printed — only when the binary is absent and CI is unset;
 * CI installs it, so there a missing binary fails the tests.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { trackChild } from './cleanup.js';
import { REPO_ROOT } from './paths.js';
import type { EnvoyBuild } from './scenario.js';
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
  readonly adminPort: number;
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
}

let nextBaseId = 1000 + (process.pid % 1000) * 10;

/** Starts Envoy and waits until its admin API answers. */
export async function startEnvoy(o: EnvoyOptions): Promise<RunningEnvoy> {
  const dir = tempDir('meshpilot-envoy-');
  const adminPort = await freePort();
  const bootstrap = { ...o.bootstrap, admin: { address: { socket_address: { address: '127.0.0.1', port_value: adminPort } } } };
  const file = join(dir.path, 'envoy.json');
  writeFileSync(file, JSON.stringify(bootstrap, null, 2));
  const envoyArgs = ['-c', file, '--base-id', String(nextBaseId++), '--log-level', o.logLevel ?? 'warning', '--concurrency', '1', ...(o.args ?? [])];
  const child = spawn(ENVOY_BINARY, envoyArgs, { stdio: ['ignore', 'pipe', 'pipe'] });
  trackChild(child);
  let output = '';
  child.stdout.on('data', (b: Buffer) => (output += b.toString()));
  child.stderr.on('data', (b: Buffer) => (output += b.toString()));
  const admin = async (path: string): Promise<string> => {
    const res = await fetch(`http://127.0.0.1:${adminPort}/${path.replace(/^\//, '')}`);
    return res.text();
  };
  const stats = async (filter?: RegExp): Promise<Map<string, number>> => {
    const body = JSON.parse(await admin('stats?format=json')) as { stats: { name?: string; value?: number }[] };
    const out = new Map<string, number>();
    for (const s of body.stats) if (s.name !== undefined && typeof s.value === 'number' && (!filter || filter.test(s.name))) out.set(s.name, s.value);
    return out;
  };
  const envoy: RunningEnvoy = {
    process: child,
    adminPort,
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
      { timeoutMs: 20_000, description: `Envoy admin on 127.0.0.1:${adminPort}` },
    );
  } catch (err) {
    await envoy.stop();
    throw err;
  }
  return envoy;
}

interface NodeCapture {
  readonly user_agent_name: string;
  readonly user_agent_build_version: { readonly version: { readonly major_number: number; readonly minor_number: number; readonly patch: number } };
  readonly extensions: readonly { readonly name: string; readonly category: string }[];
}

/** What the pinned upstream Envoy declares in its Node (captured from its /server_info: testdata/envoy/node-<version>.json). */
export function upstreamEnvoyBuild(): EnvoyBuild {
  const n = JSON.parse(readFileSync(join(REPO_ROOT, 'testdata', 'envoy', `node-${ENVOY_VERSION}.json`), 'utf8')) as NodeCapture;
  const v = n.user_agent_build_version.version;
  return { userAgentName: n.user_agent_name, version: { major: v.major_number, minor: v.minor_number, patch: v.patch }, extensions: n.extensions };
}
