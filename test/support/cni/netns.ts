import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import type { BackendKind } from '../../../src/cni/backend.js';
import { commandRunner, type Exec, type ExecResult } from '../../../src/cni/exec.js';

/**
 * Network namespaces for tests: created with `ip netns add`, joined by veth pairs whose addresses
 * exist only inside them (nothing is added to the host's interfaces or routes), removed in the
 * test's `after` and, should that not run, when the process exits.
 */

export function isRoot(): boolean {
  return process.getuid?.() === 0;
}

/** Why a netns test cannot run here, or undefined: only the lack of root is a reason to skip. */
export function netnsSkipReason(): string | undefined {
  return isRoot() ? undefined : 'needs root (creates network namespaces and programs iptables in them)';
}

const live = new Set<string>();
const liveFiles = new Set<string>();
let hooked = false;

function removeNow(name: string): void {
  // A command that just left the namespace can keep it busy for a moment: retry briefly.
  for (let i = 0; i < 5; i++) {
    const r = spawnSync('ip', ['netns', 'del', name], { encoding: 'utf8' });
    if (r.status === 0 || /No such file/.test(r.stderr)) break;
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
  }
  rmSync(`/etc/netns/${name}`, { recursive: true, force: true });
  live.delete(name);
}

/** Names createNetns gives: `mp<role>-<pid>x<n>` (the dash keeps a role ending in digits, like `vld6`, out of the pid). */
const OURS = /^mp[a-z0-9]+-(\d+)x\d+$/;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Namespaces left by a test process that was SIGKILLed (no exit handler ran): those whose
 * creator's pid is gone. A live process's namespaces are never touched.
 */
function sweepStale(): void {
  const r = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' });
  for (const line of r.stdout?.split('\n') ?? []) {
    const name = line.split(' ')[0] ?? '';
    const m = OURS.exec(name);
    if (m && Number(m[1]) !== process.pid && !alive(Number(m[1]))) removeNow(name);
  }
}

function hook(): void {
  if (hooked) return;
  hooked = true;
  sweepStale();
  process.on('exit', () => {
    for (const n of [...live]) removeNow(n);
    for (const f of liveFiles) rmSync(f, { recursive: true, force: true });
  });
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => process.exit(130));
}

