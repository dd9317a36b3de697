import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { errorMessage, MeshError } from '../../util/errors.js';
import { installCni, uninstallCni, type InstallOptions } from './installer.js';

/**
 * `meshpilot cni install`: the CNI DaemonSet's process (install-cni's flags and env names). It
 * installs, keeps the entry in place until SIGTERM/SIGINT, then uninstalls. Exit 64: bad flags.
 */

export const CNI_INSTALL_USAGE = `usage: meshpilot cni install [--cni-net-dir /etc/cni/net.d (CNI_NET_DIR)]
                           [--mounted-cni-net-dir DIR (MOUNTED_CNI_NET_DIR; default: --cni-net-dir)]
                           [--cni-bin-dir /opt/cni/bin (CNI_BIN_DIR)] [--mounted-cni-bin-dir DIR (default: --cni-bin-dir)]
                           [--cni-conf-name FILE (CNI_CONF_NAME; default: the first config by name)]
                           [--kubeconfig-filename ZZZ-meshpilot-cni-kubeconfig (KUBECONFIG_FILENAME)]
                           [--kubeconfig FILE (default: in-cluster service account)]
                           [--exclude-namespaces kube-system (EXCLUDE_NAMESPACES)] [--log-level info (LOG_LEVEL)]
                           [--plugin-file FILE (MESHPILOT_CNI_PLUGIN_FILE; default: dist/cni/meshpilot-cni of this package)]`;

const FLAGS: Record<string, string> = {
  'cni-net-dir': 'CNI_NET_DIR',
  'mounted-cni-net-dir': 'MOUNTED_CNI_NET_DIR',
  'cni-bin-dir': 'CNI_BIN_DIR',
  'mounted-cni-bin-dir': 'MOUNTED_CNI_BIN_DIR',
  'cni-conf-name': 'CNI_CONF_NAME',
  'kubeconfig-filename': 'KUBECONFIG_FILENAME',
  kubeconfig: '',
  'exclude-namespaces': 'EXCLUDE_NAMESPACES',
  'log-level': 'LOG_LEVEL',
  'plugin-file': 'MESHPILOT_CNI_PLUGIN_FILE',
};

const SA_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** The package's bundled plugin: dist/cni/meshpilot-cni beside the nearest package.json. */
function defaultPluginFile(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
  return join(dir, 'dist', 'cni', 'meshpilot-cni');
}

/** A kubeconfig of this pod's service account, as install-cni writes for istio-cni. */
function inClusterKubeconfig(env: NodeJS.ProcessEnv, serviceAccountDir: string): string {
  const host = env.KUBERNETES_SERVICE_HOST;
  if (!host)
    throw new MeshError(
      'FAILED_PRECONDITION',
      'no --kubeconfig and not in a pod (KUBERNETES_SERVICE_HOST unset): cannot write the plugin kubeconfig',
    );
  const server = `https://${host.includes(':') ? `[${host}]` : host}:${env.KUBERNETES_SERVICE_PORT ?? '443'}`;
  const ca = readFileSync(join(serviceAccountDir, 'ca.crt')).toString('base64');
  const token = readFileSync(join(serviceAccountDir, 'token'), 'utf8').trim();
  return `apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: ${server}
    certificate-authority-data: ${ca}
users:
- name: meshpilot-cni
  user:
    token: ${token}
contexts:
- name: meshpilot-cni-context
  context:
    cluster: local
    user: meshpilot-cni
current-context: meshpilot-cni-context
`;
}

/** `serviceAccountDir`: where the pod's token and ca.crt are mounted (tests point it elsewhere). */
export function parseInstallFlags(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  serviceAccountDir = SA_DIR,
): Omit<InstallOptions, 'log'> {
  const v: Record<string, string> = {};
  for (const [flag, name] of Object.entries(FLAGS)) if (name !== '' && env[name] !== undefined) v[flag] = env[name] ?? '';
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    const m = /^--([\w-]+)(?:=(.*))?$/.exec(arg);
    if (!m || !(m[1]! in FLAGS)) throw new MeshError('INVALID_ARGUMENT', `unknown flag ${arg}`);
    const value = m[2] ?? argv[++i];
    if (value === undefined) throw new MeshError('INVALID_ARGUMENT', `flag --${m[1]} needs a value`);
    v[m[1]!] = value;
  }
  const netDir = v['cni-net-dir'] ?? '/etc/cni/net.d';
  const binDir = v['cni-bin-dir'] ?? '/opt/cni/bin';
  const opts: Omit<InstallOptions, 'log'> = {
    netDir,
    mountedNetDir: v['mounted-cni-net-dir'] ?? netDir,
    binDir,
    mountedBinDir: v['mounted-cni-bin-dir'] ?? binDir,
    kubeconfigFilename: v['kubeconfig-filename'] ?? 'ZZZ-meshpilot-cni-kubeconfig',
    ...(v.kubeconfig !== undefined
      ? { kubeconfigText: readFileSync(v.kubeconfig, 'utf8') }
      : {
          kubeconfigText: inClusterKubeconfig(env, serviceAccountDir),
          kubeconfigSource: { dir: serviceAccountDir, render: () => inClusterKubeconfig(env, serviceAccountDir) },
        }),
    excludeNamespaces: (v['exclude-namespaces'] ?? 'kube-system')
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== ''),
    logLevel: v['log-level'] ?? 'info',
    pluginFile: v['plugin-file'] ?? defaultPluginFile(),
    ...(v['cni-conf-name'] ? { confName: v['cni-conf-name'] } : {}),
  };
  if (!existsSync(opts.pluginFile))
    throw new MeshError('FAILED_PRECONDITION', `plugin file ${opts.pluginFile} does not exist (npm run build:cni makes it)`);
  for (const d of [opts.mountedNetDir, opts.mountedBinDir])
    if (!existsSync(d)) throw new MeshError('FAILED_PRECONDITION', `directory ${d} does not exist`);
  return opts;
}

/** `meshpilot cni install|uninstall …`. */
export async function runCniCommand(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub !== 'install' && sub !== 'uninstall') {
    process.stderr.write(`${CNI_INSTALL_USAGE}\n       meshpilot cni uninstall [same flags]\n`);
    return sub === '--help' || sub === '-h' ? 0 : 64;
  }
  let opts;
  try {
    opts = parseInstallFlags(rest, env);
  } catch (err) {
    process.stderr.write(`meshpilot cni ${sub}: ${errorMessage(err)}\n${CNI_INSTALL_USAGE}\n`);
    return 64;
  }
  const log = (line: string): void => void process.stdout.write(`meshpilot cni: ${line}\n`);
  try {
    if (sub === 'uninstall') {
      await uninstallCni({ ...opts, log });
      return 0;
    }
    const installed = await installCni({ ...opts, log });
    log('ready: watching for config rewrites until SIGTERM');
    await new Promise<void>((resolve) => {
      process.once('SIGTERM', () => resolve());
      process.once('SIGINT', () => resolve());
    });
    await installed.uninstall();
    return 0;
  } catch (err) {
    process.stderr.write(`meshpilot cni ${sub}: ${errorMessage(err)}\n`);
    return 1;
  }
}
