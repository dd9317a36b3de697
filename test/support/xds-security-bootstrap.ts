import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import type * as GrpcJs from '@grpc/grpc-js';
import { trackChild } from './cleanup.js';
import { PARENT_WATCHDOG_URL, REPO_ROOT } from './paths.js';
import type { WorkloadCerts } from './spiffe-certs.js';

/**
 * Proxyless gRPC peers with their own identity. grpc-js-xds reads one bootstrap per process (node,
 * certificate_providers), so every workload — an XdsServer, or a client with some identity — runs
 * in a child process of its own, started here and driven over IPC. The bootstrap is the one Istio's
 * agent writes for `GENERATOR: grpc` (pkg/istio-agent/grpcxds): file_watcher provider `default`
 * over cert-chain.pem / key.pem / root-cert.pem and the inbound listener name template.
 */

/** Istio's agent's server_listener_resource_name_template (grpcxds.ServerListenerNameTemplate). */
export const SERVER_LISTENER_TEMPLATE = 'xds.istio.io/grpc/lds/inbound/%s';
export const ECHO_PATHS = { whoami: '/echo.Echo/Whoami', secret: '/echo.Echo/Secret' } as const;

export interface PeerNode {
  /** `sidecar~<ip>~<pod>.<ns>~<ns>.svc.cluster.local` */
  readonly id: string;
  readonly namespace: string;
  readonly labels: Readonly<Record<string, string>>;
}

export function peerNode(pod: string, namespace: string, labels: Record<string, string>, ip = '127.0.0.1'): PeerNode {
  return { id: `sidecar~${ip}~${pod}.${namespace}~${namespace}.svc.cluster.local`, namespace, labels };
}

/** The gRPC xDS bootstrap of one workload; without `certs` no certificate provider (plaintext only). */
export function securityBootstrap(serverAddr: string, node: PeerNode, certs?: WorkloadCerts): Record<string, unknown> {
  return {
    xds_servers: [{ server_uri: serverAddr, channel_creds: [{ type: 'insecure' }], server_features: ['xds_v3'] }],
    // grpc-js-xds fails every RPC without a locality (interop-notes.md).
    node: { id: node.id, locality: {}, metadata: { GENERATOR: 'grpc', NAMESPACE: node.namespace, LABELS: node.labels } },
    server_listener_resource_name_template: SERVER_LISTENER_TEMPLATE,
    ...(certs
      ? {
          certificate_providers: {
            default: {
              plugin_name: 'file_watcher',
              config: {
                certificate_file: certs.certChainFile,
                private_key_file: certs.keyFile,
                ca_certificate_file: certs.rootCertFile,
                refresh_interval: '900s',
              },
            },
          },
        }
      : {}),
  };
}

/** What the server saw of one call: who it is and the caller's certificate SAN (`plaintext` without TLS). */
export interface EchoReply {
  readonly server: string;
  readonly port: number;
  readonly peer: string;
}

export interface PeerTally {
  readonly total: number;
  readonly ok: number;
  /** Successful calls by the caller identity the server reported (EchoReply.peer). */
  readonly peers: Readonly<Record<string, number>>;
  /** Failed calls by gRPC status code. */
  readonly errors: Readonly<Record<number, number>>;
  readonly details: readonly string[];
}

export interface CallSpec {
  readonly target: string;
  readonly path: string;
  readonly n: number;
  /** XdsChannelCredentials (use the cluster's TLS config) instead of plaintext. */
  readonly secure: boolean;
  readonly deadlineMs?: number;
}

export interface XdsPeer {
  readonly name: string;
  /** Binds an XdsServer on 127.0.0.1:<port> for each port; resolves once every port serves. */
  serve(ports: readonly number[], timeoutMs?: number): Promise<void>;
  call(spec: CallSpec): Promise<PeerTally>;
  alive(): boolean;
  stop(): Promise<void>;
  /** Recent stderr lines, for failure messages. */
  tail(n?: number): string;
}

