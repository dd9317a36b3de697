import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { trackChild } from '../cleanup.js';

/**
 * A container runtime's side of the CNI protocol, for tests: each plugin of a conflist executed
 * from CNI_PATH with CNI_* in its environment and its network config (plus prevResult) on stdin,
 * ADD/CHECK in order, DEL in reverse. A plugin may be run inside another network namespace (the
 * test's "node"), so what the bridge plugin creates on its host side stays out of the real host.
 */

export interface PluginRun {
  readonly type: string;
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export interface CniRuntime {
  /** Invokes one plugin entry of the conflist; throws nothing (the caller reads code/stdout). */
  invoke(entry: Record<string, unknown>, command: 'ADD' | 'DEL' | 'CHECK', pod: PodSandbox, prevResult?: unknown): Promise<PluginRun>;
  /** ADD through the whole list; stops at the first failure, which is returned last. */
  add(pod: PodSandbox): Promise<PluginRun[]>;
  check(pod: PodSandbox, result: unknown): Promise<PluginRun[]>;
  del(pod: PodSandbox, result?: unknown): Promise<PluginRun[]>;
  readonly plugins: ReadonlyArray<Record<string, unknown>>;
}

export interface PodSandbox {
  readonly containerId: string;
  /** /run/netns/NAME. */
  readonly netns: string;
  readonly namespace: string;
  readonly name: string;
}

export interface RuntimeOptions {
  readonly conflistFile: string;
  readonly cniPath: readonly string[];
  /** Plugin types to run inside this `ip netns` (e.g. the primary bridge inside the test's node). */
  readonly runIn?: Readonly<Record<string, string>>;
}

function findPlugin(type: string, path: readonly string[]): string {
  const file = path.map((d) => join(d, type)).find((f) => existsSync(f));
  if (!file) throw new Error(`CNI plugin ${type} not found in CNI_PATH ${path.join(':')}`);
  return file;
}

export function cniRuntime(opts: RuntimeOptions): CniRuntime {
  const conf = JSON.parse(readFileSync(opts.conflistFile, 'utf8')) as {
    cniVersion: string;
    name: string;
    plugins: Array<Record<string, unknown>>;
  };
  const invoke: CniRuntime['invoke'] = (entry, command, pod, prevResult) => {
    const type = String(entry.type);
    const stdin = JSON.stringify({
      cniVersion: conf.cniVersion,
      name: conf.name,
      ...entry,
      ...(prevResult === undefined ? {} : { prevResult }),
    });
    const env = {
      ...process.env,
      CNI_COMMAND: command,
      CNI_CONTAINERID: pod.containerId,
      CNI_NETNS: pod.netns,
      CNI_IFNAME: 'eth0',
      CNI_PATH: opts.cniPath.join(':'),
      CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${pod.namespace};K8S_POD_NAME=${pod.name};K8S_POD_INFRA_CONTAINER_ID=${pod.containerId}`,
    };
    const file = findPlugin(type, opts.cniPath);
    const ns = opts.runIn?.[type];
    const [cmd, args] = ns === undefined ? [file, []] : ['ip', ['netns', 'exec', ns, file]];
    return new Promise((resolve) => {
      const child = spawn(cmd, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
      trackChild(child);
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      child.once('close', (code) => resolve({ type, code: code ?? 128, stdout, stderr }));
      child.stdin.end(stdin);
    });
  };
  return {
    plugins: conf.plugins,
    invoke,
    async add(pod) {
      const runs: PluginRun[] = [];
      let prev: unknown;
      for (const p of conf.plugins) {
        const r = await invoke(p, 'ADD', pod, prev);
        runs.push(r);
        if (r.code !== 0) break;
        prev = JSON.parse(r.stdout);
      }
      return runs;
    },
    async check(pod, result) {
      const runs: PluginRun[] = [];
      for (const p of conf.plugins) runs.push(await invoke(p, 'CHECK', pod, result));
      return runs;
    },
    async del(pod, result) {
      const runs: PluginRun[] = [];
      for (const p of [...conf.plugins].reverse()) runs.push(await invoke(p, 'DEL', pod, result));
      return runs;
    },
  };
}
