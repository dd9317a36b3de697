#!/usr/bin/env node
/** The `meshctl` bin: runs the CLI against the real process streams and exits with its code. */
import { text } from 'node:stream/consumers';
import { runCli } from './cli.js';

const code = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  cwd: process.cwd(),
  readStdin: () => text(process.stdin),
});
process.exitCode = code;
