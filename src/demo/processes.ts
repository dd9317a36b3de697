/**
 * The demo's child processes (meshpilot discovery, the node agent, Envoy): started with their
 * output kept in a short ring for error messages, stopped with SIGTERM then SIGKILL, and all of
 * them killed when the demo process exits however it exits (short of SIGKILL).
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';

export interface Child {
  readonly name: string;
  readonly process: ChildProcess;
  /** The last lines it wrote (stdout and stderr). */
  tail(n?: number): string;
  /** Resolves when it has exited (at once if it has). */
  readonly exited: Promise<void>;
}

const live = new Set<ChildProcess>();
let hooked = false;

/** SIGKILL to every child still running. */
export function killAllChildren(): void {
  for (const c of live) {
    try {
      c.kill('SIGKILL');
    } catch {
      /* gone */
    }
  }
}

function hookExit(): void {
  if (hooked) return;
  hooked = true;
  process.on('exit', killAllChildren);
}

export function startChild(
  name: string,
  command: string,
  args: readonly string[],
  opts: SpawnOptions = {},
  onLine?: (line: string) => void,
): Child {
  hookExit();
  // Its own process group: a Ctrl-C at the terminal reaches the demo only, which then stops the
  // children in order (client, Envoy, agent, control plane) instead of all at once.
  const child = spawn(command, [...args], { ...opts, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  live.add(child);
  const lines: string[] = [];
  const keep = (l: string): void => {
    onLine?.(l);
    lines.push(l);
    if (lines.length > 200) lines.splice(0, lines.length - 200);
  };
  createInterface({ input: child.stdout! }).on('line', keep);
  createInterface({ input: child.stderr! }).on('line', keep);
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      live.delete(child);
      resolve();
    });
    child.once('error', (err) => {
      keep(`${name}: ${err.message}`);
      live.delete(child);
      resolve();
    });
  });
  return { name, process: child, exited, tail: (n = 20) => lines.slice(-n).join('\n') };
}

export const running = (c: Child): boolean => c.process.exitCode === null && c.process.signalCode === null && c.process.pid !== undefined;

/** SIGTERM, then SIGKILL after `graceMs`; resolves once it has exited. */
export async function stopChild(c: Child, graceMs = 5000): Promise<void> {
  if (!running(c)) return;
  c.process.stdin?.end();
  c.process.kill('SIGTERM');
  const timer = setTimeout(() => c.process.kill('SIGKILL'), graceMs);
  await c.exited;
  clearTimeout(timer);
}

/** A TCP port free on 127.0.0.1 right now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      const port = typeof a === 'object' && a !== null ? a.port : 0;
      s.close(() => resolve(port));
    });
  });
}

/** Polls `check` every 100 ms until it returns true; throws `what` (and `why()`) after `timeoutMs`. */
export async function until(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs: number,
  why: () => string = () => '',
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${why() !== '' ? `\n${why()}` : ''}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
