#!/usr/bin/env node
import { realpathSync } from 'node:fs';
import { dirname } from 'node:path';
import { text } from 'node:stream/consumers';
import { packageVersionFrom } from '../../util/version.js';
import { SUPPORTED_VERSIONS } from './errors.js';
import { runCniPlugin } from './plugin.js';

/** Set by the bundle (src/cni/install/bundle.ts): the copy in a node's CNI bin dir has no package.json near it. */
declare const MESHPILOT_CNI_VERSION: string | undefined;

/** What the plugin is, as the CNI skel's "about" (no import.meta: the bundle is CommonJS). */
function about(): string {
  const version =
    typeof MESHPILOT_CNI_VERSION === 'string' ? MESHPILOT_CNI_VERSION : packageVersionFrom(dirname(realpathSync(process.argv[1] ?? '.')));
  return `meshpilot-cni ${version}: meshpilot's CNI plugin (istio-cni's role), run by the container runtime with CNI_COMMAND set
CNI protocol versions supported: ${SUPPORTED_VERSIONS.join(', ')}
`;
}

/**
 * meshpilot-cni: the binary a container runtime executes (env + stdin in, result on stdout).
 * No top-level await: the bundle is CommonJS (an extensionless file outside a package runs as CJS).
 */
async function main(): Promise<number> {
  // As the CNI skel: without CNI_COMMAND a person ran it, not a runtime: say what it is and exit 0
  // (the skel writes that to stderr; asked with --help/--version it goes to stdout).
  if (!process.env.CNI_COMMAND) {
    const asked = process.argv.slice(2).some((a) => ['--help', '-h', '--version', 'version', 'help'].includes(a));
    (asked ? process.stdout : process.stderr).write(about());
    return 0;
  }
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
    process.stdout.write(
      `${JSON.stringify({ cniVersion: '1.0.0', code: 999, msg: `meshpilot-cni crashed: ${String(err)}`, details: '' })}\n`,
    );
    process.exitCode = 1;
  },
);
