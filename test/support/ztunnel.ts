/**
 * The real ztunnel (istio/ztunnel, Rust) against a meshpilot, in dedicated mode (PROXY_MODE=dedicated:
 * one workload, the way a sidecar-less proxy of one pod runs), as tests use it.
 *
 * The binary: ZTUNNEL_BIN, else `~/.cache/meshpilot-ztunnel/<commit>/ztunnel`. Nothing here builds
 * it (CI cannot: it needs the Rust toolchain and minutes of cargo); without it, tests skip with
 * `ztunnelSkipReason()`, which says where the binary is looked for.
 *
 * Ports: ztunnel fixes its inbound (15008), inbound plaintext (15006), outbound (15001), socks5
 * (15080) and readiness (15021) ports — there is no setting for them (src/config.rs) — so two
 * ztunnels cannot share a network namespace. Each runs in its own namespace (root; `createNetns`),
 * where it keeps its default ports; a relay inside the namespace (ztunnel-netns-relay.mjs, which is
 * also ztunnel's parent) carries meshpilot's secure port in (as 127.0.0.1:15012 there) and every
 * ztunnel port out, to a free port on this host's loopback (`ports`, `adminUrl`, …).
 *
 * ztunnel speaks to meshpilot as it speaks to istiod: Delta ADS and the CA service over TLS (no
 * client certificate), `authorization: Bearer <AUTH_TOKEN>` and `clusterid` on each call, the root
 * from XDS_ROOT_CA / CA_ROOT_CA, the server certificate checked for ALT_XDS_HOSTNAME /
 * ALT_CA_HOSTNAME (istiod.istio-system.svc, which meshpilot's serving certificate names).
 *
 * ZTUNNEL_LOG sets ztunnel's RUST_LOG (default info; `debug` shows each connection's path), and
 * MESHPILOT_TEST_LOGS=1 copies its lines to stderr as they come.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import net from 'node:net';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { connect as tlsConnect } from 'node:tls';
import { trackChild } from './cleanup.js';
import { createNetns, isRoot, type Netns } from './cni/netns.js';
import { PARENT_WATCHDOG_URL } from './paths.js';
import { tempDir, type TempDir } from './temp-dir.js';
import { waitFor } from './wait.js';

/** Where builds are cached: one folder per ztunnel commit. */
export const ZTUNNEL_CACHE = join(homedir(), '.cache', 'meshpilot-ztunnel');

const RELAY = new URL('./ztunnel-netns-relay.mjs', import.meta.url).pathname;

/** ztunnel's fixed ports inside its namespace (src/config.rs defaults), by the name tests use. */
export const ZTUNNEL_PORTS = {
  admin: 15000,
  stats: 15020,
  readiness: 15021,
  inbound: 15008,
  inboundPlaintext: 15006,
  outbound: 15001,
  socks5: 15080,
  dns: 15053,
} as const;
export type ZtunnelPort = keyof typeof ZTUNNEL_PORTS;

/** Port of meshpilot's secure gRPC server as ztunnel sees it inside its namespace (istiod's 15012). */
const XDS_PORT_IN_NETNS = 15012;

/** The ztunnel binary to run, or undefined. */
export function ztunnelBinary(): string | undefined {
  const fromEnv = process.env.ZTUNNEL_BIN;
  if (fromEnv) return fromEnv;
  if (!existsSync(ZTUNNEL_CACHE)) return undefined;
  const builds = readdirSync(ZTUNNEL_CACHE)
    .map((d) => join(ZTUNNEL_CACHE, d, 'ztunnel'))
    .filter((f) => existsSync(f))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
  return builds[0];
}

/** Why ztunnel tests cannot run here (skipped, in CI too: CI cannot build ztunnel), or undefined. */
export function ztunnelSkipReason(): string | undefined {
  const bin = ztunnelBinary();
  if (process.env.ZTUNNEL_BIN && !existsSync(process.env.ZTUNNEL_BIN)) return `ZTUNNEL_BIN=${process.env.ZTUNNEL_BIN} does not exist`;
  if (!bin) return `no ztunnel binary: set ZTUNNEL_BIN to an istio/ztunnel release binary, or put one at ${ZTUNNEL_CACHE}/<commit>/ztunnel`;
  if (!isRoot()) return 'needs root: each ztunnel runs in its own network namespace (its ports are fixed)';
  return undefined;
}

