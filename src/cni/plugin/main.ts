#!/usr/bin/env node
import { text } from 'node:stream/consumers';
import { runCniPlugin } from './plugin.js';

/**
 * meshpilot-cni: the binary a container runtime executes (env + stdin in, result on stdout).
 * No top-level await: the bundle is CommonJS (an extensionless file outside a package runs as CJS).
 */
async function main(): Promise<number> {
  // VERSION may come without stdin; every other command carries the network config.
  const stdin = process.stdin.isTTY ? '' : await text(process.stdin);
  const out = await runCniPlugin(process.env, stdin);
  process.stdout.write(out.stdout);
  if (out.stderr !== '') process.stderr.write(out.stderr);
  return out.code;
}

main().then(
  (code) => (process.exitCode = code),
  (err: unknown) => {
    process.stdout.write(`${JSON.stringify({ cniVersion: '1.0.0', code: 999, msg: `meshpilot-cni crashed: ${String(err)}`, details: '' })}\n`);
    process.exitCode = 1;
  },
);
