import { watch, type FSWatcher } from 'node:fs';
import { chmod, copyFile, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { hasPlugin, PLUGIN_TYPE, primaryConfigName, withoutPlugin, withPlugin } from './conflist.js';

/**
 * install-cni's job for meshpilot: put the plugin binary and its kubeconfig on the node, chain the
 * plugin into the primary network's config, keep it there while the primary plugin (or anyone)
 * rewrites that file, and take everything back out on shutdown.
 */

export interface InstallOptions {
  /** Where this process writes the network config (the host's net dir as mounted here). */
  readonly mountedNetDir: string;
  /** The host's path of the net dir, written into the plugin entry (CNI_NET_DIR). */
  readonly netDir: string;
  /** Where the plugin binary goes (the host's bin dir as mounted here) and its host path. */
  readonly mountedBinDir: string;
  readonly binDir: string;
  /** CNI_CONF_NAME: the primary config file; default the first one by name. */
  readonly confName?: string;
  readonly kubeconfigFilename: string;
  /** The kubeconfig the plugin reads pods with. */
  readonly kubeconfigText: string;
  /**
   * Where the kubeconfig comes from when it holds the pod's service-account token: the kubelet
   * rotates that token (swapping the mounted dir's `..data` link), so the installer watches `dir`
   * and rewrites the kubeconfig when `render()` gives new text, as install-cni does.
   */
  readonly kubeconfigSource?: { readonly dir: string; readonly render: () => string };
  readonly excludeNamespaces: readonly string[];
  readonly logLevel: string;
  /** The self-contained plugin file to copy (the esbuild bundle). */
  readonly pluginFile: string;
  readonly log?: (line: string) => void;
}

export interface Installation {
  /** The config file holding our entry now. */
  readonly configFile: () => string | undefined;
  /** Re-inserts the entry if it is missing; true when it wrote the file. */
  reconcile(): Promise<boolean>;
  /** Re-renders the kubeconfig from its source; true when it changed and was rewritten. */
  refreshKubeconfig(): Promise<boolean>;
  /** Removes entry, binary and kubeconfig; stops watching. */
  uninstall(): Promise<void>;
}

async function writeAtomic(path: string, text: string, mode = 0o644): Promise<void> {
  const tmp = join(path, '..', `.${basename(path)}.meshpilot-tmp`);
  await writeFile(tmp, text, { mode });
  await rename(tmp, path);
}

function pluginEntry(o: InstallOptions): Record<string, unknown> {
  return {
    type: PLUGIN_TYPE,
    log_level: o.logLevel,
    exclude_namespaces: [...o.excludeNamespaces],
    kubernetes: { kubeconfig: join(o.netDir, o.kubeconfigFilename), cni_bin_dir: o.binDir },
  };
}

/** Copies the plugin and kubeconfig, chains the entry, and watches the net dir until uninstall. */
export async function installCni(o: InstallOptions): Promise<Installation> {
  const log = o.log ?? (() => undefined);
  const binPath = join(o.mountedBinDir, PLUGIN_TYPE);
  const kubeconfigPath = join(o.mountedNetDir, o.kubeconfigFilename);
  // Copied under a temporary name and renamed, so a runtime never executes a half-written file.
  const tmpBin = join(o.mountedBinDir, `.${PLUGIN_TYPE}.meshpilot-tmp`);
  await copyFile(o.pluginFile, tmpBin);
  await chmod(tmpBin, 0o755);
  await rename(tmpBin, binPath);
  let kubeconfigText = o.kubeconfigText;
  await writeAtomic(kubeconfigPath, kubeconfigText, 0o600);
  log(`installed ${binPath} and ${kubeconfigPath}`);
  const refreshNow = async (): Promise<boolean> => {
    if (!o.kubeconfigSource) return false;
    let text: string;
    try {
      text = o.kubeconfigSource.render();
    } catch (err) {
      // Mid-rotation the token may be briefly absent: keep the last kubeconfig, try on the next event.
      log(`cannot re-read the service account in ${o.kubeconfigSource.dir}: ${(err as Error).message}`);
      return false;
    }
    if (text === kubeconfigText) return false;
    await writeAtomic(kubeconfigPath, text, 0o600);
    kubeconfigText = text;
    log(`rewrote ${kubeconfigPath}: the service account token changed`);
    return true;
  };
  let refreshQueue = Promise.resolve(false);
  const refreshKubeconfig = (): Promise<boolean> => (refreshQueue = refreshQueue.then(refreshNow, refreshNow));

  let current: string | undefined;
  let queue = Promise.resolve(false);
  const reconcileNow = async (): Promise<boolean> => {
    const names = (await readdir(o.mountedNetDir)).filter((n) => n !== o.kubeconfigFilename && !n.startsWith('.'));
    const name = primaryConfigName(names, o.confName);
    if (name === undefined) {
      log(`no CNI network config in ${o.mountedNetDir} yet: waiting for the primary plugin to write one`);
      return false;
    }
    const file = join(o.mountedNetDir, name);
    const text = await readFile(file, 'utf8');
    if (name.endsWith('.conflist') && hasPlugin(text, file)) {
      current = file;
      return false;
    }
    const out = withPlugin(text, file, pluginEntry(o));
    const target = name.endsWith('.conf') ? `${file}list` : file;
    await writeAtomic(target, out);
    if (target !== file) await rm(file, { force: true });
    current = target;
    log(`chained ${PLUGIN_TYPE} into ${target}`);
    return true;
  };
  // Events come in bursts; one reconcile at a time, in order.
  const reconcile = (): Promise<boolean> => (queue = queue.then(reconcileNow, reconcileNow));

  await reconcile();
  let watcher: FSWatcher | undefined = watch(o.mountedNetDir, () => {
    reconcile().catch((err: unknown) => log(`reconcile failed: ${(err as Error).message}`));
  });
  let tokenWatcher: FSWatcher | undefined =
    o.kubeconfigSource &&
    watch(o.kubeconfigSource.dir, () => {
      refreshKubeconfig().catch((err: unknown) => log(`kubeconfig refresh failed: ${(err as Error).message}`));
    });
  return {
    configFile: () => current,
    reconcile,
    refreshKubeconfig,
    async uninstall() {
      watcher?.close();
      watcher = undefined;
      tokenWatcher?.close();
      tokenWatcher = undefined;
      await refreshQueue.catch(() => false);
      await queue.catch(() => false);
      await uninstallCni(o);
    },
  };
}

/** Takes our entry out of every conflist in the net dir and removes the binary and kubeconfig. */
export async function uninstallCni(o: InstallOptions): Promise<void> {
  const binPath = join(o.mountedBinDir, PLUGIN_TYPE);
  const kubeconfigPath = join(o.mountedNetDir, o.kubeconfigFilename);
  for (const n of await readdir(o.mountedNetDir)) {
    if (!n.endsWith('.conflist')) continue;
    const file = join(o.mountedNetDir, n);
    const text = await readFile(file, 'utf8');
    // A file someone else broke is theirs to fix: leave it rather than fail the uninstall.
    let ours: boolean;
    try {
      ours = hasPlugin(text, file);
    } catch {
      ours = false;
    }
    if (ours) await writeAtomic(file, withoutPlugin(text, file));
  }
  await rm(binPath, { force: true });
  await rm(kubeconfigPath, { force: true });
  (o.log ?? (() => undefined))(`uninstalled ${PLUGIN_TYPE}`);
}
