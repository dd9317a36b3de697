import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { trackChild } from '../../../test/support/cleanup.js';
import { REPO_ROOT } from '../../../test/support/paths.js';
import { tempDir } from '../../../test/support/temp-dir.js';
import { waitFor } from '../../../test/support/wait.js';
import { parseInstallFlags } from './command.js';
import { PLUGIN_TYPE, primaryConfigName } from './conflist.js';
import { installCni, type InstallOptions } from './installer.js';

/** A primary network as a node has it (bridge + host-local + portmap), written tersely by "its" tool. */
const BRIDGE = {
  type: 'bridge',
  bridge: 'cni0',
  isGateway: true,
  ipMasq: true,
  ipam: { type: 'host-local', ranges: [[{ subnet: '10.22.0.0/16' }]], routes: [{ dst: '0.0.0.0/0' }] },
};
const PORTMAP = { type: 'portmap', capabilities: { portMappings: true } };
const PRIMARY = `{"cniVersion":"1.0.0","name":"k8s-pod-network","plugins":[${JSON.stringify(BRIDGE)},${JSON.stringify(PORTMAP)}]}`;
const KUBECONFIG = 'apiVersion: v1\nkind: Config\n# the plugin reads pods with this\n';

const dirs: Array<{ remove(): Promise<void> }> = [];
after(async () => {
  for (const d of dirs) await d.remove();
});

function node(): { net: string; bin: string; opts: InstallOptions } {
  const d = tempDir('meshpilot-cni-install-');
  dirs.push(d);
  const net = join(d.path, 'etc', 'cni', 'net.d');
  const bin = join(d.path, 'opt', 'cni', 'bin');
  mkdirSync(net, { recursive: true });
  mkdirSync(bin, { recursive: true });
  const plugin = join(d.path, 'meshpilot-cni.bundle');
  writeFileSync(plugin, '#!/usr/bin/env node\nconsole.log("plugin")\n');
  return {
    net,
    bin,
    opts: {
      mountedNetDir: net,
      netDir: '/etc/cni/net.d',
      mountedBinDir: bin,
      binDir: '/opt/cni/bin',
      kubeconfigFilename: 'ZZZ-meshpilot-cni-kubeconfig',
      kubeconfigText: KUBECONFIG,
      excludeNamespaces: ['kube-system'],
      logLevel: 'info',
      pluginFile: plugin,
    },
  };
}

type Conflist = { plugins: Array<Record<string, unknown>> };
const read = (file: string): Conflist => JSON.parse(readFileSync(file, 'utf8')) as Conflist;
const ours = (file: string) => read(file).plugins.filter((p) => p.type === PLUGIN_TYPE);

/** Writes as a CNI config writer would: a new file renamed over the old one. */
function rewrite(file: string, text: string): void {
  writeFileSync(`${file}.tmp`, text);
  renameSync(`${file}.tmp`, file);
}

