import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { trackChild } from './cleanup.js';
import { MESHPILOT_CLI, MODULE_LOG_URL, PARENT_WATCHDOG_URL, REPO_ROOT } from './paths.js';
import { freePorts } from './ports.js';
import { describeFindings, scanForSecrets, type SecretFinding } from './secret-scan.js';
import { waitFor } from './wait.js';

/** One stderr line of meshpilot: `json` is set when the line parsed as a JSON object. */
export interface LogLine {
  readonly raw: string;
  readonly json?: Record<string, unknown>;
  /** Position in the capture (0-based), for `since` marks. */
  readonly index: number;
}

export interface StartOptions {
  configDir: string;
  /** Extra environment for the child (merged over the parent's). */
  env?: Record<string, string>;
  /** A file to which the child appends the URL of every module it resolves (test/support/module-log.mjs). */
  moduleLog?: string;
  /** Extra CLI arguments after the address flags. */
  args?: readonly string[];
  /** How long to wait for GET /ready (default 30 s: the first tsx compile is slow). */
  readyTimeoutMs?: number;
  /**
   * Host the plaintext gRPC, HTTP and monitoring servers bind (default 127.0.0.1). With 0.0.0.0
   * the returned addresses stay 127.0.0.1:port; tests reach the same ports from a non-loopback address.
   */
  listenHost?: string;
  /** Copy meshpilot's stderr to ours (also enabled by MESHPILOT_TEST_LOGS=1). */
  echoLogs?: boolean;
  /** Called for every stderr line. */
  onLine?: (l: LogLine) => void;
  /** Keep lines for logs()/waitForLog (default true; the bench turns it off). */
  retainLines?: boolean;
  /**
   * A built entry point (dist/src/cli/meshpilot.js) to run with plain node instead of the
   * TypeScript source under tsx, whose loader alone holds ~100 MiB (the bench measures RSS).
   */
  cliJs?: string;
}

export interface ExitInfo {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface Meshpilot {
  readonly pid: number;
  /** `127.0.0.1:port` of the plaintext ADS server. */
  readonly grpcAddr: string;
  readonly httpAddr: string;
  readonly monitoringAddr: string;
  /** Every stderr line so far. */
  logs(): readonly LogLine[];
  /** Index to pass to `logsSince` / `waitForLog` to look only at lines logged after now. */
  mark(): number;
  logsSince(mark: number): readonly LogLine[];
  /** Waits for a line (at or after `since`) matching `pred`; throws after timeoutMs (default 10 s). */
  waitForLog(pred: (l: LogLine) => boolean, opts?: { since?: number; timeoutMs?: number; description?: string }): Promise<LogLine>;
  /** Still running (not exited)? */
  alive(): boolean;
  /** Resolves when the process exits. */
  readonly exited: Promise<ExitInfo>;
  /** SIGTERM, then SIGKILL after `graceMs` (default 5 s). Idempotent. */
  stop(graceMs?: number): Promise<ExitInfo>;
  /** The last `n` stderr lines, for failure messages. */
  tail(n?: number): string;
  /** Private keys, JWTs and CSRs seen in retained stderr lines (kind and line, never the text). */
  secretFindings(): readonly SecretFinding[];
}

/**
 * Starts `meshpilot discovery` as a child process on free loopback ports and waits for /ready.
 * The child is killed on `stop()`, on test-process exit, and (via the stdin watchdog) if this
 * process dies without running any handler.
 */
export async function startMeshpilot(opts: StartOptions): Promise<Meshpilot> {
  // A free port can be taken by another process between freePorts() and meshpilot's listen
  // (parallel test files): then start again on other ports, a few times.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(opts);
    } catch (err) {
      if (attempt >= 3 || !/EADDRINUSE/.test((err as Error).message)) throw err;
    }
  }
}

