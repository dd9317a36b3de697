import { MeshError } from '../util/errors.js';
import type { Exec } from './exec.js';
import { OWN_CHAIN_PREFIX } from './iptables/rules.js';
import { BUILT_IN } from './iptables/rules.js';
import { parseSave } from './iptables/restore.js';

export type BackendKind = 'legacy' | 'nft';
export type IpFamily = 4 | 6;

/** One family's binaries of the chosen back end. */
export interface Backend {
  readonly kind: BackendKind;
  readonly family: IpFamily;
  readonly iptables: string;
  readonly save: string;
  readonly restore: string;
  /** Legacy iptables serialises writers through /run/xtables.lock: wait for it instead of failing. */
  readonly waitArgs: readonly string[];
}

function binaries(family: IpFamily, suffix: '' | '-legacy' | '-nft'): { iptables: string; save: string; restore: string } {
  const base = family === 4 ? 'iptables' : 'ip6tables';
  return { iptables: `${base}${suffix}`, save: `${base}${suffix}-save`, restore: `${base}${suffix}-restore` };
}

function backend(kind: BackendKind, family: IpFamily, suffix: '' | '-legacy' | '-nft'): Backend {
  return { kind, family, ...binaries(family, suffix), waitArgs: kind === 'legacy' ? ['-w'] : [] };
}

interface Probe {
  readonly usable: boolean;
  readonly ours: boolean;
  readonly rules: boolean;
  readonly error: string;
}

async function probe(exec: Exec, save: string): Promise<Probe> {
  const r = await exec(save, []);
  if (r.code !== 0) return { usable: false, ours: false, rules: false, error: r.stderr.trim() || `exit ${r.code}` };
  let ours = false;
  let rules = false;
  for (const t of parseSave(r.stdout).values()) {
    if (t.rules.length > 0) rules = true;
    for (const c of t.chains.keys()) {
      if (c.startsWith(OWN_CHAIN_PREFIX)) ours = true;
      if (!BUILT_IN.has(c)) rules = true;
    }
  }
  return { usable: true, ours, rules, error: '' };
}

/**
 * Picks the back end for one family in the target namespace, as istio-iptables does: the one
 * that already holds rules wins (legacy first, since a node on legacy leaves its rules there),
 * else nft when it works, else legacy, else the unsuffixed binaries. One already holding our
 * chains wins over both, so a re-run or cleanup lands where the first run put them. Empty
 * tables do not count as rules: probing alone instantiates them in legacy.
 */
export async function detectBackend(exec: Exec, family: IpFamily, force?: BackendKind): Promise<Backend> {
  if (force) {
    const b = backend(force, family, force === 'legacy' ? '-legacy' : '-nft');
    const p = await probe(exec, b.save);
    if (!p.usable) throw new MeshError('UNAVAILABLE', `forced iptables back end ${force} is not usable: ${b.save}: ${p.error}`);
    return b;
  }
  const legacy = backend('legacy', family, '-legacy');
  const nft = backend('nft', family, '-nft');
  const [pl, pn] = await Promise.all([probe(exec, legacy.save), probe(exec, nft.save)]);
  if (pl.ours) return legacy;
  if (pn.ours) return nft;
  if (pl.rules) return legacy;
  if (pn.usable) return nft;
  if (pl.usable) return legacy;
  // Distributions without the suffixed names (alternatives-less images): ask the plain binary.
  const plain = binaries(family, '');
  const v = await exec(plain.iptables, ['--version']);
  if (v.code === 0) {
    const kind: BackendKind = v.stdout.includes('nf_tables') ? 'nft' : 'legacy';
    return backend(kind, family, '');
  }
  throw new MeshError(
    'UNAVAILABLE',
    `no usable ${family === 4 ? 'iptables' : 'ip6tables'} found (legacy: ${pl.error}; nft: ${pn.error}; ${plain.iptables}: ${v.stderr.trim()}); install the iptables package`,
  );
}