function must(cmd: string, args: readonly string[]): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed: ${r.stderr || r.error?.message || `exit ${r.status}`}`);
  return r.stdout;
}

export interface Netns {
  readonly name: string;
  /** Runs a command inside (through nsenter). */
  readonly exec: Exec;
  /** Synchronous `ip netns exec NAME cmd...`, throwing on failure. */
  run(cmd: string, ...args: string[]): string;
  /** Writes /etc/netns/NAME/FILE, which `ip netns exec` bind-mounts over /etc/FILE. */
  etcFile(file: string, text: string): void;
  remove(): void;
}

let counter = 0;

/** A fresh namespace with lo up; the name carries the pid so parallel runs never collide. */
export function createNetns(role: string): Netns {
  hook();
  const name = `mp${role}-${process.pid}x${counter++}`;
  must('ip', ['netns', 'add', name]);
  live.add(name);
  const ns: Netns = {
    name,
    exec: commandRunner({ netns: name }),
    run: (cmd, ...args) => must('ip', ['netns', 'exec', name, cmd, ...args]),
    etcFile: (file, text) => {
      mkdirSync(`/etc/netns/${name}`, { recursive: true });
      writeFileSync(`/etc/netns/${name}/${file}`, text);
    },
    remove: () => removeNow(name),
  };
  ns.run('ip', 'link', 'set', 'lo', 'up');
  return ns;
}

/** A veth pair between two namespaces, with addresses (CIDR form) set inside each. */
export function connect(a: Netns, aAddrs: readonly string[], b: Netns, bAddrs: readonly string[]): { aIf: string; bIf: string } {
  const id = `${process.pid % 100000}${counter++}`;
  const aIf = `mpa${id}`.slice(0, 15);
  const bIf = `mpb${id}`.slice(0, 15);
  // Created directly inside `a` so the pair never appears among the host's links.
  a.run('ip', 'link', 'add', aIf, 'type', 'veth', 'peer', 'name', bIf, 'netns', b.name);
  for (const [ns, dev, addrs] of [
    [a, aIf, aAddrs],
    [b, bIf, bAddrs],
  ] as const) {
    for (const addr of addrs) ns.run('ip', 'addr', 'add', addr, 'dev', dev, ...(addr.includes(':') ? ['nodad'] : []));
    ns.run('ip', 'link', 'set', dev, 'up');
  }
  return { aIf, bIf };
}

/** iptables-save of one family and back end, inside `ns`. */
export async function saveState(ns: Netns, family: 4 | 6, kind: BackendKind): Promise<string> {
  const bin = `${family === 4 ? 'iptables' : 'ip6tables'}-${kind}-save`;
  const r: ExecResult = await ns.exec(bin, []);
  if (r.code !== 0) throw new Error(`${bin} failed: ${r.stderr}`);
  return comparableSave(r.stdout);
}

/**
 * Save text for comparisons: comments and counters dropped, and tables holding nothing (only
 * built-in chains with ACCEPT policy, no rules) left out, since merely probing a table makes one.
 */
export function comparableSave(text: string): string {
  const out: string[] = [];
  let section: string[] = [];
  let meaningful = false;
  for (const raw of text.split('\n')) {
    const line = raw.trim().replace(/\s\[\d+:\d+\]$/, '');
    if (line === '' || line.startsWith('#')) continue;
    if (line.startsWith('*')) {
      section = [line];
      meaningful = false;
    } else if (line === 'COMMIT') {
      if (meaningful) out.push(...section, line);
    } else {
      section.push(line);
      if (!/^:(PREROUTING|INPUT|FORWARD|OUTPUT|POSTROUTING) ACCEPT$/.test(line)) meaningful = true;
    }
  }
  return out.join('\n');
}

/** Which back ends this machine has (both on Debian's iptables package). */
export function availableBackends(): BackendKind[] {
  return (['nft', 'legacy'] as const).filter((k) => spawnSync(`iptables-${k}-save`, ['--version'], { stdio: 'ignore' }).status === 0);
}

/** A file removed at exit even if the test fails before its own cleanup. */
export function trackFile(path: string): void {
  hook();
  liveFiles.add(path);
}

/** iptables-save of both families on every back end, labelled: the whole capture state of `ns`. */
export async function allSaves(ns: Netns): Promise<string> {
  const out: string[] = [];
  for (const kind of availableBackends()) out.push(`--- ${kind} ---\n${await saveState(ns, 4, kind)}\n${await saveState(ns, 6, kind)}`);
  return out.join('\n');
}

/** The back end holding our chains in `ns`. */
export async function ownBackend(ns: Netns): Promise<BackendKind> {
  for (const kind of availableBackends()) if ((await saveState(ns, 4, kind)).includes(':ISTIO_OUTPUT')) return kind;
  throw new Error(`no ISTIO_OUTPUT chain in ${ns.name}`);
}

/**
 * `allSaves` of a fresh namespace after `prepare` and loading `golden` (restore input as
 * testdata/iptables/*.golden holds it: `# IPv4: …` and optionally `# IPv6: …` sections) with
 * back end `kind`: what a namespace programmed to the golden rule set must equal.
 */
export async function savesOfGolden(golden: string, kind: BackendKind, prepare: (ns: Netns) => void = () => undefined): Promise<string> {
  const twin = createNetns('twin');
  try {
    prepare(twin);
    const [v4 = '', v6] = golden.replace(/^# IPv4:.*\n/, '').split(/^# IPv6:.*\n/m);
    for (const [bin, text] of [
      [`iptables-${kind}-restore`, v4],
      [`ip6tables-${kind}-restore`, v6],
    ] as const) {
      if (text === undefined) continue;
      const r = await twin.exec(bin, ['-w', '--noflush'], text);
      if (r.code !== 0) throw new Error(`${bin} of the golden failed: ${r.stderr}`);
    }
    return await allSaves(twin);
  } finally {
    twin.remove();
  }
}