export interface ZtunnelWorkload {
  readonly namespace: string;
  readonly pod: string;
  readonly serviceAccount: string;
  /** INSTANCE_IP (the xDS node id's address; default 10.44.0.1). */
  readonly ip?: string;
}

export interface ZtunnelOptions {
  /** meshpilot's secure gRPC address (`host:port` on this host: xDS + CA, istiod's 15012). */
  readonly secureAddress: string;
  /** PEM of meshpilot's root (written to the file XDS_ROOT_CA / CA_ROOT_CA name). */
  readonly rootPem: string;
  /** The bearer token (written to the file AUTH_TOKEN names). */
  readonly token: string;
  readonly workload: ZtunnelWorkload;
  /** The name meshpilot's serving certificate is checked for (default istiod.istio-system.svc). */
  readonly serverName?: string;
  /**
   * LOCAL_XDS: config ztunnel loads beside what meshpilot sends (its `workloads`, `policies`,
   * `services`; camelCase as ztunnel's LocalConfig). `localWorkload(...)` builds the own workload.
   */
  readonly localConfig?: Readonly<Record<string, unknown>>;
  /**
   * More environment (wins over the harness's); `undefined` removes a variable the harness sets
   * (e.g. `NODE_NAME` for a WorkloadEntry, which has no node).
   */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /**
   * Run in this namespace instead of a fresh one: the caller made it (e.g. joined it to another
   * ztunnel's with `connect` so their HBONE ports reach each other, or started an app in it) and
   * removes it; `stop` leaves it.
   */
  readonly netns?: Netns;
}

/** ztunnel's /config_dump (the parts tests read; the rest is kept as it came). */
export interface ZtunnelConfigDump {
  readonly certificates?: readonly ZtunnelCertificate[];
  readonly workloads?: readonly Record<string, unknown>[];
  readonly services?: readonly Record<string, unknown>[];
  readonly policies?: readonly Record<string, unknown>[];
  readonly [key: string]: unknown;
}

/** One certificate of config_dump: `pem` is the PEM text base64-encoded (`dumpedPem` decodes it). */
export interface ZtunnelDumpedCert {
  readonly pem: string;
  readonly serialNumber: string;
  readonly validFrom: string;
  readonly expirationTime: string;
}

export interface ZtunnelCertificate {
  readonly identity: string;
  /** `Available`, `Initializing`, `Unavailable: <error>`. */
  readonly state: string;
  readonly certChain: readonly ZtunnelDumpedCert[];
  readonly rootCerts: readonly ZtunnelDumpedCert[];
}

/** The PEM text of a config_dump certificate. */
export const dumpedPem = (c: ZtunnelDumpedCert): string => Buffer.from(c.pem, 'base64').toString('utf8');

export interface Ztunnel {
  /** The xDS node id ztunnel sends: `ztunnel~<ip>~<pod>.<ns>~<ns>.svc.cluster.local`. */
  readonly nodeId: string;
  readonly netns: string;
  /** `127.0.0.1:<port>` on this host for each of ztunnel's ports. */
  readonly ports: Readonly<Record<ZtunnelPort, string>>;
  readonly adminUrl: string;
  /** ztunnel's stdout and stderr lines so far (its own log, and the relay's `ztunnel-relay:` lines). */
  logs(): readonly string[];
  tail(n?: number): string;
  /** Waits for a log line matching `re` (default 15 s). */
  waitForLog(re: RegExp, timeoutMs?: number): Promise<string>;
  /** Waits until the readiness port answers 200 (`/healthz/ready`): xDS synced and the proxy running. */
  waitReady(timeoutMs?: number): Promise<void>;
  /** GET an admin path (`/config_dump`, `/logging`, …). */
  admin(path: string): Promise<{ status: number; body: string }>;
  configDump(): Promise<ZtunnelConfigDump>;
  /**
   * The dedicated workload's certificate once ztunnel holds it (`Available` in config_dump). In
   * dedicated mode ztunnel fetches it only when first needed, so this waits for readiness (the
   * proxy starts after the first xDS sync) and makes an HBONE handshake on the inbound port until
   * it is there. ztunnel must know the workload (from meshpilot, or `localConfig`).
   */
  waitForCertificate(identity: string, timeoutMs?: number): Promise<ZtunnelCertificate>;
  alive(): boolean;
  /**
   * SIGTERM and wait: ztunnel is SIGKILLed 3 s later if still running (it does not exit on SIGTERM
   * before its first xDS sync; the log says which happened), then its namespace and files are removed.
   * Idempotent.
   */
  stop(): Promise<void>;
}

