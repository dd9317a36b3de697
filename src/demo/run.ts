/**
 * `meshpilot demo`: meshpilot on the bundled example (or --configDir), the workloads it names as
 * small apps on loopback, and a client whose requests go through a real data plane — a stock Envoy
 * sidecar fed by meshpilot, or proxyless gRPC when no Envoy is installed — with where they land
 * shown each second. Editing the config directory (say the reviews weights in traffic.yaml)
 * changes the split within a second. Ctrl-C (or --duration) stops everything it started.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startApps, workloadsOf, type RunningApps } from './apps.js';
import { ControlPlaneEvents } from './events.js';
import { startControlPlane, type ControlPlane } from './control-plane.js';
import { killAllChildren, stopChild } from './processes.js';
import { plainLine, table } from './screen.js';
import { findEnvoy, startSidecar, type Sidecar } from './sidecar.js';
import { startTraffic, type TrafficClient } from './traffic.js';

export const DEMO_USAGE = `usage: meshpilot demo [--configDir DIR (the bundled examples/bookinfo)] [--target reviews.default.svc.cluster.local:9080]
                      [--duration D (until Ctrl-C)] [--plain (one line a second, no redraw)] [--rps 50]
                      [--envoy FILE (MESHPILOT_ENVOY, ~/.cache/meshpilot-envoy/1.40.0/envoy, PATH)] [--proxyless]
                      [--grpcAddr 127.0.0.1:15010] [--secureGRPCAddr 127.0.0.1:15012] [--httpAddr 127.0.0.1:8080]
                      [--monitoringAddr 127.0.0.1:15014]
       Runs meshpilot discovery on DIR (watched: edit it while the demo runs; CA state goes to a temp dir),
       starts an app for every loopback WorkloadEntry in it, and sends requests to --target through an
       Envoy sidecar (proxyless gRPC without Envoy), printing each second which versions answered.`;

export interface DemoOptions {
  readonly configDir: string;
  readonly target: string;
  /** 0: until a signal. */
  readonly durationMs: number;
  readonly plain: boolean;
  readonly rps: number;
  readonly envoy?: string;
  readonly proxyless: boolean;
  readonly grpcAddr: string;
  readonly secureGRPCAddr: string;
  readonly httpAddr: string;
  readonly monitoringAddr: string;
}

/** The bundled example: examples/bookinfo beside src/ in a checkout, dist/examples/bookinfo in the package. */
export function bundledExample(): string {
  return fileURLToPath(new URL('../../examples/bookinfo', import.meta.url));
}

function durationMs(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(text.trim());
  if (!m) throw new Error(`--duration: "${text}" is not a duration (10s, 500ms, 2m)`);
  const n = Number(m[1]);
  return m[2] === 'ms' ? n : m[2] === 'm' ? n * 60_000 : n * 1000;
}

export function parseDemoOptions(args: readonly string[]): DemoOptions {
  const { values } = parseArgs({
    args: [...args],
    strict: true,
    allowPositionals: false,
    options: {
      configDir: { type: 'string' },
      target: { type: 'string' },
      duration: { type: 'string' },
      plain: { type: 'boolean' },
      rps: { type: 'string' },
      envoy: { type: 'string' },
      proxyless: { type: 'boolean' },
      grpcAddr: { type: 'string' },
      secureGRPCAddr: { type: 'string' },
      httpAddr: { type: 'string' },
      monitoringAddr: { type: 'string' },
    },
  });
  const rps = Number(values.rps ?? '50');
  if (!Number.isFinite(rps) || rps <= 0 || rps > 1000) throw new Error(`--rps: "${values.rps}" is not a rate between 1 and 1000`);
  const configDir = resolve(values.configDir ?? bundledExample());
  if (!existsSync(configDir)) throw new Error(`--configDir: ${configDir} does not exist`);
  return {
    configDir,
    rps,
    target: values.target ?? 'reviews.default.svc.cluster.local:9080',
    durationMs: values.duration !== undefined ? durationMs(values.duration) : 0,
    plain: values.plain === true,
    ...(values.envoy !== undefined ? { envoy: values.envoy } : {}),
    proxyless: values.proxyless === true,
    grpcAddr: values.grpcAddr ?? '127.0.0.1:15010',
    secureGRPCAddr: values.secureGRPCAddr ?? '127.0.0.1:15012',
    httpAddr: values.httpAddr ?? '127.0.0.1:8080',
    monitoringAddr: values.monitoringAddr ?? '127.0.0.1:15014',
  };
}

const CLIENT = { namespace: 'default', podName: 'demo-client', serviceAccount: 'demo-client', podIp: '127.0.0.10' } as const;

