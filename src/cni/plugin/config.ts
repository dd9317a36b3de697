import { CniCode, CniError, SUPPORTED_VERSIONS } from './errors.js';

/**
 * What the runtime hands the plugin: CNI_* environment variables and the network config on stdin
 * (istio-cni's field names, so an istio-cni conflist entry works with only `type` changed).
 */

export type CniCommand = 'ADD' | 'DEL' | 'CHECK' | 'VERSION';

export interface CniEnv {
  readonly command: CniCommand;
  readonly containerId: string;
  /** May be empty on DEL (the namespace is already gone). */
  readonly netns: string;
  readonly ifName: string;
  readonly path: readonly string[];
  /** CNI_ARGS as key=value pairs (K8S_POD_NAME, K8S_POD_NAMESPACE, …). */
  readonly args: Readonly<Record<string, string>>;
}

export interface PluginConfig {
  readonly cniVersion: string;
  readonly name: string;
  readonly type: string;
  /** istio-cni `kubernetes.kubeconfig`: the file the installer wrote. */
  readonly kubeconfig?: string;
  /** istio-cni `exclude_namespaces` (top level, or `kubernetes.exclude_namespaces` as older releases wrote it). */
  readonly excludeNamespaces: readonly string[];
  readonly logLevel: string;
  /** The primary plugin's result, passed through unchanged; absent when not chained. */
  readonly prevResult?: unknown;
}

const COMMANDS: readonly string[] = ['ADD', 'DEL', 'CHECK', 'VERSION'];

/** `IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p` (the runtime's CNI_ARGS). */
export function parseCniArgs(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of text.split(';')) {
    if (pair.trim() === '') continue;
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new CniError(CniCode.INVALID_ENV, `invalid CNI_ARGS: "${pair}" is not KEY=VALUE`, `CNI_ARGS=${text}`);
    out[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return out;
}

export function parseCniEnv(env: NodeJS.ProcessEnv): CniEnv {
  const command = env.CNI_COMMAND ?? '';
  if (!COMMANDS.includes(command)) {
    throw new CniError(CniCode.INVALID_ENV, `invalid CNI_COMMAND "${command}": must be one of ${COMMANDS.join(', ')}`);
  }
  const cmd = command as CniCommand;
  const need = (name: string): string => {
    const v = env[name] ?? '';
    if (v === '') throw new CniError(CniCode.INVALID_ENV, `${name} is required for ${cmd}`);
    return v;
  };
  if (cmd === 'VERSION') return { command: cmd, containerId: '', netns: '', ifName: '', path: [], args: {} };
  return {
    command: cmd,
    containerId: need('CNI_CONTAINERID'),
    netns: cmd === 'DEL' ? (env.CNI_NETNS ?? '') : need('CNI_NETNS'),
    ifName: need('CNI_IFNAME'),
    path: (env.CNI_PATH ?? '').split(':').filter((p) => p !== ''),
    args: parseCniArgs(env.CNI_ARGS ?? ''),
  };
}

function stringList(v: unknown, field: string): string[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) {
    throw new CniError(
      CniCode.INVALID_NETWORK_CONFIG,
      `invalid network config: ${field} must be a list of strings`,
      `got ${JSON.stringify(v)}`,
    );
  }
  return v as string[];
}

function optionalString(v: unknown, field: string): string | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string')
    throw new CniError(CniCode.INVALID_NETWORK_CONFIG, `invalid network config: ${field} must be a string`, `got ${JSON.stringify(v)}`);
  return v;
}

/** The network config on stdin, validated; the version must be one we speak. */
export function parsePluginConfig(stdin: string): PluginConfig {
  let doc: unknown;
  try {
    doc = JSON.parse(stdin);
  } catch (err) {
    throw new CniError(CniCode.DECODE_FAILURE, `network config on stdin is not JSON: ${(err as Error).message}`);
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
    throw new CniError(CniCode.DECODE_FAILURE, 'network config on stdin must be a JSON object');
  const c = doc as Record<string, unknown>;
  const cniVersion = optionalString(c.cniVersion, 'cniVersion') ?? '';
  if (!(SUPPORTED_VERSIONS as readonly string[]).includes(cniVersion)) {
    throw new CniError(
      CniCode.INCOMPATIBLE_VERSION,
      `incompatible CNI version "${cniVersion}"`,
      `supported: ${SUPPORTED_VERSIONS.join(', ')}`,
    );
  }
  const k8s = c.kubernetes ?? {};
  if (typeof k8s !== 'object' || k8s === null || Array.isArray(k8s))
    throw new CniError(CniCode.INVALID_NETWORK_CONFIG, 'invalid network config: kubernetes must be an object');
  const kube = k8s as Record<string, unknown>;
  const kubeconfig = optionalString(kube.kubeconfig, 'kubernetes.kubeconfig');
  const out: PluginConfig = {
    cniVersion,
    name: optionalString(c.name, 'name') ?? '',
    type: optionalString(c.type, 'type') ?? '',
    excludeNamespaces: [
      ...stringList(c.exclude_namespaces, 'exclude_namespaces'),
      ...stringList(kube.exclude_namespaces, 'kubernetes.exclude_namespaces'),
    ],
    logLevel: optionalString(c.log_level, 'log_level') ?? optionalString(c.plugin_log_level, 'plugin_log_level') ?? 'info',
    ...(kubeconfig === undefined ? {} : { kubeconfig }),
    ...('prevResult' in c && c.prevResult !== null ? { prevResult: c.prevResult } : {}),
  };
  return out;
}
