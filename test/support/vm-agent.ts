/**
 * A VM for tests: a network namespace with its own address (nothing is added on the host), in which `meshpilot agent --mode envoy` runs with the real Envoy, as on a VM provisioned
 * by `meshctl x workload entry configure`. The agent reaches meshpilot's secure port through
 * ztunnel-netns-relay.mjs (127.0.0.1:15012 in the namespace → a unix socket → meshpilot on the
 * host's loopback), as a VM reaches istiod through the east-west gateway.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { trackChild } from './cleanup.js';
import { createNetns, type Netns } from './cni/netns.js';
import { ENVOY_BINARY } from './envoy.js';
import type { JwtCaMeshpilot } from './jwt-ca-meshpilot.js';
import { MESHPILOT_CLI, PARENT_WATCHDOG_URL, REPO_ROOT } from './paths.js';
import { waitFor } from './wait.js';

const RELAY = new URL('./ztunnel-netns-relay.mjs', import.meta.url).pathname;
/** istiod's TLS xDS port, inside the namespace. */
const XDS_PORT = 15012;

export interface VmSpec {
  readonly name: string;
  readonly namespace: string;
  readonly serviceAccount: string;
  /** The VM's address (added as a /32 inside its namespace). */
  readonly ip: string;
  /** Where the agent keeps its token, sockets and bootstrap. */
  readonly dir: string;
  /** Agent environment beyond PATH/HOME (ISTIO_META_AUTO_REGISTER_GROUP, PROXY_CONFIG …). */
  readonly env?: Readonly<Record<string, string>>;
  readonly args?: readonly string[];
}

export interface Vm {
  readonly ns: Netns;
  /** The agent's (and relay's) output lines so far. */
  readonly lines: string[];
  /** Starts the agent (again, after stopAgent). */
  startAgent(): Promise<void>;
  /** SIGTERM to the agent; resolves when it has exited. */
  stopAgent(): Promise<void>;
  /** Runs a command in the VM's namespace in the background (an app); killed by the returned function. */
  spawnInVm(cmd: string, args: readonly string[]): { child: ChildProcess; kill: () => Promise<void> };
  tail(n?: number): string;
  remove(): Promise<void>;
}

function bridge(a: net.Socket, b: net.Socket): void {
  a.pipe(b);
  b.pipe(a);
  a.on('error', () => b.destroy());
  b.on('error', () => a.destroy());
  a.on('close', () => b.destroy());
  b.on('close', () => a.destroy());
}

export async function startVm(ca: JwtCaMeshpilot, spec: VmSpec): Promise<Vm> {
  mkdirSync(spec.dir, { recursive: true });
  const ns = createNetns('vm');
  // The VM's own address: local to its namespace, on lo (no peer is needed: the mesh reaches it by config only).
  ns.run('ip', 'addr', 'add', `${spec.ip}/32`, 'dev', 'lo');
  const tokenFile = path.join(spec.dir, 'istio-token');
  writeFileSync(tokenFile, await ca.token(spec.namespace, spec.serviceAccount), { mode: 0o600 });
  const rootFile = path.join(spec.dir, 'root-cert.pem');
  copyFileSync(ca.rootFile, rootFile);
  const [host, port] = [
    ca.secureAddr.slice(0, ca.secureAddr.lastIndexOf(':')),
    Number(ca.secureAddr.slice(ca.secureAddr.lastIndexOf(':') + 1)),
  ];
  const sock = path.join(spec.dir, 'meshpilot.sock');
  const server = net.createServer((c) => bridge(c, net.connect(port, host)));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(sock, resolve);
  });
  const lines: string[] = [];
  const children = new Set<ChildProcess>();
  let agent: { child: ChildProcess; exited: Promise<void> } | undefined;
  const agentArgs = [
    '--import',
    'tsx',
    MESHPILOT_CLI,
    'agent',
    '--mode',
    'envoy',
    '--proxyType',
    'sidecar',
    '--xdsAddr',
    `127.0.0.1:${XDS_PORT}`,
    '--caRootCert',
    rootFile,
    '--tokenFile',
    tokenFile,
    '--envoyBootstrap',
    path.join(spec.dir, 'envoy-rev.json'),
    '--xdsSocket',
    path.join(spec.dir, 'XDS'),
    '--sdsSocket',
    path.join(spec.dir, 'SDS'),
    '--wasmCacheDir',
    path.join(spec.dir, 'wasm'),
    '--meshConfig',
    path.join(spec.dir, 'mesh'),
    '--podName',
    spec.name,
    '--namespace',
    spec.namespace,
    '--serviceAccount',
    spec.serviceAccount,
    '--podIp',
    spec.ip,
    '--envoyBinary',
    ENVOY_BINARY,
    '--concurrency',
    '1',
    '--drainDuration',
    '1s',
    '--terminationDrainDuration',
    '1s',
    '--retryInitialInterval',
    '200ms',
    '--retryMaxInterval',
    '2s',
    '--proxyLogLevel',
    'warning',
    ...(spec.args ?? []),
  ];
  const vm: Vm = {
    ns,
    lines,
    async startAgent() {
      const relaySpec = {
        bin: process.execPath,
        args: agentArgs,
        cwd: REPO_ROOT,
        graceMs: 5000,
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: spec.dir, ...spec.env },
        toHost: [{ port: XDS_PORT, unix: sock }],
      };
      const child = spawn('ip', ['netns', 'exec', ns.name, process.execPath, '--import', PARENT_WATCHDOG_URL, RELAY], {
        env: { PATH: process.env.PATH, MESHPILOT_PARENT_WATCHDOG: '1', ZTUNNEL_RELAY_SPEC: JSON.stringify(relaySpec) },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      trackChild(child);
      for (const s of [child.stdout, child.stderr]) createInterface({ input: s }).on('line', (l) => lines.push(l));
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      agent = { child, exited };
      await waitFor(() => lines.some((l) => l.includes('"agent ready"')), {
        description: `the ${spec.name} agent ready`,
        timeoutMs: 60_000,
      }).catch((err: Error) => {
        throw new Error(`${err.message}\n${vm.tail()}`);
      });
    },
    async stopAgent() {
      const a = agent;
      agent = undefined;
      if (!a) return;
      a.child.kill('SIGTERM');
      const t = setTimeout(() => a.child.kill('SIGKILL'), 15_000);
      await a.exited;
      clearTimeout(t);
    },
    spawnInVm(cmd, args) {
      const child = spawn('ip', ['netns', 'exec', ns.name, cmd, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
      trackChild(child);
      children.add(child);
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      return {
        child,
        kill: async () => {
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
          await exited;
          children.delete(child);
        },
      };
    },
    tail: (n = 40) => `\n--- vm ${spec.name} ---\n${lines.slice(-n).join('\n')}\n--- meshpilot ---\n${ca.mp.tail(20)}`,
    async remove() {
      await vm.stopAgent();
      for (const c of children) c.kill('SIGKILL');
      server.close();
      ns.remove();
    },
  };
  return vm;
}
