/**
 * The `meshpilot` command line, shaped as istioctl's (cobra): every command and subcommand answers
 * --help on stdout with exit 0, `version`/`--version` print the client version line, and a wrong
 * command or flag is one line naming it, with where to find the usage, and exit 64. The long-running
 * commands get their parsed options through `Runners`, so tests drive everything else in-process.
 *
 * Subcommand modules load on demand: an init container's `meshpilot istio-iptables` must not pay for
 * loading the control plane and the agent.
 */
import type { AgentOptions } from '../agent/index.js';
import type { DiscoveryOptions } from '../bootstrap/options.js';
import { errorMessage } from '../util/errors.js';

export interface MeshpilotIO {
  readonly stdout: (s: string) => void;
  readonly stderr: (s: string) => void;
  readonly env: NodeJS.ProcessEnv;
}

/** What the commands that do real work run with their parsed flags (the bin: until a signal). */
export interface Runners {
  discovery(opts: DiscoveryOptions): Promise<number>;
  agent(opts: AgentOptions): Promise<number>;
  /** `iptables`/`istio-iptables` with its own flags (it parses them: env fallbacks, istio-iptables' spellings). */
  iptables(args: string[]): Promise<number>;
  /** `cni install|uninstall` with the flags after the subcommand. */
  cni(args: string[]): Promise<number>;
}

/** sysexits' EX_USAGE, as meshctl: bad command line. */
export const EXIT_USAGE = 64;

/** The commands, in the order the help lists them. */
export const COMMANDS: readonly { name: string; about: string }[] = [
  { name: 'discovery', about: "Run the control plane (istiod's pilot-discovery): xDS, CA, webhooks, debug and monitoring ports" },
  { name: 'agent', about: "Run the node agent (pilot-agent's role): certificates and xDS for Envoy or proxyless gRPC" },
  { name: 'proxy', about: "pilot-agent's `proxy sidecar|router` form, as Istio's injected istio-proxy container runs it" },
  { name: 'iptables', about: 'Set up traffic capture in the pod (istio-iptables; also spelled istio-iptables)' },
  { name: 'cni', about: "Install or uninstall the meshpilot CNI plugin on a node (install-cni's role)" },
  { name: 'demo', about: 'Run the bundled example with live workloads and an Envoy sidecar client: see the traffic split, edit it' },
  { name: 'version', about: 'Print the meshpilot version' },
];
const ALIASES: Readonly<Record<string, string>> = { 'istio-iptables': 'iptables' };

export const DISCOVERY_USAGE = `usage: meshpilot discovery [--configDir DIR] [--kubeconfig FILE (in a Pod: in-cluster)] [--registries Kubernetes]
                           [--clusterID Kubernetes (CLUSTER_ID)] [--meshConfig FILE (else ConfigMap istio in POD_NAMESPACE)]
                           [--meshNetworks FILE (else key meshNetworks of that ConfigMap)]
                           [--grpcAddr 127.0.0.1:15010] [--httpAddr 127.0.0.1:8080]
                           [--monitoringAddr 127.0.0.1:15014] [--domain cluster.local] [--logLevel info]
                           [--log_as_json (JSON lines; default: istiod's text format)]
                           [--maxRequestsPerSecond N] [--maxConcurrentStreams 100000] [--maxRecvMsgSize 4194304]
                           [--keepaliveInterval 30s] [--keepaliveTimeout 10s]
                           [--keepaliveMaxServerConnectionAge D (infinite; Helm sets 30m)]
                           [--keepaliveMaxServerConnectionAgeGrace 10s] [--shutdownDuration 10s]
                           [--secureGRPCAddr 127.0.0.1:15012 ('' = no CA, no TLS xDS)] [--caDir DIR (<configDir>/.meshpilot/ca)]
                           [--caCertsDir ./etc/cacerts (ROOT_CA_DIR)] [--caKeyType ECDSA|RSA]
                           [--workloadCertTtl 24h] [--maxWorkloadCertTtl 2160h]
                           [--httpsAddr 127.0.0.1:15017 (admission webhooks; '' = off; needs the CA)]
env: PILOT_DEBOUNCE_AFTER (100ms), PILOT_DEBOUNCE_MAX (10s), PILOT_PUSH_THROTTLE (min(15+5*cores,100)),
     PILOT_ENABLE_EDS_DEBOUNCE (true), PILOT_XDS_CACHE_SIZE (60000),
     PILOT_MAX_REQUESTS_PER_SECOND (new streams/s; 0 = min(15+5*cores,100)),
     ISTIO_GPRC_MAXSTREAMS (100000), ISTIO_GPRC_MAXRECVMSGSIZE (4194304),
     JWT_RULE ({"issuer","audiences":[],"jwks_uri"|"jwks"}), CA_TRUSTED_NODE_ACCOUNTS, POD_NAMESPACE, ISTIOD_CUSTOM_HOST,
     REVISION (default), INJECTION_WEBHOOK_CONFIG_NAME, VALIDATION_WEBHOOK_CONFIG_NAME,
     PILOT_REMOTE_CLUSTER_TIMEOUT (30s: how long start-up waits for a remote cluster to sync)
flags win over env; durations as istiod: 500ms, 10s, 30m, 1m30s`;

