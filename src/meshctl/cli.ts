/**
 * The meshctl program: one commander tree with istioctl's shared flags. Commands write through the
 * injected CliIO and end with CliExit/UsageError, so tests run them in-process.
 */
import { Command, CommanderError } from 'commander';
import { registerAnalyze } from './analyze/command.js';
import { renderInstall } from '../install/index.js';
import { registerInstall, type InstallRenderer } from './install.js';
import { CliExit, EXIT, UsageError, type CliIO } from './io.js';
import { registerKubeInject } from './kube-inject.js';
import { registerManifest } from './manifest.js';
import { registerPreview } from './preview.js';
import { registerProxyCommands } from './proxy/index.js';
import { registerValidate } from './validate.js';
import { registerWaypoint } from './waypoint/command.js';
import { registerZtunnelConfig } from './ztunnel/command.js';
import { registerVersion } from './version.js';
import { ISTIO_SYSTEM_NAMESPACE } from '../config/constants.js';

export type { CliIO } from './io.js';

export interface ProgramOptions {
  /** Register `proxy-status`/`proxy-config` (default true); tests of the other commands may leave them out. */
  readonly proxyCommands?: boolean;
  /** What install/upgrade/verify-install render (default: the charts, src/install/render.ts); tests may hand-build objects. */
  readonly installRenderer?: InstallRenderer;
}

export function createProgram(io: CliIO, opts: ProgramOptions = {}): Command {
  const program = new Command('meshctl')
    .description("meshctl: the meshpilot command line, with istioctl's verbs, flags, output and exit codes")
    // Shown in the help; runCli turns it into `version` (istioctl's output, not a bare number).
    .option('--version', 'print the client version (as meshctl version)')
    .option('-n, --namespace <ns>', 'namespace for objects that name none, and the namespace to analyze')
    .option('-i, --istioNamespace <ns>', 'Istio system (root) namespace', ISTIO_SYSTEM_NAMESPACE)
    .option('-k, --kubeconfig <path>', 'kubeconfig file (for the Kubernetes source, when available)')
    .option('--context <name>', 'kubeconfig context')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride()
    .configureOutput({
      writeOut: (s) => io.stdout.write(s),
      writeErr: (s) => io.stderr.write(s),
      outputError: (s, write) => write(s),
    });
  registerAnalyze(program, io);
  registerValidate(program, io);
  registerKubeInject(program, io);
  registerPreview(program, io);
  registerVersion(program, io);
  registerInstall(program, io, opts.installRenderer ?? renderInstall);
  registerManifest(program, io);
  if (opts.proxyCommands !== false) registerProxyCommands(program, io);
  registerZtunnelConfig(program, io);
  registerWaypoint(program, io);
  // Subcommands inherit the output wiring and exit override.
  const inherit = (cmd: Command): void => {
    for (const c of cmd.commands) {
      c.exitOverride().configureOutput(program.configureOutput());
      inherit(c);
    }
  };
  inherit(program);
  return program;
}

/** Runs meshctl with `argv` (without node and script) and returns the exit code. */
export async function runCli(argv: readonly string[], io: CliIO, opts: ProgramOptions = {}): Promise<number> {
  const program = createProgram(io, opts);
  // As istioctl: no arguments prints the help and succeeds.
  if (argv.length === 0) {
    io.stdout.write(program.helpInformation());
    return EXIT.OK;
  }
  // `--version` on the root is `version` with its flags (-s, -o), as an npm bin is expected to answer it.
  const args = argv[0] === '--version' ? ['version', ...argv.slice(1)] : [...argv];
  const first = args[0] ?? '';
  if (!first.startsWith('-') && !program.commands.some((c) => c.name() === first || c.aliases().includes(first)) && first !== 'help') {
    // commander's own message names the command but not the choices; istioctl lists them in its help.
    const names = program.commands.map((c) => c.name()).join(', ');
    io.stderr.write(`Error: unknown command "${first}" for "meshctl" (commands: ${names})\nRun 'meshctl --help' for usage.\n`);
    return EXIT.USAGE;
  }
  try {
    await program.parseAsync(args, { from: 'user' });
    return EXIT.OK;
  } catch (err) {
    if (err instanceof CliExit) return err.exitCode;
    if (err instanceof UsageError) {
      io.stderr.write(`Error: ${err.message}\n`);
      return EXIT.USAGE;
    }
    if (err instanceof CommanderError) {
      // --help and --version end "successfully"; everything else commander rejects is bad usage.
      return err.exitCode === 0 ? EXIT.OK : EXIT.USAGE;
    }
    io.stderr.write(`Error: ${err instanceof Error ? err.message : String(err)}\n`);
    return EXIT.FAILURE;
  }
}
