/**
 * Envoy mode's half of the agent, as pilot-agent runs it: the status server (up from the start, so
 * readiness says what is missing; none on statusPort 0), Envoy started once the bootstrap is
 * written and supervised (unless --runEnvoy false: an Envoy started by something else), and
 * the termination drain: POST /drain_listeners?graceful (inbound listeners only for a sidecar),
 * wait terminationDrainDuration for in-flight requests, then stop Envoy.
 */
import { isIP } from 'node:net';
import path from 'node:path';
import { errorMessage } from '../util/errors.js';
import type { Logger } from '../util/log.js';
import { parseAppProbers } from './app-probers.js';
import type { CertManager } from './cert-manager.js';
import { envoyAdmin, type EnvoyAdmin } from './envoy-admin.js';
import { EnvoyProcess, envoyArgs } from './envoy-process.js';
import type { AgentOptions } from './options.js';
import { AgentMetrics, parseAppMetrics, startStatusServer, type StatusServer } from './status-server.js';

/** Why the agent has to exit on its own: asked to (/quitquitquit), or Envoy cannot be kept running. */
export type AgentExit = { readonly reason: 'quit' } | { readonly reason: 'envoy-failed'; readonly error: Error };

export interface EnvoyRunner {
  readonly statusPort: number;
  /** The running Envoy's pid (undefined before it starts, between restarts and after stop). */
  envoyPid(): number | undefined;
  /** Starts and supervises Envoy on the written bootstrap. */
  startEnvoy(bootstrapFile: string): void;
  /** Why Envoy is not ready (the status server's /healthz/ready), or undefined when it is. */
  notReadyReason(): Promise<string | undefined>;
  readonly exit: Promise<AgentExit>;
  /** The graceful part of shutdown: drain Envoy's listeners, wait the termination drain, stop Envoy. */
  drain(): Promise<void>;
  stop(): Promise<void>;
}

export async function startEnvoyRunner(
  opts: AgentOptions,
  certs: CertManager,
  log: Logger,
  /** What else readiness waits for (the DNS proxy's first name table): the reason, or undefined. */
  agentNotReady: () => string | undefined = () => undefined,
): Promise<EnvoyRunner> {
  const run = opts.envoy;
  const probers = parseAppProbers(run.appProbers);
  // Like pilot-agent, only a sidecar merges its app's metrics: a gateway's status port is exposed by its Service.
  const appMetrics = opts.proxyType === 'sidecar' ? parseAppMetrics(run.appMetrics, run.statusPort) : [];
  const metrics = new AgentMetrics();
  const loopback = isIP(opts.podIp) === 6 ? '::1' : '127.0.0.1';
  let envoy: EnvoyProcess | undefined;
  // One admin client per Envoy process: its readiness is remembered for that process only.
  let admin: EnvoyAdmin | undefined;
  let requestExit!: (e: AgentExit) => void;
  const exit = new Promise<AgentExit>((resolve) => (requestExit = resolve));

  const notReadyReason = async (): Promise<string | undefined> => {
    if (certs.current() === undefined) return 'no workload certificate yet';
    const agentReason = agentNotReady();
    if (agentReason !== undefined) return agentReason;
    // An Envoy run by something else (--runEnvoy false) is still probed on the admin port.
    const current = run.run ? admin : (admin ??= envoyAdmin(run.adminPort));
    if (current === undefined || (run.run && envoy?.pid === undefined)) return 'Envoy is not running';
    try {
      return await current.notReadyReason();
    } catch (err) {
      return `failed to get readiness stats: ${errorMessage(err)}`;
    }
  };
  // Like pilot-agent, statusPort 0 runs no status server.
  const status: StatusServer | undefined =
    run.statusPort === 0
      ? undefined
      : await startStatusServer({
          port: run.statusPort,
          // Every address, as pilot-agent: the kubelet probes the pod IP.
          host: isIP(opts.podIp) === 6 ? '::' : '0.0.0.0',
          notReadyReason,
          envoyStatsUrl: `http://127.0.0.1:${run.prometheusPort}/stats/prometheus`,
          metrics,
          probers,
          appMetrics,
          probeDestination: run.probeLocalhost ? loopback : opts.podIp,
          loopback,
          onQuit: () => requestExit({ reason: 'quit' }),
          log: log.child('status'),
        });

  return {
    statusPort: status?.port ?? 0,
    envoyPid: () => envoy?.pid,
    notReadyReason,
    exit,
    startEnvoy(bootstrapFile) {
      if (envoy !== undefined || !run.run) return;
      envoy = new EnvoyProcess({
        binaryPath: run.binaryPath,
        args: envoyArgs(path.resolve(bootstrapFile), run, opts.podIp),
        maxRestarts: run.maxRestarts,
        restartInitialIntervalMs: run.restartInitialIntervalMs,
        log: log.child('envoy'),
      });
      envoy.onStart((s) => {
        admin = envoyAdmin(run.adminPort);
        if (s.generation > 0) metrics.envoyRestarts.inc();
      });
      void envoy.ended.then((err) => {
        if (err !== undefined) requestExit({ reason: 'envoy-failed', error: err });
      });
      envoy.start();
    },
    async drain() {
      envoy?.stopRestarting();
      if (envoy?.pid === undefined) return;
      const inboundOnly = opts.proxyType === 'sidecar';
      const started = Date.now();
      try {
        await envoyAdmin(run.adminPort).drainListeners(inboundOnly);
      } catch (err) {
        log.warn('error in invoking drain listeners endpoint', { error: errorMessage(err) });
      }
      log.info('graceful termination period started', { terminationDrainDurationMs: run.terminationDrainDurationMs, inboundOnly });
      await new Promise((r) => setTimeout(r, run.terminationDrainDurationMs));
      await envoy.stop();
      log.info('graceful termination period complete: Envoy stopped', { tookMs: Date.now() - started });
    },
    async stop() {
      await envoy?.stop();
      await status?.close();
    },
  };
}
