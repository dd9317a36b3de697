/** Test support: an in-memory CliIO and a runner returning exit code and output (not a test file itself). */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCli } from './cli.js';
import type { CliIO } from './io.js';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface RunResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export async function run(argv: readonly string[], stdin?: string, env: Readonly<Record<string, string>> = {}): Promise<RunResult> {
  let stdout = '';
  let stderr = '';
  const io: CliIO = {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    env,
    cwd: REPO_ROOT,
    ...(stdin !== undefined ? { readStdin: () => Promise.resolve(stdin) } : {}),
  };
  // proxy-status/proxy-config are tested on their own (src/meshctl/proxy); the bin test covers the whole program.
  const code = await runCli(argv, io, { proxyCommands: false });
  return { code, stdout, stderr };
}
