import { parseGoDuration } from '../util/duration.js';
import { errorMessage, MeshError } from '../util/errors.js';
import type { BackendKind } from './backend.js';
import { commandRunner, type Exec } from './exec.js';
import { buildCaptureRules } from './iptables/builder.js';
import { ISTIO_IPTABLES_DEFAULTS, resolveCaptureConfig, type CaptureInput } from './iptables/config.js';
import { IPTABLES_USAGE, parseIptablesFlags, type ParsedFlags } from './iptables/flags.js';
import type { RuleSet } from './iptables/rules.js';
import { renderRuleSet } from './iptables/restore.js';
import { parsePort } from './iptables/values.js';
import { ipv6Enabled, lookupUid, podAddresses, readResolvConf, type PodAddress } from './probe.js';
import { applyCapture, formatReport, removeCapture } from './runner.js';
import {
  DEFAULT_PROBE_PORT,
  DEFAULT_PROBE_TIMEOUT_MS,
  VALIDATION_EXIT_CODE,
  VALIDATION_FAILED_MESSAGE,
  validateRedirect,
  type ValidationOptions,
} from './validation.js';
import { PROXY_USER } from '../config/constants.js';

/**
 * `meshpilot iptables` (alias `meshpilot istio-iptables`): the istio-init container's command
 * (istio-iptables' role), and with --run-validation the istio-validation container's check in CNI
 * mode. Exit codes: 0 done, 64 bad flags or config (nothing was changed), 1 applying failed
 * (rolled back), 126 validation failed (Istio's code: the pod's traffic is not captured).
 */

/** Istio's injection template always passes `-d 15090,15021,15020`; we make it the default. */
export const DEFAULT_INBOUND_PORTS_EXCLUDE = '15090,15021,15020';

export interface IptablesCommandDeps {
  readonly stdout?: (s: string) => void;
  readonly stderr?: (s: string) => void;
  /** Executor override (tests); default: real commands, through nsenter with --network-namespace. */
  readonly exec?: Exec;
  readonly addresses?: () => Promise<readonly PodAddress[]>;
  readonly resolvConf?: () => Promise<string[]>;
}

export async function runIptablesCommand(argv: string[], env: NodeJS.ProcessEnv, deps: IptablesCommandDeps = {}): Promise<number> {
  const out = deps.stdout ?? ((s: string) => void process.stdout.write(s));
  const err = deps.stderr ?? ((s: string) => void process.stderr.write(s));
  let parsed;
  try {
    parsed = parseIptablesFlags(argv, env);
  } catch (e) {
    err(`meshpilot iptables: ${errorMessage(e)}\n${IPTABLES_USAGE}\n`);
    return 64;
  }
  if (parsed.help) {
    out(`${IPTABLES_USAGE}\n`);
    return 0;
  }
  const s = parsed.settings;
  const force = s.forceIptablesBinary ?? '';
  if (force !== '' && force !== 'legacy' && force !== 'nft') {
    err(`meshpilot iptables: invalid --force-iptables-binary / FORCE_IPTABLES_BINARY value "${force}": must be legacy or nft\n`);
    return 64;
  }
  const netns = s.networkNamespace === undefined || s.networkNamespace === '' ? undefined : s.networkNamespace;
  const exec = deps.exec ?? commandRunner(netns === undefined ? {} : { netns });

  let rs: RuleSet;
  let probe: ProbeSettings | undefined;
  let ports: Pick<ValidationOptions, 'proxyPort' | 'inboundCapturePort'>;
  let addresses: readonly PodAddress[];
  try {
    if (s.runValidation === true) probe = probeSettings(s.probePort, s.probeTimeout);
    const input: CaptureInput = { ...ISTIO_IPTABLES_DEFAULTS, inboundPortsExclude: DEFAULT_INBOUND_PORTS_EXCLUDE, ...parsed.input };
    if (parsed.input.proxyUid === undefined) input.proxyUid = (await lookupUid(env.ENVOY_USER ?? PROXY_USER)) ?? '1337';
    addresses = await (deps.addresses ?? (() => podAddresses(netns === undefined && !deps.exec ? undefined : exec)))();
    input.enableIPv6 = ipv6Enabled(addresses, s.dualStack === true);
    if (input.redirectDns && !input.captureAllDns) {
      input.dnsServers = await (deps.resolvConf ?? (() => readResolvConf()))();
      if (input.dnsServers.length === 0)
        err('meshpilot iptables: --redirect-dns without --capture-all-dns and no resolv.conf name servers: DNS is not captured\n');
    }
    const config = resolveCaptureConfig(input, parsed.labels);
    rs = buildCaptureRules(config);
    ports = { proxyPort: config.proxyPort, inboundCapturePort: config.inboundCapturePort };
  } catch (e) {
    err(`meshpilot iptables: ${errorMessage(e)}\nnothing was changed\n`);
    return e instanceof MeshError && e.code === 'INVALID_ARGUMENT' ? 64 : 1;
  }

  const applied = await applyStep(rs, s, { exec, force, netns, out, err });
  if (applied !== 0 || !probe) return applied;
  // Istio's HostIP: the first usable address; the kernel lists IPv4 first, so IPv6 only for an IPv6-only pod.
  const outcome = await validateRedirect({ ...probe, ...ports, ipv6: ipv6Enabled(addresses, false) });
  if (outcome.ok) {
    out(`meshpilot iptables: validation passed: a connection to ${outcome.probe} was redirected to ${outcome.redirectedTo}\n`);
    return 0;
  }
  err(`meshpilot iptables: ${VALIDATION_FAILED_MESSAGE}\n${outcome.reason}\n`);
  return VALIDATION_EXIT_CODE;
}

