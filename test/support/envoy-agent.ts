/**
 * `meshpilot agent --mode envoy` running the real Envoy (test/support/envoy.ts) as a child of the
 * test, against a `meshpilot discovery` with its CA (jwt-ca-meshpilot.ts): every port on a free
 * one, so agents of concurrent tests never collide. Plain HTTP helpers for its ports.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { atExit, trackChild } from './cleanup.js';
import { ENVOY_BINARY } from './envoy.js';
import type { JwtCaMeshpilot } from './jwt-ca-meshpilot.js';
import { MESHPILOT_CLI, PARENT_WATCHDOG_URL, REPO_ROOT } from './paths.js';
import { freePorts } from './ports.js';
import { waitFor } from './wait.js';

export interface AgentPorts {
  readonly admin: number;
  readonly status: number;
  readonly envoyStatus: number;
  readonly prometheus: number;
}

export interface EnvoyAgent {
  readonly child: ChildProcess;
  readonly ports: AgentPorts;
  readonly lines: string[];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Pids from the agent's `envoy started` lines, newest last. */
  envoyPids(): number[];
  /** The last lines of the agent and of meshpilot, for assertion messages. */
  tail(n?: number): string;
}

export interface Answer {
  readonly status: number;
  readonly body: string;
  readonly headers: http.IncomingHttpHeaders;
}

/** One request on a fresh connection (no pooled socket survives an Envoy restart to confuse a later one). */
export function httpGet(port: number, p: string, opts: { method?: string; headers?: http.OutgoingHttpHeaders } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, path: p, method: opts.method ?? 'GET', headers: opts.headers, agent: false },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

// Envoys are the agents' children: if a test process dies before an agent could stop its Envoy,
// none may outlive the run.
const envoyPids = new Set<number>();
atExit(() => {
  for (const pid of envoyPids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
});

export interface AgentSpec {
  /** Pod name prefix and service account. */
  readonly name: string;
  readonly namespace: string;
  /** `k=v,k=v` */
  readonly labels: string;
  readonly proxyType?: 'sidecar' | 'router' | 'waypoint';
  /** Where the agent keeps its token, sockets and bootstrap. */
  readonly dir: string;
  readonly args?: readonly string[];
  readonly env?: Readonly<Record<string, string>>;
}

/** Starts the agent; Envoy is the real one unless `args` says otherwise. */
export async function startEnvoyAgent(ca: JwtCaMeshpilot, spec: AgentSpec): Promise<EnvoyAgent> {
  const base = path.join(spec.dir, spec.name);
  await mkdir(base, { recursive: true });
  await writeFile(path.join(base, 'token'), await ca.token(spec.namespace, spec.name));
  const [admin, status, envoyStatus, prometheus] = (await freePorts(4)) as [number, number, number, number];
  const ports = { admin, status, envoyStatus, prometheus };
  const env: Record<string, string | undefined> = { ...process.env, MESHPILOT_PARENT_WATCHDOG: '1', ...spec.env };
  for (const k of Object.keys(env))
    if (k === 'NODE_TEST_CONTEXT' || k.startsWith('GRPC_XDS') || k.startsWith('ISTIO_META') || k === 'PROXY_CONFIG') delete env[k];
  const args = [
    '--mode',
    'envoy',
    '--proxyType',
    spec.proxyType ?? 'router',
    '--xdsAddr',
    ca.secureAddr,
    '--caRootCert',
    ca.rootFile,
    '--tokenFile',
    path.join(base, 'token'),
    '--envoyBootstrap',
    path.join(base, 'envoy-rev.json'),
    '--xdsSocket',
    path.join(base, 'XDS'),
    '--sdsSocket',
    path.join(base, 'SDS'),
    '--wasmCacheDir',
    path.join(base, 'wasm'),
    '--podName',
    `${spec.name}-0`,
    '--namespace',
    spec.namespace,
    '--serviceAccount',
    spec.name,
    '--podIp',
    '127.0.0.1',
    '--labels',
    spec.labels,
    '--envoyBinary',
    ENVOY_BINARY,
    '--adminPort',
    String(admin),
    '--statusPort',
    String(status),
    '--envoyStatusPort',
    String(envoyStatus),
    '--envoyPrometheusPort',
    String(prometheus),
    '--concurrency',
    '1',
    '--terminationDrainDuration',
    '3s',
    '--drainDuration',
    '5s',
    '--envoyRestartInterval',
    '100ms',
    '--proxyLogLevel',
    'warning',
    ...(spec.args ?? []),
  ];
  const child = spawn(process.execPath, ['--import', 'tsx', '--import', PARENT_WATCHDOG_URL, MESHPILOT_CLI, 'agent', ...args], {
    cwd: REPO_ROOT,
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  trackChild(child);
  const lines: string[] = [];
  const pids: number[] = [];
  const onLine = (l: string): void => {
    lines.push(l);
    if (l.includes('"envoy started"')) {
      const pid = (JSON.parse(l) as { pid: number }).pid;
      pids.push(pid);
      envoyPids.add(pid);
    }
  };
  createInterface({ input: child.stderr! }).on('line', onLine);
  createInterface({ input: child.stdout! }).on('line', onLine);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return {
    child,
    ports,
    lines,
    exited,
    envoyPids: () => [...pids],
    tail: (n = 30) => `\n--- agent ${spec.name} ---\n${withoutRepeats(lines).slice(-n).join('\n')}\n--- meshpilot ---\n${ca.mp.tail(15)}`,
  };
}

/** Drops a line that repeats the one before but for its timestamp, so Envoy's own warnings stay in a tail. */
function withoutRepeats(lines: string[]): string[] {
  const untimed = (l: string): string => l.replace(/"time":"[^"]*",?/, '');
  return lines.filter((l, i) => i === 0 || untimed(l) !== untimed(lines[i - 1]!));
}

export async function stopEnvoyAgent(a: EnvoyAgent): Promise<void> {
  if (a.child.exitCode === null && a.child.signalCode === null) a.child.kill('SIGTERM');
  const t = setTimeout(() => a.child.kill('SIGKILL'), 10_000);
  await a.exited;
  clearTimeout(t);
}

const readyOn = async (port: number): Promise<boolean> =>
  (await httpGet(port, '/healthz/ready').catch(() => ({ status: 0 }))).status === 200;

/** Waits for the agent's 15020 /healthz/ready (certificate, first CDS + LDS, Envoy LIVE). */
export async function waitAgentReady(a: EnvoyAgent, timeoutMs = 60_000): Promise<void> {
  await waitFor(
    async () => {
      if (a.child.exitCode !== null) throw new Error(`the agent exited with code ${a.child.exitCode}`);
      return readyOn(a.ports.status);
    },
    { description: `agent /healthz/ready on ${a.ports.status}`, timeoutMs, intervalMs: 100 },
  ).catch((e: Error) => assert.fail(e.message + a.tail()));
}

export const envoyAdmin = async (a: EnvoyAgent, p: string): Promise<string> => (await httpGet(a.ports.admin, p)).body;

/** Sum of Envoy's `*.update_rejected` counters (LDS, CDS, RDS, EDS, SDS). */
export async function rejectedUpdates(a: EnvoyAgent): Promise<number> {
  const stats = JSON.parse(await envoyAdmin(a, '/stats?format=json&filter=update_rejected$')) as {
    stats: { name?: string; value?: number }[];
  };
  return stats.stats.reduce((sum, s) => sum + (s.value ?? 0), 0);
}
