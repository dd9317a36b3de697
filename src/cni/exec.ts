import { spawn } from 'node:child_process';

export interface ExecResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs one command (never through a shell) and resolves with its exit code and output. */
export type Exec = (cmd: string, args: readonly string[], stdin?: string) => Promise<ExecResult>;

export interface ExecOptions {
  /**
   * Network namespace to run in: a path (CNI_NETNS, /proc/PID/ns/net) or an `ip netns` name
   * (then /run/netns/NAME). Absent: the caller's own namespace (init-container mode).
   */
  readonly netns?: string;
  readonly timeoutMs?: number;
  /** Sees every command and its result (the runner's report uses it for the debug trail). */
  readonly onRun?: (cmd: string, args: readonly string[], result: ExecResult) => void;
}

export function netnsPath(netns: string): string {
  return netns.includes('/') ? netns : `/run/netns/${netns}`;
}

/**
 * The real executor. In another namespace it goes through `nsenter --net=PATH` (util-linux), so
 * only the network namespace changes: the binaries, /etc and the xtables lock stay the caller's.
 * A missing binary resolves with code 127 instead of rejecting, like a shell would.
 */
export function commandRunner(opts: ExecOptions = {}): Exec {
  const timeoutMs = opts.timeoutMs ?? 30_000;
  return (cmd, args, stdin) => {
    const [file, argv] = opts.netns === undefined ? [cmd, [...args]] : ['nsenter', [`--net=${netnsPath(opts.netns)}`, '--', cmd, ...args]];
    return new Promise<ExecResult>((resolve) => {
      const child = spawn(file, argv, { stdio: ['pipe', 'pipe', 'pipe'], timeout: timeoutMs, env: { ...process.env, LC_ALL: 'C' } });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      child.stdin.on('error', () => {
        /* the command exited without reading its input: its exit code says why */
      });
      const done = (result: ExecResult): void => {
        opts.onRun?.(cmd, args, result);
        resolve(result);
      };
      child.once('error', (err: NodeJS.ErrnoException) => {
        done({ code: err.code === 'ENOENT' ? 127 : 126, stdout, stderr: stderr + `${file}: ${err.message}\n` });
      });
      child.once('close', (code, signal) => {
        done({ code: code ?? 128, stdout, stderr: signal ? `${stderr}${cmd} killed by ${signal}\n` : stderr });
      });
      child.stdin.end(stdin ?? '');
    });
  };
}

/** `cmd args...` for messages. */
export function describeCommand(cmd: string, args: readonly string[]): string {
  return [cmd, ...args.map((a) => (/^[\w./:=,@%+-]+$/.test(a) ? a : JSON.stringify(a)))].join(' ');
}
