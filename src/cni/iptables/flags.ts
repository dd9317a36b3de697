import { MeshError } from '../../util/errors.js';
import { parseBoolOption, type CaptureInput, type CaptureOption } from './config.js';

/**
 * istio-iptables' command line (tools/istio-iptables/pkg/cmd/root.go): pflag syntax, and for
 * most flags an env var named after the long flag (upper case, '-' → '_'), set before the
 * flags are parsed so a flag wins. A few flags read a second, older env var, which wins over the
 * first (Istio's flag.AdditionalEnv runs after flag.BindEnv).
 */

interface FlagSpec {
  readonly long: string;
  readonly short?: string;
  readonly kind: 'string' | 'bool';
  /** Where the value goes: a capture option or a command setting. */
  readonly target: CaptureOption | CommandSetting | 'ignored';
  /** false: the flag has no env var (Istio binds -p without one). */
  readonly env?: false;
  /** Older names read after the flag's own env var, so they win (Istio's flag.AdditionalEnv). */
  readonly extraEnv?: readonly string[];
  /** A name read only when the flag's own env var is unset. */
  readonly fallbackEnv?: string;
}

export type CommandSetting =
  | 'dryRun'
  | 'cleanupOnly'
  | 'networkNamespace'
  | 'forceIptablesBinary'
  | 'dualStack'
  | 'skipRuleApply'
  | 'runValidation'
  | 'probePort'
  | 'probeTimeout';

type BoolSetting = 'dryRun' | 'cleanupOnly' | 'dualStack' | 'skipRuleApply' | 'runValidation';

const FLAGS: readonly FlagSpec[] = [
  { long: 'envoy-port', short: 'p', kind: 'string', target: 'proxyPort', env: false },
  { long: 'inbound-capture-port', short: 'z', kind: 'string', target: 'inboundCapturePort' },
  { long: 'inbound-tunnel-port', short: 'e', kind: 'string', target: 'inboundTunnelPort' },
  { long: 'proxy-uid', short: 'u', kind: 'string', target: 'proxyUid' },
  { long: 'proxy-gid', short: 'g', kind: 'string', target: 'proxyGid' },
  // Istio also registers INBOUND_INTERCEPTION_MODE for this (constants.go): honoured as a fallback.
  {
    long: 'istio-inbound-interception-mode',
    short: 'm',
    kind: 'string',
    target: 'interceptionMode',
    fallbackEnv: 'INBOUND_INTERCEPTION_MODE',
  },
  { long: 'istio-inbound-tproxy-mark', short: 't', kind: 'string', target: 'tproxyMark' },
  { long: 'istio-inbound-tproxy-route-table', short: 'r', kind: 'string', target: 'tproxyRouteTable' },
  { long: 'istio-inbound-ports', short: 'b', kind: 'string', target: 'inboundPorts' },
  { long: 'istio-local-exclude-ports', short: 'd', kind: 'string', target: 'inboundPortsExclude' },
  { long: 'istio-exclude-interfaces', short: 'c', kind: 'string', target: 'excludeInterfaces' },
  { long: 'istio-service-cidr', short: 'i', kind: 'string', target: 'outboundIpRanges' },
  { long: 'istio-service-exclude-cidr', short: 'x', kind: 'string', target: 'outboundIpRangesExclude' },
  { long: 'istio-outbound-ports', short: 'q', kind: 'string', target: 'outboundPorts' },
  { long: 'istio-local-outbound-ports-exclude', short: 'o', kind: 'string', target: 'outboundPortsExclude' },
  { long: 'kube-virt-interfaces', short: 'k', kind: 'string', target: 'rerouteVirtualInterfaces' },
  { long: 'dry-run', short: 'n', kind: 'bool', target: 'dryRun' },
  { long: 'redirect-dns', kind: 'bool', target: 'redirectDns', extraEnv: ['ISTIO_META_DNS_CAPTURE'] },
  { long: 'capture-all-dns', kind: 'bool', target: 'captureAllDns' },
  { long: 'drop-invalid', kind: 'bool', target: 'dropInvalid', extraEnv: ['INVALID_DROP'] },
  { long: 'dual-stack', kind: 'bool', target: 'dualStack', extraEnv: ['ISTIO_DUAL_STACK'] },
  { long: 'network-namespace', kind: 'string', target: 'networkNamespace' },
  { long: 'cleanup-only', kind: 'bool', target: 'cleanupOnly' },
  { long: 'force-iptables-binary', kind: 'string', target: 'forceIptablesBinary' },
  { long: 'skip-rule-apply', kind: 'bool', target: 'skipRuleApply' },
  { long: 'run-validation', kind: 'bool', target: 'runValidation' },
  { long: 'iptables-probe-port', kind: 'string', target: 'probePort' },
  { long: 'probe-timeout', kind: 'string', target: 'probeTimeout' },
  // Always in effect here (every run replaces what an earlier one left), or about Istio's own
  // logging: accepted so Istio's command lines work unchanged.
  { long: 'reconcile', kind: 'bool', target: 'ignored' },
  { long: 'force-apply', kind: 'bool', target: 'ignored' },
  { long: 'cni-mode', kind: 'bool', target: 'ignored' },
  { long: 'iptables-trace-logging', kind: 'bool', target: 'ignored', env: false },
  ...[
    'log_output_level',
    'log_stacktrace_level',
    'log_target',
    'log_caller',
    'log_rotate',
    'log_rotate_max_age',
    'log_rotate_max_backups',
    'log_rotate_max_size',
  ].map((long): FlagSpec => ({ long, kind: 'string', target: 'ignored', env: false })),
  { long: 'log_as_json', kind: 'bool', target: 'ignored', env: false },
];

