/**
 * The meshctl program: one commander tree with istioctl's shared flags. Commands write through the
 * injected CliIO and end with CliExit/UsageError, so tests run them in-process.
 */
import { Command, CommanderError } from 'commander';
import type { InstallRenderer } from './install.js';
import { CliExit, EXIT, UsageError, type CliIO } from './io.js';
import { ISTIO_SYSTEM_NAMESPACE } from '../config/constants.js';

export type { CliIO } from './io.js';

export interface ProgramOptions {
  /** Register `proxy-status`/`proxy-config` (default true); tests of the other commands may leave them out. */
  readonly proxyCommands?: boolean;
  /** What install/upgrade/verify-install render (default: the charts, src/install/render.ts); tests may hand-build objects. */
  readonly installRenderer?: InstallRenderer;
}

type Register = (program: Command, io: CliIO, opts: ProgramOptions) => void;

/**
 * The commands, in help order, each with the names (and aliases) it registers and its module,
 * imported when needed: `meshctl analyze` in a CI loop then loads the analyzers only, not the
 * Kubernetes client, the chart renderer and the Envoy descriptors the other commands need.
 */
export const COMMANDS: readonly { readonly names: readonly string[]; readonly load: () => Promise<Register> }[] = [
  { names: ['analyze'], load: async () => (await import('./analyze/command.js')).registerAnalyze },
  { names: ['validate'], load: async () => (await import('./validate.js')).registerValidate },
  { names: ['kube-inject'], load: async () => (await import('./kube-inject.js')).registerKubeInject },
  {
    names: ['x', 'experimental'],
    load: async () => {
      const [{ registerPreview }, { registerWorkload }] = await Promise.all([import('./preview.js'), import('./workload/command.js')]);
      return (program, io) => {
        registerPreview(program, io);
        registerWorkload(program, io);
      };
    },
  },
  { names: ['version'], load: async () => (await import('./version.js')).registerVersion },
  {
    names: ['install', 'upgrade', 'uninstall', 'verify-install'],
    load: async () => {
      const { registerInstall } = await import('./install.js');
      const { renderInstall } = await import('../install/index.js');
      return (program, io, opts) => registerInstall(program, io, opts.installRenderer ?? renderInstall);
    },
  },
  { names: ['manifest'], load: async () => (await import('./manifest.js')).registerManifest },
  { names: ['create-remote-secret'], load: async () => (await import('./create-remote-secret.js')).registerCreateRemoteSecret },
  {
    names: ['proxy-status', 'ps', 'proxy-config', 'pc'],
    load: async () => {
      const { registerProxyCommands } = await import('./proxy/index.js');
      return (program, io, opts) => (opts.proxyCommands !== false ? registerProxyCommands(program, io) : undefined);
    },
  },
  { names: ['ztunnel-config', 'zc'], load: async () => (await import('./ztunnel/command.js')).registerZtunnelConfig },
  {
    names: ['waypoint'],
    load: async () => {
      const { registerWaypoint } = await import('./waypoint/command.js');
      return (program, io) => registerWaypoint(program, io);
    },
  },
];

/**
 * The program with every command, or with only the one named `only` (the command a run invokes:
 * the others' modules are not loaded).
 */
export async function createProgram(io: CliIO, opts: ProgramOptions = {}, only?: string): Promise<Command> {
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
  const wanted = COMMANDS.filter((c) => only === undefined || c.names.includes(only));
  for (const register of await Promise.all(wanted.map((c) => c.load()))) register(program, io, opts);
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
  // `--version` on the root is `version` with its flags (-s, -o), as an npm bin is expected to answer it.
  const args = argv[0] === '--version' ? ['version', ...argv.slice(1)] : [...argv];
  const first = args[0] ?? '';
  // A run of one command loads that command only; help, root flags and unknown names need them all.
  const program = await createProgram(io, opts, COMMANDS.some((c) => c.names.includes(first)) ? first : undefined);
  // As istioctl: no arguments prints the help and succeeds.
  if (argv.length === 0) {
    io.stdout.write(program.helpInformation());
    return EXIT.OK;
  }
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