export const PROXY_USAGE = `usage: meshpilot proxy [sidecar|router] [--domain NS.svc.cluster.local] [--log_output_level default:info]
       (pilot-agent's form, as Istio's templates run istio-proxy: meshpilot agent with those settings)`;

export const VERSION_USAGE = `usage: meshpilot version [-s|--short] [-o|--output json|yaml]
       (also meshpilot --version)`;

/** The root help, as cobra lays it out: the commands, then where each one's flags are. */
export function rootHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length)) + 2;
  return [
    "meshpilot: a service-mesh control plane that speaks Istio's config API and Envoy's xDS",
    '',
    'Usage:',
    '  meshpilot [command]',
    '',
    'Available Commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}${c.about}`),
    '',
    'Flags:',
    '  -h, --help      help for meshpilot',
    '      --version   print the version',
    '',
    'Use "meshpilot [command] --help" for more information about a command.',
    '',
  ].join('\n');
}

/** A command's usage text (its flags and env), loaded with its module. */
async function commandUsage(command: string): Promise<string> {
  switch (command) {
    case 'discovery':
      return DISCOVERY_USAGE;
    case 'agent':
      return (await import('../agent/index.js')).AGENT_USAGE;
    case 'proxy':
      return PROXY_USAGE;
    case 'iptables':
      return (await import('../cni/iptables/flags.js')).IPTABLES_USAGE;
    case 'cni':
      return `${(await import('../cni/install/command.js')).CNI_INSTALL_USAGE}\n       meshpilot cni uninstall [same flags]`;
    case 'version':
      return VERSION_USAGE;
    case 'demo':
      return (await import('../demo/run.js')).DEMO_USAGE;
    default:
      throw new Error(`no usage for ${command}`);
  }
}

/** --help or -h among the arguments (before a `--`, after which everything is an operand). */
function wantsHelp(args: readonly string[]): boolean {
  const end = args.indexOf('--');
  return (end < 0 ? args : args.slice(0, end)).some((a) => a === '--help' || a === '-h');
}

/** node:util parseArgs' messages in cobra's words, so an unknown flag reads as `unknown flag: --x`. */
export function flagError(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  const message = errorMessage(err);
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const flag = /'([^']+)'/.exec(message)?.[1];
    if (flag !== undefined) return `unknown flag: ${flag}`;
  }
  return message;
}

/** One line saying what was wrong, one saying where the usage is; exit 64. */
function usageFailure(io: MeshpilotIO, command: string, message: string): number {
  const where = command === '' ? 'meshpilot' : `meshpilot ${command}`;
  io.stderr(`Error: ${command === '' ? '' : `${where}: `}${message}\nRun '${where} --help' for usage.\n`);
  return EXIT_USAGE;
}

function unknownCommand(io: MeshpilotIO, command: string): number {
  const names = [...COMMANDS.map((c) => c.name), ...Object.keys(ALIASES)].join(', ');
  return usageFailure(io, '', `unknown command "${command}" for "meshpilot" (commands: ${names})`);
}

