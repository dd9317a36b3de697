/**
 * The Envoy process the agent runs in envoy mode: the command line pilot-agent passes, and a
 * supervisor that restarts an Envoy that exits on its own with exponential backoff (pilot-agent's
 * retry budget: the delay starts at 200ms and doubles, 10 restarts) and gives up — the agent then
 * exits non-zero so the kubelet restarts the container — once the budget is spent.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { isIP } from 'node:net';
import { MeshError, errorMessage } from '../util/errors.js';
import type { Logger } from '../util/log.js';
import type { EnvoyRunOptions } from './envoy-options.js';

/** Istio's Envoy log format (pilot-agent sets it so Envoy's default is not applied). */
export const ENVOY_LOG_FORMAT = '%Y-%m-%dT%T.%fZ\t%l\tenvoy %n %g:%#\t%v\tthread=%t';

/** `level,component:level,…` → Envoy's -l and --component-log-level, as pilot-agent splits it. */
function logLevelArgs(level: string, componentLevel: string): string[] {
  const parts = level
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
  const base = parts.filter((p) => !p.includes(':')).at(-1);
  const components = parts.filter((p) => p.split(':').length === 2);
  const out = base !== undefined ? ['-l', base] : [];
  const comp = components.length > 0 ? components.join(',') : componentLevel;
  return comp !== '' ? [...out, '--component-log-level', comp] : out;
}

/** Envoy's command line, as pilot-agent builds it (pkg/envoy/proxy.go). */
export function envoyArgs(bootstrapFile: string, run: EnvoyRunOptions, podIp: string): string[] {
  return [
    '-c',
    bootstrapFile,
    '--drain-time-s',
    String(Math.floor(run.drainDurationMs / 1000)),
    // Clients are told to go away as soon as the drain starts, not gradually over drain-time-s.
    '--drain-strategy',
    'immediate',
    '--local-address-ip-version',
    isIP(podIp) === 6 ? 'v6' : 'v4',
    // Access logs reach the file within 1s instead of Envoy's default 10s.
    '--file-flush-interval-msec',
    '1000',
    // No hot restart: a new Envoy is a new process, and several Envoys can share a host without --base-id.
    '--disable-hot-restart',
    '--allow-unknown-static-fields',
    '--log-format',
    ENVOY_LOG_FORMAT,
    ...logLevelArgs(run.logLevel, run.componentLogLevel),
    ...(run.concurrency > 0 ? ['--concurrency', String(run.concurrency)] : []),
  ];
}

export interface EnvoyProcessOptions {
  readonly binaryPath: string;
  readonly args: readonly string[];
  readonly maxRestarts: number;
  readonly restartInitialIntervalMs: number;
  /** A run at least this long restores the full restart budget (default 60s): only a crash loop gives up. */
  readonly stableAfterMs?: number;
  /** Envoy's stdout and stderr: the agent's own (default), or dropped (tests). */
  readonly stdio?: 'inherit' | 'ignore';
  readonly log: Logger;
}

export interface EnvoyStart {
  readonly pid: number;
  /** 0 for the first Envoy, then 1, 2 … for each restart. */
  readonly generation: number;
}

/** How an Envoy process ended: its exit code, or the signal that killed it. */
function describeExit(code: number | null, signal: NodeJS.Signals | null): string {
  if (signal === 'SIGKILL') return 'was killed by SIGKILL (out of memory? check the container memory limit)';
  return signal !== null ? `was killed by ${signal}` : `exited with code ${code}`;
}

export class EnvoyProcess {
  private child: ChildProcess | undefined;
  private generation = -1;
  private budget: number;
  private timer: NodeJS.Timeout | undefined;
  private stopping = false;
  /** Shutting down: an exit now ends the drain early instead of starting another Envoy. */
  private noRestart = false;
  private readonly startListeners = new Set<(s: EnvoyStart) => void>();
  private finish!: (err: Error | undefined) => void;
  /** Resolves when supervision ends: undefined after stop(), the reason after giving up. */
  readonly ended: Promise<Error | undefined>;
  private readonly killOnExit = (): void => {
    this.child?.kill('SIGKILL');
  };

