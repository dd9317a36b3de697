/**
 * A pod's istio-proxy container: `meshpilot agent --mode envoy` (certificates from meshpilot's CA
 * over SDS, ADS relayed to meshpilot's TLS port) and a real Envoy started from the bootstrap the
 * agent writes. Both run as uid 1337 as the container does; the agent runs in the root network
 * namespace (it dials meshpilot on loopback) and Envoy inside the pod's, joined by the agent's
 * unix sockets, which cross namespaces.
 *
 * Envoy is started here by `startProxy` until the agent starts and supervises it itself; only that
 * function changes then.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { access, readFile } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { letOthersReachRepo } from '../cni/meshpilot-in-netns.js';
import { terminate, trackChild } from '../cleanup.js';
import { startEnvoy, type RunningEnvoy } from '../envoy.js';
import { MESHPILOT_CLI, PARENT_WATCHDOG_URL, REPO_ROOT } from '../paths.js';
import { waitFor } from '../wait.js';
import { PROXY_UID, type Pod } from './topology.js';

export interface SidecarSpec {
  readonly pod: Pod;
  readonly namespace: string;
  readonly serviceAccount: string;
  readonly labels: Readonly<Record<string, string>>;
}

export interface ControlPlane {
  /** meshpilot's TLS xDS + CA address. */
  readonly secureAddr: string;
  readonly rootFile: string;
  token(namespace: string, serviceAccount: string): Promise<string>;
}

export interface Sidecar {
  readonly envoy: RunningEnvoy;
  /** The agent's log lines so far. */
  agentLog(): string;
  stop(): Promise<void>;
}

const ownedByProxy = (p: string): void => chownSync(p, PROXY_UID, PROXY_UID);