async function startOnce(opts: StartOptions): Promise<Meshpilot> {
  const [grpcPort, httpPort, monPort] = await freePorts(3);
  const grpcAddr = `127.0.0.1:${grpcPort}`;
  const httpAddr = `127.0.0.1:${httpPort}`;
  const monitoringAddr = `127.0.0.1:${monPort}`;
  const env: Record<string, string | undefined> = {
    ...process.env,
    ...opts.env,
    MESHPILOT_PARENT_WATCHDOG: '1',
    ...(opts.moduleLog !== undefined ? { MESHPILOT_MODULE_LOG: opts.moduleLog } : {}),
  };
  // The node:test runner marks its children; meshpilot is not a test file.
  delete env.NODE_TEST_CONTEXT;
  delete env.GRPC_XDS_BOOTSTRAP;
  delete env.GRPC_XDS_BOOTSTRAP_CONFIG;
  const argv = [
    // MESHPILOT_NODE_ARGS: extra node flags for profiling a bench run (e.g. `--cpu-prof --cpu-prof-dir=DIR`),
    // which NODE_OPTIONS does not accept.
    ...(process.env.MESHPILOT_NODE_ARGS ?? '').split(' ').filter((a) => a !== ''),
    ...(opts.cliJs !== undefined ? [] : ['--import', 'tsx']),
    '--import',
    PARENT_WATCHDOG_URL,
    ...(opts.moduleLog !== undefined ? ['--import', MODULE_LOG_URL] : []),
    opts.cliJs ?? MESHPILOT_CLI,
    'discovery',
    // The harness reads the log as JSON lines (the default is istiod's text format).
    '--log_as_json',
    '--configDir',
    opts.configDir,
    '--grpcAddr',
    `${opts.listenHost ?? '127.0.0.1'}:${grpcPort}`,
    '--httpAddr',
    `${opts.listenHost ?? '127.0.0.1'}:${httpPort}`,
    '--monitoringAddr',
    `${opts.listenHost ?? '127.0.0.1'}:${monPort}`,
    // Every instance gets its own CA port (the default 15012 would collide between parallel tests).
    '--secureGRPCAddr',
    '127.0.0.1:0',
    // Same for the HTTPS webhook server (default 15017); a test passing --httpsAddr in args wins (the last flag counts).
    '--httpsAddr',
    '127.0.0.1:0',
    ...(opts.args ?? []),
  ];
  const child = spawn(process.execPath, argv, { cwd: REPO_ROOT, env, stdio: ['pipe', 'ignore', 'pipe'] });
  trackChild(child);
  const mp = wrap(
    child,
    { grpcAddr, httpAddr, monitoringAddr },
    {
      echo: opts.echoLogs ?? process.env.MESHPILOT_TEST_LOGS === '1',
      retain: opts.retainLines ?? true,
      ...(opts.onLine ? { onLine: opts.onLine } : {}),
    },
  );
  const stopPolling = new AbortController();
  try {
    const ready = waitFor(() => isReady(httpAddr), {
      signal: stopPolling.signal,
      timeoutMs: opts.readyTimeoutMs ?? 30_000,
      intervalMs: 100,
      description: `meshpilot /ready on ${httpAddr}`,
    });
    const died = mp.exited.then((e) => {
      throw new Error(`meshpilot exited before it was ready (code ${e.code}, signal ${e.signal})`);
    });
    died.catch(() => {});
    ready.catch(() => {});
    await Promise.race([ready, died]);
  } catch (err) {
    stopPolling.abort();
    await mp.stop(1000);
    const exit = await mp.exited;
    throw new Error(
      `meshpilot did not become ready (exit code ${exit.code}, signal ${exit.signal}): ${(err as Error).message}\n--- stderr tail ---\n${mp.tail(40)}`,
      { cause: err },
    );
  }
  return mp;
}

async function isReady(httpAddr: string): Promise<boolean> {
  try {
    const res = await fetch(`http://${httpAddr}/ready`, { signal: AbortSignal.timeout(1000) });
    await res.arrayBuffer();
    return res.status === 200;
  } catch {
    return false;
  }
}