type Op = { op: 'serve'; ports: number[] } | { op: 'call'; spec: CallSpec } | { op: 'stop' };
type Request = Op & { id: number };
type Response = { id: number; ok: true; result?: unknown } | { id: number; ok: false; error: string };

/** Starts a peer child with `bootstrap`; RBAC is enabled in its grpc-js-xds (GRPC_XDS_EXPERIMENTAL_RBAC). */
export async function startXdsPeer(name: string, bootstrap: Record<string, unknown>, env: Record<string, string> = {}): Promise<XdsPeer> {
  const childEnv: Record<string, string | undefined> = {
    ...process.env,
    ...env,
    MESHPILOT_PARENT_WATCHDOG: '1',
    XDS_PEER_NAME: name,
    GRPC_XDS_BOOTSTRAP_CONFIG: JSON.stringify(bootstrap),
    GRPC_XDS_EXPERIMENTAL_RBAC: 'true',
  };
  delete childEnv.NODE_TEST_CONTEXT;
  delete childEnv.GRPC_XDS_BOOTSTRAP;
  const entry = `import { runXdsPeer } from ${JSON.stringify(import.meta.url)}; await runXdsPeer();`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--import', PARENT_WATCHDOG_URL, '--input-type=module', '-e', entry], {
    cwd: REPO_ROOT,
    env: childEnv,
    stdio: ['pipe', 'ignore', 'pipe', 'ipc'],
  });
  trackChild(child);
  return wrapPeer(name, child);
}

function wrapPeer(name: string, child: ChildProcess): Promise<XdsPeer> {
  const recent: string[] = [];
  if (child.stderr) {
    createInterface({ input: child.stderr }).on('line', (l) => {
      recent.push(l);
      if (recent.length > 200) recent.splice(0, 100);
    });
  }
  const tail = (n = 20): string => recent.slice(-n).join('\n');
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  let nextId = 1;
  let exited = false;
  const exit = new Promise<void>((resolve) =>
    child.once('exit', () => {
      exited = true;
      for (const p of pending.values()) p.reject(new Error(`peer ${name} exited\n${tail()}`));
      pending.clear();
      resolve();
    }),
  );
  const send = <T>(req: Op, timeoutMs = 60_000): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      if (exited) return reject(new Error(`peer ${name} is not running\n${tail()}`));
      const id = nextId++;
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error(`peer ${name}: ${req.op} timed out after ${timeoutMs} ms\n${tail()}`));
      }, timeoutMs);
      pending.set(id, {
        resolve: (v) => {
          clearTimeout(timer);
          resolve(v as T);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      child.send({ ...req, id });
    });
  const peer: XdsPeer = {
    name,
    serve: (ports, timeoutMs = 30_000) => send({ op: 'serve', ports: [...ports] }, timeoutMs),
    call: (spec) => send({ op: 'call', spec }),
    alive: () => !exited,
    tail,
    async stop() {
      if (exited) return;
      await send({ op: 'stop' }, 5000).catch(() => child.kill('SIGKILL'));
      await exit;
    },
  };
  return new Promise<XdsPeer>((resolve, reject) => {
    const startTimer = setTimeout(() => reject(new Error(`peer ${name} did not start\n${tail()}`)), 30_000);
    child.on('message', (m: Response | { event: 'ready' }) => {
      if ('event' in m) {
        clearTimeout(startTimer);
        resolve(peer);
        return;
      }
      const p = pending.get(m.id);
      pending.delete(m.id);
      if (m.ok) p?.resolve(m.result);
      else p?.reject(new Error(`peer ${name}: ${m.error}\n${tail()}`));
    });
    void exit.then(() => reject(new Error(`peer ${name} exited during start\n${tail()}`)));
  });
}

// ---- child side ------------------------------------------------------------------------------

const identity = (b: Buffer): Buffer => b;
const method = (path: string): GrpcJs.MethodDefinition<Buffer, Buffer> => ({
  path,
  requestStream: false,
  responseStream: false,
  requestSerialize: identity,
  requestDeserialize: identity,
  responseSerialize: identity,
  responseDeserialize: identity,
});