interface StepContext {
  readonly exec: Exec;
  readonly force: string;
  readonly netns: string | undefined;
  readonly out: (s: string) => void;
  readonly err: (s: string) => void;
}

/** Applies (or cleans up, prints, skips) the rule set; the exit code. */
async function applyStep(rs: RuleSet, s: ParsedFlags['settings'], c: StepContext): Promise<number> {
  if (s.skipRuleApply === true) {
    c.out('meshpilot iptables: --skip-rule-apply: nothing applied\n');
    return 0;
  }
  if (s.dryRun === true) {
    c.out(renderRuleSet(rs));
    return 0;
  }
  const opts = c.force === '' ? { exec: c.exec } : { exec: c.exec, force: c.force as BackendKind };
  try {
    const report = s.cleanupOnly === true ? await removeCapture(rs, opts) : await applyCapture(rs, opts);
    c.out(
      `meshpilot iptables: ${report.action === 'apply' ? 'applied' : 'cleaned up'}${c.netns ? ` in ${c.netns}` : ''}\n${formatReport(report)}\n`,
    );
    return 0;
  } catch (e) {
    c.err(`meshpilot iptables: ${errorMessage(e)}\n`);
    return 1;
  }
}

type ProbeSettings = Pick<ValidationOptions, 'probePort' | 'timeoutMs'>;

/** --iptables-probe-port / --probe-timeout, validated before anything is applied. */
function probeSettings(port: string | undefined, timeout: string | undefined): ProbeSettings {
  let probePort = DEFAULT_PROBE_PORT;
  if (port !== undefined) {
    const p = parsePort(port);
    if (!p.ok) throw new MeshError('INVALID_ARGUMENT', `invalid --iptables-probe-port / IPTABLES_PROBE_PORT: ${p.reason}`);
    probePort = p.value;
  }
  if (timeout === undefined) return { probePort, timeoutMs: DEFAULT_PROBE_TIMEOUT_MS };
  // pflag's DurationVar: Go's time.ParseDuration.
  const nanos = parseGoDuration(timeout);
  if (nanos === undefined || nanos <= 0n)
    throw new MeshError(
      'INVALID_ARGUMENT',
      `invalid --probe-timeout / PROBE_TIMEOUT: "${timeout}" is not a positive duration (e.g. 5s, 500ms)`,
    );
  const timeoutMs = Math.max(1, Number(nanos / 1_000_000n));
  return { probePort, timeoutMs };
}