  constructor(private readonly o: EnvoyProcessOptions) {
    this.budget = o.maxRestarts;
    this.ended = new Promise((resolve) => (this.finish = resolve));
  }

  get pid(): number | undefined {
    return this.child?.exitCode === null && this.child.signalCode === null ? this.child.pid : undefined;
  }

  /** Restarts so far. */
  get restarts(): number {
    return Math.max(0, this.generation);
  }

  /** Called with every Envoy process started (the first and each restart). */
  onStart(listener: (s: EnvoyStart) => void): void {
    this.startListeners.add(listener);
  }

  start(): void {
    if (this.generation >= 0) throw new MeshError('INTERNAL', 'Envoy is already started');
    // An agent that exits without stop() (a crash) must not leave its Envoy behind.
    process.on('exit', this.killOnExit);
    this.run();
  }

  private run(): void {
    this.timer = undefined;
    if (this.stopping) return;
    this.generation++;
    const generation = this.generation;
    const startedAt = Date.now();
    const child = spawn(this.o.binaryPath, [...this.o.args], { stdio: ['ignore', this.o.stdio ?? 'inherit', this.o.stdio ?? 'inherit'] });
    this.child = child;
    let spawnError: Error | undefined;
    child.once('error', (err) => {
      spawnError = err;
      // A binary that cannot be run will not run on a retry either.
      if (child.pid === undefined)
        this.giveUp(
          new MeshError(
            'UNAVAILABLE',
            `cannot run Envoy ${this.o.binaryPath}: ${errorMessage(err)} (set --envoyBinary or ProxyConfig binaryPath)`,
            { cause: err },
          ),
        );
    });
    child.once('spawn', () => {
      this.o.log.info('envoy started', { pid: child.pid, generation, binary: this.o.binaryPath, args: this.o.args });
      for (const l of this.startListeners) l({ pid: child.pid!, generation });
    });
    child.once('exit', (code, signal) => {
      if (this.stopping || spawnError !== undefined) return;
      const how = describeExit(code, signal);
      if (this.noRestart) {
        this.o.log.warn('envoy exited during shutdown: not restarting', { pid: child.pid, exit: how });
        return;
      }
      if (Date.now() - startedAt >= (this.o.stableAfterMs ?? 60_000)) this.budget = this.o.maxRestarts;
      if (this.budget === 0) {
        this.giveUp(new MeshError('UNAVAILABLE', `Envoy (pid ${child.pid}) ${how}; gave up after ${this.o.maxRestarts} restarts`));
        return;
      }
      const attempt = this.o.maxRestarts - this.budget;
      this.budget--;
      const delayMs = this.o.restartInitialIntervalMs * 2 ** attempt;
      this.o.log.error('envoy exited unexpectedly: restarting', { pid: child.pid, exit: how, delayMs, restartsLeft: this.budget });
      this.timer = setTimeout(() => this.run(), delayMs);
    });
  }

  private giveUp(err: Error): void {
    if (this.stopping) return;
    this.stopping = true;
    process.off('exit', this.killOnExit);
    this.o.log.error('envoy keeps exiting: giving up', { error: err.message });
    this.finish(err);
  }

  /** From now on an exiting Envoy is not restarted (the agent is shutting down and draining it). */
  stopRestarting(): void {
    this.noRestart = true;
  }

  /** Ends supervision and stops the current Envoy: SIGTERM, then SIGKILL after graceMs. */
  async stop(graceMs = 5000): Promise<void> {
    const wasStopping = this.stopping;
    this.stopping = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    const child = this.child;
    if (child !== undefined && child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      const hard = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(hard);
    }
    process.off('exit', this.killOnExit);
    if (!wasStopping) this.finish(undefined);
  }
}