/** A workload entry of ztunnel's LOCAL_XDS config for `w` (HBONE, so ztunnel serves it with a certificate). */
export function localWorkload(w: ZtunnelWorkload, trustDomain = 'cluster.local'): Record<string, unknown> {
  return {
    uid: `Kubernetes//Pod/${w.namespace}/${w.pod}`,
    name: w.pod,
    namespace: w.namespace,
    serviceAccount: w.serviceAccount,
    trustDomain,
    workloadIps: [w.ip ?? DEFAULT_IP],
    protocol: 'HBONE',
    node: 'local',
    network: '',
    services: {},
  };
}

const DEFAULT_IP = '10.44.0.1';
const STOP_GRACE_MS = 3000;

function get(socketPath: string, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path, method: 'GET', timeout: 5000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${path}: timed out`)));
    req.on('error', reject);
    req.end();
  });
}

function listenTcp(onConnection: (c: net.Socket) => void): Promise<net.Server> {
  return new Promise((resolve, reject) => {
    const s = net.createServer(onConnection);
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => resolve(s));
  });
}

function listenUnix(path: string, onConnection: (c: net.Socket) => void): Promise<net.Server> {
  return new Promise((resolve, reject) => {
    const s = net.createServer(onConnection);
    s.once('error', reject);
    s.listen(path, () => resolve(s));
  });
}

function bridge(a: net.Socket, b: net.Socket): void {
  a.pipe(b);
  b.pipe(a);
  for (const [x, y] of [
    [a, b],
    [b, a],
  ] as const) {
    x.on('error', () => y.destroy());
    x.on('close', () => y.destroy());
  }
}

/** One TLS handshake attempt on ztunnel's HBONE port, through the host-side forward (its outcome does not matter). */
function touchInbound(addr: string): Promise<void> {
  const { host, port } = splitAddress(addr);
  return new Promise((resolve) => {
    const s = tlsConnect({ host, port, rejectUnauthorized: false, ALPNProtocols: ['h2'] });
    const done = (): void => {
      s.destroy();
      resolve();
    };
    s.once('secureConnect', done);
    s.once('error', done);
    s.once('close', done);
    s.setTimeout(5000, done);
  });
}

function splitAddress(addr: string): { host: string; port: number } {
  const i = addr.lastIndexOf(':');
  return { host: addr.slice(0, i).replace(/^\[(.*)\]$/, '$1'), port: Number(addr.slice(i + 1)) };
}

/** Starts ztunnel (see the file comment); resolves once the relay has started it. Call `waitReady` to wait for more. */
export async function startZtunnel(opts: ZtunnelOptions): Promise<Ztunnel> {
  const skip = ztunnelSkipReason();
  if (skip) throw new Error(skip);
  const bin = ztunnelBinary()!;
  const w = opts.workload;
  const ip = w.ip ?? DEFAULT_IP;
  const dir: TempDir = tempDir('mp-zt-');
  const servers: net.Server[] = [];
  let ns: Netns | undefined;
  let child: ChildProcess | undefined;
  const lines: string[] = [];
  const waiters = new Set<() => void>();
  let stopping: Promise<void> | undefined;
  const ports = {} as Record<ZtunnelPort, string>;

  const cleanup = async (): Promise<void> => {
    for (const s of servers) s.close();
    if (!opts.netns) ns?.remove();
    await dir.remove();
  };
  try {
    const rootFile = join(dir.path, 'root-cert.pem');
    const tokenFile = join(dir.path, 'istio-token');
    writeFileSync(rootFile, opts.rootPem);
    writeFileSync(tokenFile, opts.token, { mode: 0o600 });

    // In: meshpilot's secure port, reached from the namespace through a unix socket.
    const target = splitAddress(opts.secureAddress);
    const toMeshpilot = join(dir.path, 'meshpilot.sock');
    servers.push(await listenUnix(toMeshpilot, (c) => bridge(c, net.connect(target.port, target.host))));
    // Out: each ztunnel port, on a free loopback port here.
    const fromHost: { unix: string; port: number }[] = [];
    for (const [name, port] of Object.entries(ZTUNNEL_PORTS) as [ZtunnelPort, number][]) {
      const unix = join(dir.path, `${name}.sock`);
      fromHost.push({ unix, port });
      const s = await listenTcp((c) => bridge(c, net.connect(unix)));
      servers.push(s);
      ports[name] = `127.0.0.1:${(s.address() as net.AddressInfo).port}`;
    }

    const serverName = opts.serverName ?? 'istiod.istio-system.svc';
    const xds = `https://127.0.0.1:${XDS_PORT_IN_NETNS}`;
    const env: Record<string, string | undefined> = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: dir.path,
      RUST_LOG: process.env.ZTUNNEL_LOG ?? 'info',
      XDS_ADDRESS: xds,
      CA_ADDRESS: xds,
      ALT_XDS_HOSTNAME: serverName,
      ALT_CA_HOSTNAME: serverName,
      XDS_ROOT_CA: rootFile,
      CA_ROOT_CA: rootFile,
      AUTH_TOKEN: tokenFile,
      CLUSTER_ID: 'Kubernetes',
      PROXY_MODE: 'dedicated',
      PROXY_WORKLOAD_INFO: `${w.namespace}/${w.pod}/${w.serviceAccount}`,
      UNSTABLE_ENABLE_SOCKS5: 'true',
      // The xDS node: `ztunnel~INSTANCE_IP~POD_NAME.POD_NAMESPACE~POD_NAMESPACE.svc.cluster.local`, metadata NAMESPACE.
      INSTANCE_IP: ip,
      POD_NAME: w.pod,
      POD_NAMESPACE: w.namespace,
      NODE_NAME: 'local',
      // As root ztunnel would otherwise connect to the app from the peer's address (IP_TRANSPARENT);
      // the replies then leave the namespace, since only istio-cni's routing rules bring them back.
      // ztunnel's own dedicated-mode tests turn it off too.
      ENABLE_ORIG_SRC: 'false',
      // Small: one worker, and a short drain on stop.
      ZTUNNEL_WORKER_THREADS: '1',
      CONNECTION_TERMINATION_DEADLINE: '1s',
      ...(opts.localConfig ? { LOCAL_XDS: JSON.stringify(opts.localConfig) } : {}),
      ...opts.env,
    };
    for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
    ns = opts.netns ?? createNetns('zt');
    const spec = {
      bin,
      args: ['proxy'],
      cwd: dir.path,
      graceMs: STOP_GRACE_MS,
      env,
      toHost: [{ port: XDS_PORT_IN_NETNS, unix: toMeshpilot }],
      fromHost,
    };
    const relayEnv: Record<string, string | undefined> = {
      PATH: process.env.PATH,
      MESHPILOT_PARENT_WATCHDOG: '1',
      ZTUNNEL_RELAY_SPEC: JSON.stringify(spec),
    };
    const c = spawn('ip', ['netns', 'exec', ns.name, process.execPath, '--import', PARENT_WATCHDOG_URL, RELAY], {
      env: relayEnv,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    child = c;
    trackChild(c);
    for (const stream of [c.stdout, c.stderr]) {
      createInterface({ input: stream, crlfDelay: Infinity }).on('line', (l) => {
        if (process.env.MESHPILOT_TEST_LOGS === '1') process.stderr.write(`[ztunnel ${w.pod}] ${l}\n`);
        lines.push(l);
        if (lines.length > 5000) lines.splice(0, 1000);
        for (const f of waiters) f();
      });
    }
    const exited = new Promise<void>((resolve) => c.once('exit', () => resolve()));
    const started = waitFor(() => lines.some((l) => l.startsWith('ztunnel-relay: started')), {
      timeoutMs: 15_000,
      description: 'the relay to start ztunnel',
    });
    await Promise.race([
      started,
      exited.then(() => {
        throw new Error('the relay exited');
      }),
    ]);
  } catch (err) {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    await cleanup();
    throw new Error(`ztunnel did not start: ${(err as Error).message}\n--- ztunnel log ---\n${lines.slice(-30).join('\n')}`, {
      cause: err,
    });
  }
  const proc = child;
  const dirPath = dir.path;
  const exited = new Promise<void>((resolve) => {
    if (proc.exitCode !== null || proc.signalCode !== null) resolve();
    else proc.once('exit', () => resolve());
  });
  const alive = (): boolean => proc.exitCode === null && proc.signalCode === null;
  const tail = (n = 30): string => lines.slice(-n).join('\n');
  const admin = (path: string): Promise<{ status: number; body: string }> => get(join(dirPath, 'admin.sock'), path);
  const configDump = async (): Promise<ZtunnelConfigDump> => {
    const r = await admin('/config_dump');
    if (r.status !== 200) throw new Error(`ztunnel /config_dump: HTTP ${r.status} ${r.body.slice(0, 200)}`);
    return JSON.parse(r.body) as ZtunnelConfigDump;
  };
  const waitReady = async (timeoutMs = 30_000): Promise<void> => {
    await waitFor(
      async () => {
        if (!alive()) throw new Error('ztunnel exited');
        return (await get(join(dirPath, 'readiness.sock'), '/healthz/ready')).status === 200;
      },
      { timeoutMs, intervalMs: 200, description: 'ztunnel /healthz/ready' },
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n--- ztunnel log ---\n${tail()}`, { cause: err });
    });
  };

  return {
    nodeId: `ztunnel~${ip}~${w.pod}.${w.namespace}~${w.namespace}.svc.cluster.local`,
    netns: ns!.name,
    ports,
    adminUrl: `http://${ports.admin}`,
    logs: () => [...lines],
    tail,
    waitForLog(re, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const check = (): boolean => {
          const hit = lines.find((l) => re.test(l));
          if (hit === undefined) return false;
          clearTimeout(timer);
          waiters.delete(f);
          resolve(hit);
          return true;
        };
        const f = (): void => void check();
        const timer = setTimeout(() => {
          waiters.delete(f);
          reject(new Error(`no ztunnel log line matching ${re} within ${timeoutMs} ms\n--- ztunnel log ---\n${tail()}`));
        }, timeoutMs);
        if (!check()) waiters.add(f);
      });
    },
    waitReady,
    admin,
    configDump,
    async waitForCertificate(identity, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      await waitReady(timeoutMs);
      let states: string[] = [];
      return waitFor(
        async () => {
          await touchInbound(ports.inbound);
          const certs = (await configDump()).certificates ?? [];
          states = certs.map((c) => `${c.identity}: ${c.state}`);
          return certs.find((c) => c.identity === identity && c.state === 'Available');
        },
        { timeoutMs: Math.max(1000, deadline - Date.now()), intervalMs: 500, description: `an Available certificate for ${identity}` },
      ).catch((err: Error) => {
        throw new Error(`${err.message} (config_dump has ${states.join('; ') || 'none'})\n--- ztunnel log ---\n${tail()}`, { cause: err });
      });
    },
    alive,
    stop() {
      stopping ??= (async () => {
        if (alive()) {
          proc.kill('SIGTERM');
          // The relay SIGKILLs ztunnel after STOP_GRACE_MS; the relay itself only if it hangs too.
          const t = setTimeout(() => proc.kill('SIGKILL'), STOP_GRACE_MS + 5000);
          await exited;
          clearTimeout(t);
        }
        await cleanup();
      })();
      return stopping;
    },
  };
}
