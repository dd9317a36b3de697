import { spawn } from 'node:child_process';
import { chmodSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { trackChild } from '../cleanup.js';
import { REPO_ROOT } from '../paths.js';
import type { Netns } from './netns.js';

/**
 * The `meshpilot` command line (src/cli/meshpilot.ts, through tsx) run inside a test's network
 * namespace, as a container of the pod would run it: optionally as another uid/gid (setpriv), as
 * the istio-validation container runs as 1337.
 */

export interface CommandRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export interface RunAs {
  readonly uid?: number;
  readonly gid?: number;
  readonly env?: NodeJS.ProcessEnv;
}

const CLI = join(REPO_ROOT, 'src', 'cli', 'meshpilot.ts');

let traversable = false;

/**
 * Another uid must reach the checkout: a directory above it without search permission for others
 * (a clone inside `mktemp -d`, mode 0700) gets o+x, and keeps it. Test files run as parallel
 * processes: one that put the mode back as it exited cut off another's uid-1337 agents while they
 * were loading modules (Node reports the EACCES as "Cannot find module"). Search permission
 * alone lists nothing.
 */
export function letOthersReachRepo(): void {
  if (traversable) return;
  traversable = true;
  for (let dir = REPO_ROOT; ; dir = dirname(dir)) {
    const mode = statSync(dir).mode & 0o7777;
    if ((mode & 0o001) === 0) chmodSync(dir, mode | 0o001);
    if (dirname(dir) === dir) break;
  }
}

export function meshpilotInNetns(ns: Netns, args: readonly string[], as: RunAs = {}): Promise<CommandRun> {
  if (as.uid !== undefined) letOthersReachRepo();
  const user = as.uid === undefined ? [] : ['setpriv', `--reuid=${as.uid}`, `--regid=${as.gid ?? as.uid}`, '--clear-groups'];
  const cmd = [...user, process.execPath, '--import', 'tsx', CLI, ...args];
  return new Promise((resolve) => {
    const child = spawn('ip', ['netns', 'exec', ns.name, ...cmd], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...as.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    trackChild(child);
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.once('close', (code) => resolve({ code: code ?? 128, stdout, stderr }));
  });
}