/** Accepted by istio-iptables but not implemented here: a clear error instead of silently differing. */
const UNSUPPORTED = new Set(['native-nftables']);

/** Env-only options (constants.go's env.Register). */
const ENV_ONLY: ReadonlyArray<[string, CaptureOption]> = [
  ['ISTIO_OUTBOUND_IPV4_LOOPBACK_CIDR', 'hostIPv4LoopbackCidr'],
  ['ISTIO_OUTBOUND_OWNER_GROUPS', 'ownerGroupsInclude'],
  ['ISTIO_OUTBOUND_OWNER_GROUPS_EXCLUDE', 'ownerGroupsExclude'],
];

export function envName(long: string): string {
  return long.toUpperCase().replaceAll('-', '_');
}

export interface ParsedFlags {
  /** Only the capture options given by a flag or env var. */
  readonly input: Partial<CaptureInput>;
  readonly settings: Partial<Record<Exclude<CommandSetting, BoolSetting>, string>> & Partial<Record<BoolSetting, boolean>>;
  /** For errors: how the source of each option's value is named (the flag, or the env var). */
  readonly labels: Partial<Record<CaptureOption, string>>;
  readonly help: boolean;
}

export const IPTABLES_USAGE = `usage: meshpilot iptables [flags]   (or meshpilot istio-iptables, as injected init containers call it;
                                   istio-iptables' flags and env; a flag wins over its env var)
  -p, --envoy-port 15001                        outbound capture port
  -z, --inbound-capture-port 15006              INBOUND_CAPTURE_PORT
  -e, --inbound-tunnel-port 15008               INBOUND_TUNNEL_PORT
  -u, --proxy-uid UIDS                          PROXY_UID (default: ENVOY_USER's uid, else 1337)
  -g, --proxy-gid GIDS                          PROXY_GID (default: the uid list)
  -m, --istio-inbound-interception-mode MODE    ISTIO_INBOUND_INTERCEPTION_MODE / INBOUND_INTERCEPTION_MODE: REDIRECT | TPROXY
  -t, --istio-inbound-tproxy-mark 1337          ISTIO_INBOUND_TPROXY_MARK
  -r, --istio-inbound-tproxy-route-table 133    ISTIO_INBOUND_TPROXY_ROUTE_TABLE
  -b, --istio-inbound-ports PORTS|*             ISTIO_INBOUND_PORTS ('' = no inbound capture)
  -d, --istio-local-exclude-ports PORTS         ISTIO_LOCAL_EXCLUDE_PORTS (default 15090,15021,15020)
  -c, --istio-exclude-interfaces NICS           ISTIO_EXCLUDE_INTERFACES
  -i, --istio-service-cidr CIDRS|*              ISTIO_SERVICE_CIDR ('' = no outbound capture)
  -x, --istio-service-exclude-cidr CIDRS        ISTIO_SERVICE_EXCLUDE_CIDR
  -q, --istio-outbound-ports PORTS              ISTIO_OUTBOUND_PORTS
  -o, --istio-local-outbound-ports-exclude PORTS ISTIO_LOCAL_OUTBOUND_PORTS_EXCLUDE
  -k, --kube-virt-interfaces NICS               KUBE_VIRT_INTERFACES
  --redirect-dns                                REDIRECT_DNS / ISTIO_META_DNS_CAPTURE
  --capture-all-dns                             CAPTURE_ALL_DNS
  --drop-invalid                                DROP_INVALID / INVALID_DROP
  --dual-stack                                  DUAL_STACK / ISTIO_DUAL_STACK
  -n, --dry-run                                 DRY_RUN: print the iptables-restore input, change nothing
  --cleanup-only                                CLEANUP_ONLY: remove the ISTIO_* chains and their jumps
  --network-namespace PATH|NAME                 NETWORK_NAMESPACE (default: this process's)
  --force-iptables-binary legacy|nft            FORCE_IPTABLES_BINARY
  --skip-rule-apply                             SKIP_RULE_APPLY: apply nothing (istio-validation passes it)
  --run-validation                              RUN_VALIDATION: then check that 127.0.0.6:<probe port> is redirected
                                                to 127.0.0.1:<-p or -z>; exit 126 if not (CNI mode's istio-validation)
  --iptables-probe-port 15002                   IPTABLES_PROBE_PORT
  --probe-timeout 5s                            PROBE_TIMEOUT
env only: ISTIO_OUTBOUND_IPV4_LOOPBACK_CIDR (127.0.0.1/32), ISTIO_OUTBOUND_OWNER_GROUPS (*),
          ISTIO_OUTBOUND_OWNER_GROUPS_EXCLUDE, ENVOY_USER (istio-proxy)`;