function proxylessBootstrap(grpcAddr: string): string {
  return JSON.stringify({
    xds_servers: [{ server_uri: grpcAddr, channel_creds: [{ type: 'insecure' }], server_features: ['xds_v3'] }],
    node: {
      id: `sidecar~${CLIENT.podIp}~${CLIENT.podName}.${CLIENT.namespace}~${CLIENT.namespace}.svc.cluster.local`,
      metadata: { GENERATOR: 'grpc', NAMESPACE: CLIENT.namespace, CLUSTER_ID: 'Kubernetes' },
      locality: {},
    },
  });
}

export interface DemoIO {
  readonly out: (s: string) => void;
  readonly err: (s: string) => void;
  readonly isTTY: boolean;
}

/** Runs the demo until a signal or --duration; the exit code. */
export async function runDemo(o: DemoOptions, io: DemoIO): Promise<number> {
  const workDir = mkdtempSync(join(tmpdir(), 'meshpilot-demo-'));
  let apps: RunningApps | undefined;
  let cp: ControlPlane | undefined;
  let sidecar: Sidecar | undefined;
  let traffic: TrafficClient | undefined;
  let stopping = false;
  const say = (s: string): void => io.err(`meshpilot demo: ${s}\n`);
  // On a terminal the screen shows them; otherwise each is a line on stderr as it happens.
  const events = new ControlPlaneEvents((notice) => {
    if (!(io.isTTY && !o.plain)) say(notice);
  });
  const cleanup = async (): Promise<void> => {
    traffic?.close();
    await sidecar?.stop();
    if (cp) await stopChild(cp.child, 5000);
    await apps?.close();
    rmSync(workDir, { recursive: true, force: true });
  };
  let wake: (() => void) | undefined;
  const onSignal = (): void => {
    // A second signal while stopping, or one during start-up (which may wait a minute for Envoy):
    // no more waiting on graceful exits.
    if (stopping || wake === undefined) killAllChildren();
    stopping = true;
    wake?.();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('SIGHUP', onSignal);
  try {
    const workloads = workloadsOf(o.configDir);
    if (workloads.length === 0) throw new Error(`no WorkloadEntry on a loopback address in ${o.configDir}: nothing to start`);
    apps = await startApps(workloads);
    say(`${workloads.length} workloads listening: ${workloads.map((w) => `${w.name}@${w.address}:${w.port}`).join(', ')}`);
    cp = await startControlPlane(o.configDir, workDir, o, (l) => events.line(l));
    say(`meshpilot discovery on ${o.configDir} (xDS ${o.grpcAddr}, CA state in ${cp.caDir})`);
    const envoy = o.proxyless ? undefined : findEnvoy(o.envoy);
    const port = Number(/:(\d+)$/.exec(o.target)?.[1] ?? '80');
    let plane: string;
    if (envoy !== undefined) {
      sidecar = await startSidecar(cp, { ...CLIENT, envoyBinary: envoy, servicePort: port }, workDir);
      plane = `Envoy ${sidecar.envoyVersion} sidecar (client → ${sidecar.entry} → routes and clusters from meshpilot; admin 127.0.0.1:${sidecar.adminPort})`;
      traffic = await startTraffic({ kind: 'envoy', entry: sidecar.entry }, o.target, o.rps);
    } else {
      if (!o.proxyless) say('no Envoy found (scripts/install-envoy, or --envoy FILE / MESHPILOT_ENVOY): using a proxyless gRPC client');
      plane = 'proxyless gRPC (grpc-js-xds, xDS from meshpilot; no Envoy)';
      try {
        traffic = await startTraffic({ kind: 'proxyless', bootstrap: proxylessBootstrap(o.grpcAddr) }, o.target, o.rps);
      } catch (err) {
        throw new Error(
          `proxyless gRPC needs @grpc/grpc-js-xds (a dev dependency: run the demo from a checkout, or install Envoy): ${(err as Error).message}`,
          { cause: err },
        );
      }
    }
    say(`data plane: ${plane}`);
    const header = [
      `meshpilot demo — requests to ${o.target}`,
      `data plane: ${plane}`,
      `config: ${o.configDir} (watched: edit traffic.yaml and the split follows)`,
    ];
    const redraw = io.isTTY && !o.plain;
    const seen = new Set<string>();
    const started = Date.now();
    let tick = 0;
    while (!stopping) {
      await new Promise<void>((r) => {
        wake = r;
        setTimeout(r, 1000);
      });
      if (stopping) break;
      tick++;
      const second = traffic.take();
      io.out(redraw ? table(header, second, seen, events.current()) : `${plainLine(tick, second, seen)}\n`);
      if (o.durationMs > 0 && Date.now() - started >= o.durationMs) break;
    }
    say('stopping');
    return 0;
  } catch (err) {
    if (stopping) {
      say('stopped while starting');
      return 0;
    }
    say((err as Error).message);
    return 1;
  } finally {
    // The handlers stay until everything is stopped: a signal during the cleanup must not end the
    // demo with its children still running.
    stopping = true;
    await cleanup();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    process.off('SIGHUP', onSignal);
  }
}
