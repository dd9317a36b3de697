import { existsSync } from 'node:fs';
import { errorMessage, MeshError } from '../../util/errors.js';
import { captureConfigFromAnnotations } from '../annotations.js';
import { commandRunner, netnsPath, type Exec } from '../exec.js';
import { buildCaptureRules } from '../iptables/builder.js';
import type { RuleSet } from '../iptables/rules.js';
import { applyCapture, formatReport, removeCapture } from '../runner.js';
import { parseCniEnv, parsePluginConfig, type CniEnv, type PluginConfig } from './config.js';
import { decideForPod, namespaceExcluded, resultAddresses } from './decide.js';
import { CNI_VERSION, CniCode, CniError, formatCniError, SUPPORTED_VERSIONS } from './errors.js';
import { kubePodReader, type PodReader } from './pod.js';
import { missingRules, ownChainsPresent } from './verify.js';

/**
 * meshpilot-cni: a chained CNI plugin (spec 1.0.0) that programs the sidecar's traffic capture in
 * the pod's network namespace, as istio-cni does. ADD prints the primary plugin's result
 * unchanged; every failure is a CNI error on stdout with a non-zero exit, and ADD never lets a pod
 * that should be captured start without its rules.
 */

export interface PluginDeps {
  /** Default: the plugin config's kubernetes.kubeconfig. */
  readonly readPod?: (config: PluginConfig) => PodReader;
  /** Default: real commands through nsenter into the namespace. */
  readonly exec?: (netns: string) => Exec;
}

export interface PluginOutcome {
  readonly code: number;
  readonly stdout: string;
  /** Log lines for the runtime's log (what was done or skipped, and why). */
  readonly stderr: string;
}

/** `expectNone`: a skipped pod that must have no capture (not one whose istio-init captures it, nor one that is not ours to judge). */
type Target =
  { readonly skip: string; readonly expectNone: boolean; readonly pod: string } | { readonly rules: RuleSet; readonly pod: string };

/** The pod's rule set, or why the plugin leaves it alone. */
async function target(env: CniEnv, config: PluginConfig, deps: PluginDeps, attempts?: number): Promise<Target> {
  const namespace = env.args.K8S_POD_NAMESPACE ?? '';
  const name = env.args.K8S_POD_NAME ?? '';
  const pod = `${namespace}/${name}`;
  if (namespace === '' || name === '')
    return { skip: 'no K8S_POD_NAMESPACE/K8S_POD_NAME in CNI_ARGS (not a Kubernetes pod)', expectNone: false, pod };
  if (namespaceExcluded(namespace, config.excludeNamespaces))
    return { skip: `namespace ${namespace} is in exclude_namespaces`, expectNone: false, pod };
  const reader =
    deps.readPod?.(config) ??
    (config.kubeconfig === undefined
      ? () =>
          Promise.reject(
            new CniError(CniCode.INVALID_NETWORK_CONFIG, 'invalid network config: kubernetes.kubeconfig is required to read the pod'),
          )
      : kubePodReader({ kubeconfig: config.kubeconfig, ...(attempts === undefined ? {} : { attempts }) }));
  const decision = decideForPod(await reader(namespace, name), resultAddresses(config.prevResult));
  if ('skip' in decision) return { skip: `pod ${pod}: ${decision.skip}`, expectNone: decision.expectNone, pod };
  try {
    return { rules: buildCaptureRules(captureConfigFromAnnotations(decision.annotations, decision.capture)), pod };
  } catch (err) {
    if (err instanceof MeshError && err.code === 'INVALID_ARGUMENT') {
      throw new CniError(CniCode.INVALID_POD_CONFIG, `pod ${namespace}/${name}: ${err.message}`, 'nothing was applied');
    }
    throw err;
  }
}

function requireNetns(env: CniEnv): void {
  if (!existsSync(netnsPath(env.netns)))
    throw new CniError(CniCode.CONTAINER_UNKNOWN, `network namespace ${env.netns} (CNI_NETNS) does not exist`);
}

function requirePrevResult(config: PluginConfig, command: string): void {
  if (config.prevResult === undefined) {
    throw new CniError(
      CniCode.INVALID_NETWORK_CONFIG,
      `${command}: no prevResult: meshpilot-cni must be chained after a primary plugin in a conflist`,
    );
  }
}