export function parseIptablesFlags(argv: readonly string[], env: NodeJS.ProcessEnv): ParsedFlags {
  const input: Record<string, unknown> = {};
  const settings: Record<string, unknown> = {};
  const labels: Partial<Record<CaptureOption, string>> = {};
  const set = (spec: FlagSpec, value: string, label: string): void => {
    if (spec.target === 'ignored') return;
    const v = spec.kind === 'bool' ? parseBoolOption(label, value) : value;
    if (spec.target in SETTING_KEYS) settings[spec.target] = v;
    else {
      input[spec.target] = v;
      labels[spec.target as CaptureOption] = label;
    }
  };
  for (const spec of FLAGS) {
    if (spec.env === false) continue;
    const own = envName(spec.long);
    if (env[own] !== undefined) set(spec, env[own], `${own} (env)`);
    else if (spec.fallbackEnv !== undefined && env[spec.fallbackEnv] !== undefined) {
      set(spec, env[spec.fallbackEnv] ?? '', `${spec.fallbackEnv} (env)`);
    }
    for (const extra of spec.extraEnv ?? []) {
      const v = env[extra];
      if (v !== undefined) set(spec, v, `${extra} (env)`);
    }
  }
  for (const [name, option] of ENV_ONLY) {
    const v = env[name];
    if (v !== undefined) {
      input[option] = v;
      labels[option] = `${name} (env)`;
    }
  }

  let help = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '--help' || arg === '-h') {
      help = true;
      continue;
    }
    let spec: FlagSpec | undefined;
    let inline: string | undefined;
    let shown: string;
    if (arg.startsWith('--')) {
      const eq = arg.indexOf('=');
      const name = eq < 0 ? arg.slice(2) : arg.slice(2, eq);
      if (eq >= 0) inline = arg.slice(eq + 1);
      if (UNSUPPORTED.has(name)) throw new MeshError('INVALID_ARGUMENT', `--${name} is not supported by meshpilot iptables`);
      spec = FLAGS.find((f) => f.long === name);
      shown = `--${name}`;
    } else if (arg.startsWith('-') && arg.length >= 2) {
      spec = FLAGS.find((f) => f.short === arg[1]);
      const rest = arg.slice(2);
      if (rest !== '') inline = rest.startsWith('=') ? rest.slice(1) : rest;
      shown = `-${arg[1]}`;
    } else {
      throw new MeshError('INVALID_ARGUMENT', `unexpected argument "${arg}" (meshpilot iptables takes flags only)`);
    }
    if (!spec) throw new MeshError('INVALID_ARGUMENT', `unknown flag ${arg}`);
    const label = spec.short ? `-${spec.short}/--${spec.long}` : `--${spec.long}`;
    if (spec.kind === 'bool') {
      set(spec, inline ?? 'true', label);
      continue;
    }
    if (inline === undefined) {
      if (i + 1 >= argv.length) throw new MeshError('INVALID_ARGUMENT', `flag ${shown} needs a value`);
      inline = argv[++i] ?? '';
    }
    set(spec, inline, label);
  }
  return { input: input as Partial<CaptureInput>, settings: settings as ParsedFlags['settings'], labels, help };
}

const SETTING_KEYS: Record<CommandSetting, true> = {
  dryRun: true,
  cleanupOnly: true,
  networkNamespace: true,
  forceIptablesBinary: true,
  dualStack: true,
  skipRuleApply: true,
  runValidation: true,
  probePort: true,
  probeTimeout: true,
};
