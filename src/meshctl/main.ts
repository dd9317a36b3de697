#!/usr/bin/env node
/** The `meshctl` bin: runs the CLI against the real process streams and exits with its code. */
import { createInterface } from 'node:readline/promises';
import { text } from 'node:stream/consumers';
import { runCli } from './cli.js';

/** istioctl's (y/N) question: yes only for y or yes. */
async function askOnTerminal(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await rl.question(question)).trim());
  } finally {
    rl.close();
  }
}

// `meshctl manifest generate | head`: a reader that stops early ends the output quietly, not with a crash.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code !== 'EPIPE') throw err;
  process.exit(0);
});

const code = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  cwd: process.cwd(),
  readStdin: () => text(process.stdin),
  // Only a terminal can answer a question; elsewhere commands that must ask refuse (istioctl's -y).
  ...(process.stdin.isTTY ? { confirm: askOnTerminal } : {}),
});
process.exitCode = code;