async function add(env: CniEnv, config: PluginConfig, deps: PluginDeps, log: string[]): Promise<string> {
  requirePrevResult(config, 'ADD');
  const passThrough = `${JSON.stringify(config.prevResult)}\n`;
  const t = await target(env, config, deps);
  if ('skip' in t) {
    log.push(`skipped: ${t.skip}`);
    return passThrough;
  }
  requireNetns(env);
  try {
    const report = await applyCapture(t.rules, { exec: (deps.exec ?? defaultExec)(env.netns) });
    log.push(`pod ${t.pod}: capture applied in ${env.netns}\n${formatReport(report)}`);
  } catch (err) {
    throw new CniError(
      CniCode.CAPTURE_FAILED,
      `pod ${t.pod}: cannot program traffic capture in ${env.netns}: ${errorMessage(err).split('\ninput:')[0]}`,
      'the namespace was rolled back; the pod must not start uncaptured',
    );
  }
  return passThrough;
}

/**
 * The pod's rule set for DEL when the pod can still be read at once (a pod being deleted usually
 * can): it also names the non-jump rules in built-in chains (TPROXY marks) and the TPROXY routing.
 * Otherwise undefined, and DEL removes the ISTIO_* chains and the jumps into them only.
 */
async function rulesForDel(env: CniEnv, config: PluginConfig, deps: PluginDeps, log: string[]): Promise<RuleSet | undefined> {
  try {
    const t = await target(env, config, deps, 1);
    return 'rules' in t ? t.rules : undefined;
  } catch (err) {
    log.push(`DEL: pod not readable (${errorMessage(err)}): removing ISTIO_* chains and jumps only`);
    return undefined;
  }
}

async function del(env: CniEnv, config: PluginConfig, deps: PluginDeps, log: string[]): Promise<void> {
  // DEL must succeed when there is nothing left to delete (spec: idempotent, netns may be gone).
  if (env.netns === '' || !existsSync(netnsPath(env.netns))) {
    log.push(`DEL: network namespace ${env.netns || '(none)'} is gone: nothing to remove`);
    return;
  }
  const rules = await rulesForDel(env, config, deps, log);
  try {
    const report = await removeCapture(rules, { exec: (deps.exec ?? defaultExec)(env.netns) });
    log.push(`DEL: ${formatReport(report)}`);
  } catch (err) {
    if (!existsSync(netnsPath(env.netns))) return;
    throw new CniError(
      CniCode.CAPTURE_FAILED,
      `DEL: cannot remove traffic capture from ${env.netns}: ${errorMessage(err).split('\ninput:')[0]}`,
    );
  }
}

async function check(env: CniEnv, config: PluginConfig, deps: PluginDeps, log: string[]): Promise<void> {
  requirePrevResult(config, 'CHECK');
  const t = await target(env, config, deps);
  if ('skip' in t) {
    if (!t.expectNone) {
      log.push(`CHECK skipped: ${t.skip}`);
      return;
    }
    requireNetns(env);
    const left = await ownChainsPresent((deps.exec ?? defaultExec)(env.netns));
    if (left.length > 0) {
      throw new CniError(
        CniCode.CAPTURE_FAILED,
        `CHECK: ${t.skip}, so it must not be captured, yet ${left.length} ISTIO_* chain(s) exist in ${env.netns}`,
        left.join('\n'),
      );
    }
    log.push(`CHECK: ${t.skip}: no ISTIO_* chains, as expected`);
    return;
  }
  requireNetns(env);
  const missing = await missingRules((deps.exec ?? defaultExec)(env.netns), t.rules);
  if (missing.length > 0) {
    throw new CniError(
      CniCode.CAPTURE_FAILED,
      `CHECK: pod ${t.pod}: ${missing.length} capture rule(s) missing in ${env.netns}`,
      missing.join('\n'),
    );
  }
}

const defaultExec = (netns: string): Exec => commandRunner({ netns });

/** One invocation: the runtime's environment and stdin in, what to print and the exit code out. */
export async function runCniPlugin(processEnv: NodeJS.ProcessEnv, stdin: string, deps: PluginDeps = {}): Promise<PluginOutcome> {
  const log: string[] = [];
  let version = CNI_VERSION;
  try {
    const env = parseCniEnv(processEnv);
    if (env.command === 'VERSION') {
      return { code: 0, stdout: `${JSON.stringify({ cniVersion: CNI_VERSION, supportedVersions: SUPPORTED_VERSIONS })}\n`, stderr: '' };
    }
    const config = parsePluginConfig(stdin);
    version = config.cniVersion;
    let stdout = '';
    if (env.command === 'ADD') stdout = await add(env, config, deps, log);
    else if (env.command === 'DEL') await del(env, config, deps, log);
    else await check(env, config, deps, log);
    return { code: 0, stdout, stderr: log.map((l) => `meshpilot-cni: ${l}\n`).join('') };
  } catch (err) {
    const e = err instanceof CniError ? err : new CniError(CniCode.CAPTURE_FAILED, errorMessage(err));
    return {
      code: 1,
      stdout: formatCniError(e, version),
      stderr: [...log, `error ${e.cniCode}: ${e.message}`].map((l) => `meshpilot-cni: ${l}\n`).join(''),
    };
  }
}
