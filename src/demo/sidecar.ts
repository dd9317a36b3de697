/**
 * The demo client's sidecar: `meshpilot agent --mode envoy` (a certificate from meshpilot's CA,
 * SDS and the ADS proxy on unix sockets) and a stock Envoy from the bootstrap the agent writes.
 * Without iptables there is no capture, so the bootstrap gets one more listener: 127.0.0.1:<port>,
 * an HTTP connection manager whose routes are the sidecar's own outbound route configuration for
 * the service port (RDS `9080`, from meshpilot) — what the capture would have led the request to.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { childEnv, selfCommand, type ControlPlane } from './control-plane.js';
import { freePort, running, startChild, stopChild, until, type Child } from './processes.js';

/** The Envoy release scripts/install-envoy installs. */
export const DEMO_ENVOY_VERSION = '1.40.0';

/** Where Envoy is: --envoy, MESHPILOT_ENVOY, install-envoy's cache, else `envoy` on PATH; undefined when none. */
export function findEnvoy(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const candidates = [
    flag,
    env.MESHPILOT_ENVOY,
    join(homedir(), '.cache', 'meshpilot-envoy', DEMO_ENVOY_VERSION, 'envoy'),
    ...(env.PATH ?? '')
      .split(delimiter)
      .filter((d) => d !== '')
      .map((d) => join(d, 'envoy')),
  ];
  return candidates.find((c): c is string => c !== undefined && c !== '' && existsSync(c));
}

export interface SidecarSpec {
  readonly envoyBinary: string;
  readonly namespace: string;
  readonly podName: string;
  readonly serviceAccount: string;
  /** The pod IP in the node id: not a workload's address, so the client is no endpoint of the services. */
  readonly podIp: string;
  /** The service port whose outbound routes the entry listener serves. */
  readonly servicePort: number;
}

export interface Sidecar {
  /** Where the client sends its requests (127.0.0.1:port). */
  readonly entry: string;
  readonly adminPort: number;
  readonly envoyVersion: string;
  stop(): Promise<void>;
}

function entryListener(port: number, routeName: string): Record<string, unknown> {
  return {
    name: 'demo_entry',
    address: { socket_address: { address: '127.0.0.1', port_value: port } },
    filter_chains: [
      {
        filters: [
          {
            name: 'envoy.filters.network.http_connection_manager',
            typed_config: {
              '@type': 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
              stat_prefix: 'demo_entry',
              codec_type: 'AUTO',
              rds: { route_config_name: routeName, config_source: { ads: {}, initial_fetch_timeout: '0s', resource_api_version: 'V3' } },
              http_filters: [
                {
                  name: 'envoy.filters.http.router',
                  typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router' },
                },
              ],
            },
          },
        ],
      },
    ],
  };
}

/** Whether 127.0.0.1:port accepts a connection (Envoy binds its static listeners once it is initialized). */
function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = connect(port, '127.0.0.1');
    sock.once('connect', () => {
      sock.destroy();
      resolve(true);
    });
    sock.once('error', () => resolve(false));
  });
}

async function adminGet(port: number, path: string): Promise<string> {
  const r = await fetch(`http://127.0.0.1:${port}${path}`);
  return r.text();
}

export async function startSidecar(cp: ControlPlane, s: SidecarSpec, workDir: string): Promise<Sidecar> {
  const dir = join(workDir, 'client-sidecar');
  const tokenFile = join(dir, 'istio-token');
  const agentBootstrap = join(dir, 'envoy-rev.json');
  const [adminPort, promPort, entryPort] = [await freePort(), await freePort(), await freePort()];
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(tokenFile, await cp.token(s.namespace, s.serviceAccount), { mode: 0o600 });
  const self = selfCommand();
  const agent = startChild(
    'meshpilot agent',
    self.command,
    [
      ...self.args,
      'agent',
      '--mode',
      'envoy',
      '--runEnvoy',
      'false',
      '--xdsAddr',
      cp.addrs.secureGRPCAddr,
      '--caRootCert',
      join(cp.caDir, 'root-cert.pem'),
      '--tokenFile',
      tokenFile,
      '--envoyBootstrap',
      agentBootstrap,
      '--xdsSocket',
      join(dir, 'XDS'),
      '--sdsSocket',
      join(dir, 'SDS'),
      '--wasmCacheDir',
      join(dir, 'wasm'),
      '--podName',
      s.podName,
      '--namespace',
      s.namespace,
      '--serviceAccount',
      s.serviceAccount,
      '--podIp',
      s.podIp,
      '--labels',
      `app=${s.podName}`,
      '--statusPort',
      '0',
      '--adminPort',
      String(adminPort),
      '--envoyPrometheusPort',
      String(promPort),
      '--retryInitialInterval',
      '200ms',
      '--retryMaxInterval',
      '2s',
    ],
    { env: childEnv() },
  );
  let envoy: Child | undefined;
  const stop = async (): Promise<void> => {
    if (envoy) await stopChild(envoy, 3000);
    await stopChild(agent, 3000);
  };
  try {
    await until(
      () => {
        if (!running(agent)) throw new Error(`meshpilot agent exited\n${agent.tail()}`);
        return existsSync(agentBootstrap);
      },
      "the agent's Envoy bootstrap",
      30_000,
      () => agent.tail(),
    );
    const bootstrap = JSON.parse(readFileSync(agentBootstrap, 'utf8')) as { static_resources: { listeners: unknown[] } };
    bootstrap.static_resources.listeners.push(entryListener(entryPort, String(s.servicePort)));
    const file = join(dir, 'envoy-demo.json');
    writeFileSync(file, JSON.stringify(bootstrap, null, 2));
    const e = startChild('envoy', s.envoyBinary, [
      '-c',
      file,
      '--log-level',
      'error',
      '--concurrency',
      '1',
      '--disable-hot-restart',
      '--drain-time-s',
      '1',
      '--drain-strategy',
      'immediate',
      '--local-address-ip-version',
      'v4',
    ]);
    envoy = e;
    // LIVE (server.state 0): the first LDS/CDS and the secrets they name arrived; then the entry listener is bound.
    await until(
      async () => {
        if (!running(e)) throw new Error(`Envoy exited (${e.process.exitCode ?? e.process.signalCode})\n${e.tail()}`);
        try {
          return /^server\.state: 0$/m.test(await adminGet(adminPort, '/stats?filter=^server\\.state$'));
        } catch {
          return false;
        }
      },
      'Envoy to be LIVE with its config from meshpilot',
      60_000,
      () => `--- envoy ---\n${e.tail()}\n--- agent ---\n${agent.tail()}`,
    );
    await until(
      () => canConnect(entryPort),
      "Envoy's entry listener",
      30_000,
      () => e.tail(),
    );
    const info = JSON.parse(await adminGet(adminPort, '/server_info')) as { version?: string };
    const envoyVersion = /^[0-9a-f]+\/([0-9.]+)\//.exec(info.version ?? '')?.[1] ?? info.version ?? '?';
    return { entry: `127.0.0.1:${entryPort}`, adminPort, envoyVersion, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
