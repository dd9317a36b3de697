import { errorMessage, MeshError } from '../util/errors.js';
import type { BackendKind } from './backend.js';
import { commandRunner, type Exec } from './exec.js';
import { buildCaptureRules } from './iptables/builder.js';
import { ISTIO_IPTABLES_DEFAULTS, resolveCaptureConfig, type CaptureInput } from './iptables/config.js';
import { IPTABLES_USAGE, parseIptablesFlags } from './iptables/flags.js';
import { renderRuleSet } from './iptables/restore.js';
import { ipv6Enabled, lookupUid, podAddresses, readResolvConf, type PodAddress } from './probe.js';
import { applyCapture, formatReport, removeCapture } from './runner.js';

/**
 * `meshpilot iptables`: the istio-init container's command (istio-iptables' role). Exit codes:
 * 0 done, 64 bad flags or config (nothing was changed), 1 applying failed (rolled back).
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

  let rs;
  try {
    const input: CaptureInput = { ...ISTIO_IPTABLES_DEFAULTS, inboundPortsExclude: DEFAULT_INBOUND_PORTS_EXCLUDE, ...parsed.input };
    if (parsed.input.proxyUid === undefined) input.proxyUid = (await lookupUid(env.ENVOY_USER ?? 'istio-proxy')) ?? '1337';
    const addresses = await (deps.addresses ?? (() => podAddresses(netns === undefined && !deps.exec ? undefined : exec)))();
    input.enableIPv6 = ipv6Enabled(addresses, s.dualStack === true);
    if (input.redirectDns && !input.captureAllDns) {
      input.dnsServers = await (deps.resolvConf ?? (() => readResolvConf()))();
      if (input.dnsServers.length === 0) err('meshpilot iptables: --redirect-dns without --capture-all-dns and no resolv.conf name servers: DNS is not captured\n');
    }
    rs = buildCaptureRules(resolveCaptureConfig(input, parsed.labels));
  } catch (e) {
    err(`meshpilot iptables: ${errorMessage(e)}\nnothing was changed\n`);
    return e instanceof MeshError && e.code === 'INVALID_ARGUMENT' ? 64 : 1;
  }

  if (s.skipRuleApply === true) {
    out('meshpilot iptables: --skip-rule-apply: nothing applied\n');
    return 0;
  }
  if (s.dryRun === true) {
    out(renderRuleSet(rs));
    return 0;
  }
  const opts = force === '' ? { exec } : { exec, force: force as BackendKind };
  try {
    const report = s.cleanupOnly === true ? await removeCapture(rs, opts) : await applyCapture(rs, opts);
    out(`meshpilot iptables: ${report.action === 'apply' ? 'applied' : 'cleaned up'}${netns ? ` in ${netns}` : ''}\n${formatReport(report)}\n`);
    return 0;
  } catch (e) {
    err(`meshpilot iptables: ${errorMessage(e)}\n`);
    return 1;
  }
}