describe('meshpilot cni install', () => {
  it('chains the entry last in the primary conflist; the primary entries are byte-identical; binary and kubeconfig installed', async () => {
    const { net, bin, opts } = node();
    const file = join(net, '10-bridge.conflist');
    writeFileSync(file, PRIMARY);
    const inst = await installCni(opts);
    try {
      const doc = read(file);
      assert.deepEqual(doc.plugins.map((p) => JSON.stringify(p)).slice(0, 2), [JSON.stringify(BRIDGE), JSON.stringify(PORTMAP)]);
      assert.deepEqual(doc.plugins[2], {
        type: PLUGIN_TYPE,
        log_level: 'info',
        exclude_namespaces: ['kube-system'],
        kubernetes: { kubeconfig: '/etc/cni/net.d/ZZZ-meshpilot-cni-kubeconfig', cni_bin_dir: '/opt/cni/bin' },
      });
      assert.equal(readFileSync(join(bin, PLUGIN_TYPE), 'utf8'), readFileSync(opts.pluginFile, 'utf8'));
      assert.equal(statSync(join(bin, PLUGIN_TYPE)).mode & 0o777, 0o755);
      assert.equal(readFileSync(join(net, opts.kubeconfigFilename), 'utf8'), KUBECONFIG);
      assert.equal(statSync(join(net, opts.kubeconfigFilename)).mode & 0o777, 0o600);
      assert.equal(await inst.reconcile(), false, 'a second pass changes nothing');
    } finally {
      await inst.uninstall();
    }
  });

  it('keeps the entry when another process rewrites the file (renamed over it, or written in place), and leaves on uninstall', async () => {
    const { net, bin, opts } = node();
    const file = join(net, '10-bridge.conflist');
    writeFileSync(file, PRIMARY);
    const inst = await installCni(opts);
    rewrite(file, PRIMARY);
    await waitFor(() => ours(file).length === 1, { description: 'entry back after a rename-over rewrite', timeoutMs: 5000 });
    writeFileSync(file, PRIMARY);
    await waitFor(() => ours(file).length === 1, { description: 'entry back after an in-place rewrite', timeoutMs: 5000 });
    assert.equal(JSON.stringify(read(file).plugins[0]), JSON.stringify(BRIDGE));

    await inst.uninstall();
    assert.deepEqual(read(file), JSON.parse(PRIMARY), 'the primary config as it was');
    assert.equal(existsSync(join(bin, PLUGIN_TYPE)), false);
    assert.equal(existsSync(join(net, opts.kubeconfigFilename)), false);
    writeFileSync(file, PRIMARY);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(ours(file).length, 0, 'no longer watching after uninstall');
  });

  it('picks the first config by name (install-cni) and converts a single-plugin .conf into a .conflist', async () => {
    const { net, opts } = node();
    writeFileSync(join(net, '10-bridge.conf'), JSON.stringify({ cniVersion: '0.4.0', name: 'bridge-net', ...BRIDGE }));
    writeFileSync(join(net, '20-other.conflist'), PRIMARY);
    const inst = await installCni(opts);
    try {
      assert.equal(existsSync(join(net, '10-bridge.conf')), false);
      const doc = read(join(net, '10-bridge.conflist')) as Conflist & { cniVersion: string; name: string };
      assert.deepEqual([doc.cniVersion, doc.name, doc.plugins.length], ['0.4.0', 'bridge-net', 2]);
      assert.deepEqual(doc.plugins[0], BRIDGE);
      assert.equal(ours(join(net, '20-other.conflist')).length, 0, 'only the primary network is chained');
    } finally {
      await inst.uninstall();
    }
    assert.equal(primaryConfigName(['b.conflist', 'a.conf', 'ZZZ-kubeconfig', 'x.txt']), 'a.conf');
    assert.equal(primaryConfigName(['10-bridge.conflist'], '10-bridge.conf'), '10-bridge.conflist');
  });

  it('waits for the primary plugin to write its config when there is none yet', async () => {
    const { net, opts } = node();
    const inst = await installCni(opts);
    try {
      assert.equal(inst.configFile(), undefined);
      writeFileSync(join(net, '05-late.conflist'), PRIMARY);
      await waitFor(() => existsSync(join(net, '05-late.conflist')) && ours(join(net, '05-late.conflist')).length === 1, {
        timeoutMs: 5000,
        description: 'entry in the late config',
      });
    } finally {
      await inst.uninstall();
    }
  });

  it('rewrites the kubeconfig when the kubelet rotates the service-account token (the ..data link swapped)', async () => {
    const { net, bin, opts } = node();
    writeFileSync(join(net, '10-bridge.conflist'), PRIMARY);
    const sa = join(net, '..', 'serviceaccount');
    mkdirSync(sa);
    // The kubelet's atomic writer: files are links into ..data, itself a link to a timestamped dir.
    const project = (version: string): void => {
      const dir = join(sa, `..${version}`);
      mkdirSync(dir);
      writeFileSync(join(dir, 'token'), `token-${version}`);
      writeFileSync(join(dir, 'ca.crt'), 'CA');
      symlinkSync(`..${version}`, join(sa, '..data_tmp'));
      renameSync(join(sa, '..data_tmp'), join(sa, '..data'));
    };
    project('v1');
    for (const f of ['token', 'ca.crt']) symlinkSync(join('..data', f), join(sa, f));
    const flags = parseInstallFlags(
      ['--mounted-cni-net-dir', net, '--mounted-cni-bin-dir', bin, '--plugin-file', opts.pluginFile],
      { KUBERNETES_SERVICE_HOST: '10.96.0.1' },
      sa,
    );
    const inst = await installCni(flags);
    const kubeconfig = join(net, 'ZZZ-meshpilot-cni-kubeconfig');
    try {
      assert.match(readFileSync(kubeconfig, 'utf8'), /token: token-v1\n/);
      project('v2');
      await waitFor(() => readFileSync(kubeconfig, 'utf8').includes('token: token-v2\n'), {
        timeoutMs: 5000,
        description: 'the rotated token in the kubeconfig',
      });
      assert.match(readFileSync(kubeconfig, 'utf8'), /server: https:\/\/10\.96\.0\.1:443\n/);
      assert.equal(statSync(kubeconfig).mode & 0o777, 0o600);
      assert.equal(await inst.refreshKubeconfig(), false, 'unchanged token: not rewritten');
    } finally {
      await inst.uninstall();
    }
  });

  it('as a process: installs, and removes itself on SIGTERM; bad flags exit 64', async () => {
    const { net, bin, opts } = node();
    const file = join(net, '10-bridge.conflist');
    writeFileSync(file, PRIMARY);
    writeFileSync(join(net, 'source-kubeconfig'), KUBECONFIG);
    const args = [
      '--import',
      'tsx',
      join(REPO_ROOT, 'src/cli/meshpilot.ts'),
      'cni',
      'install',
      '--mounted-cni-net-dir',
      net,
      '--mounted-cni-bin-dir',
      bin,
    ];
    const child = spawn(process.execPath, [...args, '--kubeconfig', join(net, 'source-kubeconfig'), '--plugin-file', opts.pluginFile], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    trackChild(child);
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
    await waitFor(() => out.includes('ready'), { timeoutMs: 30_000, description: `installer ready (${out})` });
    assert.equal(ours(file).length, 1);
    assert.ok(existsSync(join(bin, PLUGIN_TYPE)));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    child.kill('SIGTERM');
    assert.equal(await exited, 0, out);
    assert.deepEqual(read(file), JSON.parse(PRIMARY));
    assert.equal(existsSync(join(bin, PLUGIN_TYPE)), false);
    assert.equal(existsSync(join(net, 'ZZZ-meshpilot-cni-kubeconfig')), false);

    const bad = spawn(process.execPath, [...args, '--no-such-flag', 'x'], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    trackChild(bad);
    let err = '';
    bad.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    assert.equal(await new Promise((r) => bad.once('exit', r)), 64);
    assert.match(err, /unknown flag --no-such-flag/);
  });
});