/** `meshpilot version`: istioctl's client part of `version` (this binary has no remote side). */
async function runVersion(args: readonly string[], io: MeshpilotIO): Promise<number> {
  const { parseArgs } = await import('node:util');
  let values;
  try {
    ({ values } = parseArgs({
      args: [...args],
      strict: true,
      allowPositionals: false,
      options: { short: { type: 'boolean', short: 's' }, output: { type: 'string', short: 'o' } },
    }));
  } catch (err) {
    return usageFailure(io, 'version', flagError(err));
  }
  const output = values.output;
  if (output !== undefined && output !== 'json' && output !== 'yaml')
    return usageFailure(io, 'version', `--output must be json or yaml, not "${output}"`);
  const [{ renderClientVersion }, { packageVersion }] = await Promise.all([import('../meshctl/version.js'), import('../util/version.js')]);
  io.stdout(renderClientVersion(packageVersion(), { ...(output !== undefined ? { output } : {}), short: values.short === true }));
  return 0;
}

/** Runs `meshpilot` with `argv` (without node and script); the exit code. */
export async function runMeshpilot(argv: readonly string[], io: MeshpilotIO, run: Runners): Promise<number> {
  const [first, ...rest] = argv;
  // As istioctl: no arguments prints the help and succeeds.
  if (first === undefined || first === '--help' || first === '-h') {
    io.stdout(rootHelp());
    return 0;
  }
  if (first === 'help') {
    // `meshpilot help <command>`, cobra's spelling of `<command> --help`.
    const about = rest[0] === undefined ? undefined : (ALIASES[rest[0]] ?? rest[0]);
    if (about === undefined) io.stdout(rootHelp());
    else if (COMMANDS.some((c) => c.name === about)) io.stdout(`${await commandUsage(about)}\n`);
    else return unknownCommand(io, rest[0] ?? '');
    return 0;
  }
  if (first === '--version') return runVersion(rest, io);
  if (first.startsWith('-')) return usageFailure(io, '', `unknown flag: ${first.split('=')[0] ?? first}`);
  const command = ALIASES[first] ?? first;
  if (!COMMANDS.some((c) => c.name === command)) return unknownCommand(io, first);
  if (wantsHelp(rest)) {
    io.stdout(`${await commandUsage(command)}\n`);
    return 0;
  }
  switch (command) {
    case 'version':
      return runVersion(rest, io);
    case 'discovery': {
      const { parseDiscoveryOptions } = await import('../bootstrap/options.js');
      let opts;
      try {
        opts = parseDiscoveryOptions(rest, io.env);
      } catch (err) {
        return usageFailure(io, 'discovery', flagError(err));
      }
      return run.discovery(opts);
    }
    case 'agent':
    case 'proxy': {
      let args = rest;
      if (command === 'proxy') {
        try {
          args = (await import('./pilot-agent-args.js')).agentArgsFromPilotAgentProxy(rest);
        } catch (err) {
          return usageFailure(io, 'proxy', errorMessage(err));
        }
      }
      const { parseAgentOptions } = await import('../agent/index.js');
      let opts;
      try {
        opts = parseAgentOptions(args, io.env);
      } catch (err) {
        return usageFailure(io, command, flagError(err));
      }
      return run.agent(opts);
    }
    case 'iptables':
      return run.iptables(rest);
    case 'demo': {
      const { parseDemoOptions, runDemo } = await import('../demo/run.js');
      let opts;
      try {
        opts = parseDemoOptions(rest);
      } catch (err) {
        return usageFailure(io, 'demo', flagError(err));
      }
      return runDemo(opts, { out: io.stdout, err: io.stderr, isTTY: process.stdout.isTTY === true });
    }
    case 'cni': {
      const [sub = ''] = rest;
      if (sub !== 'install' && sub !== 'uninstall') {
        return sub === ''
          ? usageFailure(io, 'cni', 'a subcommand is required (install, uninstall)')
          : usageFailure(io, 'cni', `unknown command "${sub}" (commands: install, uninstall)`);
      }
      return run.cni(rest);
    }
    default:
      return unknownCommand(io, first);
  }
}
