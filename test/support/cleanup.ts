import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';

/**
 * Process-wide last-resort cleanup: child processes still alive and temp dirs still present when
 * the test process exits (normally, by an uncaught error, or by SIGINT/SIGTERM) are killed/removed.
 * Tests still stop things themselves in `after` hooks; this catches what a failing test skipped.
 * (A SIGKILLed test process cannot run anything: children guard themselves with parent-watchdog.mjs.)
 */
const children = new Set<ChildProcess>();
const dirs = new Set<string>();
const hooks = new Set<() => void>();
let installed = false;

function install(): void {
  if (installed) return;
  installed = true;
  process.on('exit', () => {
    for (const c of children) {
      if (c.exitCode === null && c.signalCode === null) {
        try {
          c.kill('SIGKILL');
        } catch {
          /* already gone */
        }
      }
    }
    for (const hook of hooks) {
      try {
        hook();
      } catch {
        /* best effort */
      }
    }
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => process.exit(130));
  }
}

export function trackChild(c: ChildProcess): void {
  install();
  children.add(c);
  c.once('exit', () => children.delete(c));
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once `c` has exited (at once if it already has). */
export async function terminate(c: ChildProcess, graceMs = 5000): Promise<void> {
  if (c.exitCode !== null || c.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => c.once('exit', () => resolve()));
  c.kill('SIGTERM');
  const t = setTimeout(() => c.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(t);
}

export function trackDir(dir: string): () => void {
  install();
  dirs.add(dir);
  return () => dirs.delete(dir);
}

/** Runs `hook` (synchronously) when the test process exits; returns its removal. */
export function atExit(hook: () => void): () => void {
  install();
  hooks.add(hook);
  return () => hooks.delete(hook);
}