/** The child's main: an echo XdsServer per `serve` request, calls per `call` request. */
export async function runXdsPeer(): Promise<void> {
  const grpc = await import('@grpc/grpc-js');
  const xds = await import('@grpc/grpc-js-xds');
  xds.register();
  const name = process.env.XDS_PEER_NAME ?? 'peer';
  const servers: GrpcJs.Server[] = [];
  const clients = new Map<string, GrpcJs.Client>();

  const serve = (port: number): Promise<void> =>
    new Promise((resolve, reject) => {
      const server = new xds.XdsServer();
      const answer = (call: GrpcJs.ServerUnaryCall<Buffer, Buffer>, cb: GrpcJs.sendUnaryData<Buffer>): void => {
        const auth = call.getAuthContext();
        const peer = auth.transportSecurityType
          ? (auth.sslPeerCertificate?.subjectaltname?.replace(/^URI:/, '') ?? 'tls-without-client-cert')
          : 'plaintext';
        const reply: EchoReply = { server: name, port, peer };
        cb(null, Buffer.from(JSON.stringify(reply)));
      };
      server.addService({ Whoami: method(ECHO_PATHS.whoami), Secret: method(ECHO_PATHS.secret) }, { Whoami: answer, Secret: answer });
      servers.push(server);
      try {
        // The callback only runs once a valid Listener arrived and the port serves.
        server.bindAsync(`127.0.0.1:${port}`, new xds.XdsServerCredentials(grpc.ServerCredentials.createInsecure()), (err) =>
          err ? reject(err) : resolve(),
        );
      } catch (err) {
        reject(err as Error);
      }
    });

  const callOnce = (c: GrpcJs.Client, spec: CallSpec): Promise<{ reply?: EchoReply; code?: number; details?: string }> =>
    new Promise((resolve) => {
      const deadline = Date.now() + (spec.deadlineMs ?? 5000);
      c.makeUnaryRequest<Buffer, Buffer>(spec.path, identity, identity, Buffer.alloc(0), new grpc.Metadata(), { deadline }, (err, res) => {
        if (err) resolve({ code: err.code, details: err.details });
        else resolve({ reply: JSON.parse((res ?? Buffer.alloc(0)).toString('utf8')) as EchoReply });
      });
    });

  const callMany = async (spec: CallSpec): Promise<PeerTally> => {
    const key = `${spec.secure ? 'tls' : 'plain'}|${spec.target}`;
    let c = clients.get(key);
    if (!c) {
      const creds = spec.secure ? new xds.XdsChannelCredentials(grpc.credentials.createInsecure()) : grpc.credentials.createInsecure();
      clients.set(key, (c = new grpc.Client(spec.target, creds)));
    }
    const results = await Promise.all(Array.from({ length: spec.n }, () => callOnce(c, spec)));
    const peers: Record<string, number> = {};
    const errors: Record<number, number> = {};
    const details = new Set<string>();
    for (const r of results) {
      if (r.reply) peers[r.reply.peer] = (peers[r.reply.peer] ?? 0) + 1;
      else {
        errors[r.code ?? -1] = (errors[r.code ?? -1] ?? 0) + 1;
        details.add(`${r.code} ${r.details}`);
      }
    }
    return { total: spec.n, ok: results.filter((r) => r.reply).length, peers, errors, details: [...details] };
  };

  const reply = (m: Response): void => void process.send?.(m);
  process.on('message', (m: Request) => {
    const run = async (): Promise<unknown> => {
      if (m.op === 'serve') return Promise.all(m.ports.map(serve)).then(() => undefined);
      if (m.op === 'call') return callMany(m.spec);
      for (const c of clients.values()) c.close();
      for (const s of servers) s.forceShutdown();
      setImmediate(() => process.exit(0));
      return undefined;
    };
    run().then(
      (result) => reply({ id: m.id, ok: true, result }),
      (err: unknown) => reply({ id: m.id, ok: false, error: String((err as Error).message ?? err) }),
    );
  });
  process.send?.({ event: 'ready' });
}