function startAgent(cp: ControlPlane, s: SidecarSpec, dir: string, token: string): { child: ChildProcess; lines: string[] } {
  const tokenFile = path.join(dir, 'istio-token');
  writeFileSync(tokenFile, token, { mode: 0o600 });
  ownedByProxy(tokenFile);
  const root = path.join(dir, 'root-cert.pem');
  copyFileSync(cp.rootFile, root);
  ownedByProxy(root);
  const labels = Object.entries(s.labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  const args = [
    'agent',
    '--mode',
    'envoy',
    '--xdsAddr',
    cp.secureAddr,
    '--caRootCert',
    root,
    '--tokenFile',
    tokenFile,
    '--envoyBootstrap',
    path.join(dir, 'envoy-rev.json'),
    '--xdsSocket',
    path.join(dir, 'XDS'),
    '--sdsSocket',
    path.join(dir, 'SDS'),
    '--wasmCacheDir',
    path.join(dir, 'wasm'),
    '--podName',
    s.pod.name,
    '--namespace',
    s.namespace,
    '--serviceAccount',
    s.serviceAccount,
    '--podIp',
    s.pod.ip,
    '--labels',
    labels,
    '--retryInitialInterval',
    '200ms',
    '--retryMaxInterval',
    '2s',
    // Envoy runs inside the pod's namespace (started below) while the agent stays outside, where
    // meshpilot's loopback address is reachable: the agent serves SDS and xDS only.
    '--runEnvoy',
    'false',
    '--statusPort',
    '0',
    // Delta ADS as Istio's bootstrap; MESHPILOT_TEST_ENVOY_XDS_API=GRPC runs the mesh over SotW.
    '--envoyXdsApi',
    process.env.MESHPILOT_TEST_ENVOY_XDS_API ?? 'DELTA_GRPC',
  ];
  const env: Record<string, string | undefined> = {
    ...process.env,
    MESHPILOT_PARENT_WATCHDOG: '1',
    ISTIO_META_INTERCEPTION_MODE: 'REDIRECT',
  };
  for (const k of Object.keys(env))
    if (k === 'NODE_TEST_CONTEXT' || k.startsWith('GRPC_XDS') || (k.startsWith('ISTIO_META') && k !== 'ISTIO_META_INTERCEPTION_MODE'))
      delete env[k];
  // The agent runs as the proxy's uid: the checkout (tsx, the CLI) must be reachable by it.
  letOthersReachRepo();
  const user = ['--reuid', String(PROXY_UID), '--regid', String(PROXY_UID), '--clear-groups'];
  const child = spawn('setpriv', [...user, process.execPath, '--import', 'tsx', '--import', PARENT_WATCHDOG_URL, MESHPILOT_CLI, ...args], {
    // tsx is resolved from the working directory; every path the agent writes is absolute.
    cwd: REPO_ROOT,
    env: { ...env, HOME: dir },
    stdio: ['pipe', 'ignore', 'pipe'],
  });
  trackChild(child);
  const lines: string[] = [];
  createInterface({ input: child.stderr! }).on('line', (l) => lines.push(l));
  return { child, lines };
}

/**
 * pilot-agent's Envoy flags (pilot/pkg/envoy/proxy.go). `--drain-strategy immediate` matters here:
 * a listener update (a new policy) drains the old filter chain's connections at once — each
 * serves at most one more response, with `Connection: close` — instead of over the drain time.
 */
const ISTIO_ENVOY_ARGS = [
  '--drain-time-s',
  '45',
  '--drain-strategy',
  'immediate',
  '--local-address-ip-version',
  'v4',
  '--file-flush-interval-msec',
  '1000',
  '--disable-hot-restart',
  '--allow-unknown-static-fields',
];

/** Envoy from the agent's bootstrap, in the pod's namespace, as the proxy's uid. */
async function startProxy(pod: Pod, bootstrapFile: string): Promise<RunningEnvoy> {
  const bootstrap = JSON.parse(await readFile(bootstrapFile, 'utf8')) as Record<string, unknown>;
  return startEnvoy({ bootstrap, netns: pod.ns.name, uid: PROXY_UID, logLevel: 'warning', args: ISTIO_ENVOY_ARGS });
}

/** Starts agent and Envoy for `s`, resolving once Envoy is LIVE with its listeners from meshpilot. */
export async function startSidecar(cp: ControlPlane, s: SidecarSpec, baseDir: string): Promise<Sidecar> {
  const dir = path.join(baseDir, s.pod.name);
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o700);
  ownedByProxy(dir);
  const agent = startAgent(cp, s, dir, await cp.token(s.namespace, s.serviceAccount));
  const agentLog = (): string => agent.lines.slice(-30).join('\n');
  const bootstrapFile = path.join(dir, 'envoy-rev.json');
  let envoy: RunningEnvoy | undefined;
  try {
    await waitFor(
      async () => {
        if (agent.child.exitCode !== null) throw new Error(`agent exited ${agent.child.exitCode}`);
        return access(bootstrapFile).then(
          () => true,
          () => false,
        );
      },
      { description: `the ${s.pod.name} agent's Envoy bootstrap`, timeoutMs: 60_000 },
    );
    envoy = await startProxy(s.pod, bootstrapFile);
    const e = envoy;
    // LIVE (server.state 0) means the initial LDS/CDS (and the SDS secrets they name) arrived.
    await waitFor(async () => (await e.stats(/^server\.state$/)).get('server.state') === 0, {
      description: `${s.pod.name} Envoy LIVE`,
      timeoutMs: 60_000,
    });
  } catch (err) {
    await envoy?.stop();
    await terminate(agent.child, 3000);
    throw new Error(`${(err as Error).message}\n--- agent ---\n${agentLog()}\n--- envoy ---\n${envoy?.log().slice(-3000) ?? ''}`, {
      cause: err,
    });
  }
  const running = envoy;
  return {
    envoy: running,
    agentLog,
    async stop() {
      await running.stop();
      agent.child.stdin?.end();
      await terminate(agent.child, 3000);
    },
  };
}
