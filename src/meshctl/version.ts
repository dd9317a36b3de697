/** `meshctl version`: the client's version and, with --remote, the control plane's (from its monitoring port). */
import { Option, type Command } from 'commander';
import { stringify } from 'yaml';
import { packageVersion } from '../util/version.js';
import type { CliIO } from './io.js';

/** The client's version: the package's. */
export const clientVersion = packageVersion;

/** istioctl's client part of `version`: `client version: X`, X alone with --short, or `clientVersion` as JSON/YAML. */
export function renderClientVersion(client: string, opts: { output?: 'json' | 'yaml'; short?: boolean }): string {
  if (opts.output) {
    const doc = { clientVersion: { version: client } };
    return opts.output === 'json' ? `${JSON.stringify(doc, null, 2)}\n` : stringify(doc);
  }
  return opts.short ? `${client}\n` : `client version: ${client}\n`;
}

interface VersionOpts {
  output?: 'json' | 'yaml';
  short?: boolean;
  remote?: boolean;
  monitoringAddress: string;
}

/** GET http://ADDR/version with a short timeout; undefined when the server is not reachable. */
async function serverVersion(addr: string): Promise<string | undefined> {
  try {
    const res = await fetch(`http://${addr}/version`, { signal: AbortSignal.timeout(2000) });
    if (!res.ok) return undefined;
    return (await res.text()).trim();
  } catch {
    return undefined;
  }
}

export function registerVersion(program: Command, io: CliIO): void {
  program
    .command('version')
    .description('Print the meshctl version and, with --remote, the control plane version')
    .addOption(new Option('-o, --output <format>', 'output format').choices(['json', 'yaml']))
    .option('-s, --short', 'print only the version number')
    .option('-r, --remote', 'also ask the control plane for its version')
    .option('--monitoring-address <host:port>', 'control plane monitoring address for --remote', '127.0.0.1:15014')
    .action(async (_o: VersionOpts, cmd: Command) => {
      const opts = cmd.optsWithGlobals<VersionOpts>();
      const client = clientVersion();
      const server = opts.remote ? await serverVersion(opts.monitoringAddress) : undefined;
      if (opts.output) {
        const doc: Record<string, unknown> = { clientVersion: { version: client } };
        if (opts.remote) doc.meshVersion = server ? [{ Component: 'pilot', Info: { version: server } }] : [];
        io.stdout.write(opts.output === 'json' ? `${JSON.stringify(doc, null, 2)}\n` : stringify(doc));
        return;
      }
      if (opts.short && !opts.remote) {
        io.stdout.write(renderClientVersion(client, { short: true }));
        return;
      }
      io.stdout.write(renderClientVersion(client, {}));
      if (opts.remote) {
        if (server) io.stdout.write(`control plane version: ${server}\n`);
        else io.stderr.write(`control plane version: unavailable (no answer from http://${opts.monitoringAddress}/version)\n`);
      }
    });
}