function wrap(
  child: ChildProcess,
  addrs: { grpcAddr: string; httpAddr: string; monitoringAddr: string },
  o: { echo: boolean; retain: boolean; onLine?: (l: LogLine) => void },
): Meshpilot {
  const lines: LogLine[] = [];
  const findings: SecretFinding[] = [];
  const recent: string[] = [];
  let count = 0;
  const waiters = new Set<() => void>();
  if (child.stderr) {
    const rl = createInterface({ input: child.stderr, crlfDelay: Infinity });
    rl.on('line', (raw) => {
      if (o.echo) process.stderr.write(`[meshpilot] ${raw}\n`);
      const line = parseLine(raw, count++);
      recent.push(raw);
      if (recent.length > 200) recent.splice(0, recent.length - 100);
      o.onLine?.(line);
      if (!o.retain) return;
      // Every retained line is checked for secret material; stop() fails if any was logged.
      if (findings.length < 100) findings.push(...scanForSecrets(raw, `meshpilot stderr (line ${line.index + 1})`));
      lines.push(line);
      for (const w of waiters) w();
    });
  }
  let exitInfo: ExitInfo | undefined;
  const exited = new Promise<ExitInfo>((resolve) => {
    child.once('exit', (code, signal) => {
      exitInfo = { code, signal };
      resolve(exitInfo);
      for (const w of waiters) w();
    });
  });
  const alive = (): boolean => exitInfo === undefined && child.exitCode === null && child.signalCode === null;
  let stopping: Promise<ExitInfo> | undefined;
  const tail = (n = 20): string => recent.slice(-n).join('\n');
  return {
    pid: child.pid ?? -1,
    ...addrs,
    logs: () => lines,
    secretFindings: () => findings,
    mark: () => lines.length,
    logsSince: (m) => lines.slice(m),
    alive,
    exited,
    tail,
    waitForLog(pred, o = {}) {
      const since = o.since ?? 0;
      const timeoutMs = o.timeoutMs ?? 10_000;
      return new Promise<LogLine>((resolve, reject) => {
        let scanned = since;
        const check = (): void => {
          for (; scanned < lines.length; scanned++) {
            const l = lines[scanned];
            if (l !== undefined && pred(l)) {
              done();
              resolve(l);
              return;
            }
          }
          if (!alive()) {
            done();
            reject(new Error(`meshpilot exited while waiting for ${o.description ?? 'a log line'}\n${tail(30)}`));
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`timed out after ${timeoutMs} ms waiting for ${o.description ?? 'a log line'}; last lines:\n${tail(30)}`));
        }, timeoutMs);
        const done = (): void => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    stop(graceMs = 5000) {
      if (stopping) return stopping;
      stopping = (async () => {
        if (alive()) {
          child.kill('SIGTERM');
          const timer = setTimeout(() => {
            if (alive()) child.kill('SIGKILL');
          }, graceMs);
          await exited;
          clearTimeout(timer);
        }
        child.stdin?.destroy();
        const info = await exited;
        // After the process is gone, so a leak fails the test file without leaving meshpilot running.
        if (findings.length > 0) throw new Error(`meshpilot logged secret material:\n${describeFindings(findings)}`);
        return info;
      })();
      return stopping;
    },
  };
}

function parseLine(raw: string, index: number): LogLine {
  const s = raw.trim();
  if (s.startsWith('{')) {
    try {
      const v: unknown = JSON.parse(s);
      if (v !== null && typeof v === 'object' && !Array.isArray(v)) return { raw, json: v as Record<string, unknown>, index };
    } catch {
      /* not JSON */
    }
  }
  return { raw, index };
}

/** Level of a JSON log line (`level` field), or undefined. */
export function levelOf(l: LogLine): string | undefined {
  const v = l.json?.level;
  return typeof v === 'string' ? v : undefined;
}

/**
 * What a test file holds meshpilot to when it ends, read before stop(): it did not exit on its own,
 * and no API call it made was forbidden (it runs as the RBAC manifest's ServiceAccount). Call the
 * returned check after the rest of the cleanup, so a failure does not leave servers behind.
 */
export function endOfRunCheck(mp: Meshpilot | undefined): () => void {
  const crashed = mp !== undefined && !mp.alive();
  const tail = mp?.tail(30) ?? '';
  const forbidden =
    mp
      ?.logs()
      .filter((l) => /forbidden/i.test(l.raw))
      .map((l) => l.raw) ?? [];
  return () => {
    if (crashed) throw new Error(`meshpilot exited during the tests\n${tail}`);
    if (forbidden.length > 0) throw new Error(`the RBAC manifest did not let meshpilot make every call it makes:\n${forbidden.join('\n')}`);
  };
}
