import { detectBackend } from '../backend.js';
import type { Exec } from '../exec.js';
import { parseSave } from '../iptables/restore.js';
import { OWN_CHAIN_PREFIX, type Rule, type RuleSet } from '../iptables/rules.js';

/**
 * CHECK: every rule of the pod's rule set is present, asked with `iptables -C` (a semantic match,
 * immune to how iptables-save spells a rule). Returns the missing ones as `table chain spec`.
 */
export async function missingRules(exec: Exec, rs: RuleSet): Promise<string[]> {
  const missing: string[] = [];
  const families: Array<[4 | 6, readonly Rule[]]> = [[4, rs.ipv4]];
  if (rs.enableIPv6) families.push([6, rs.ipv6]);
  for (const [family, rules] of families) {
    const b = await detectBackend(exec, family);
    for (const r of rules) {
      const res = await exec(b.iptables, [...b.waitArgs, '-t', r.table, '-C', r.chain, ...r.spec]);
      if (res.code !== 0) missing.push(`${family === 4 ? 'iptables' : 'ip6tables'} -t ${r.table} ${r.chain} ${r.spec.join(' ')}`);
    }
  }
  return missing;
}

/**
 * CHECK of a pod that must have no capture: the ISTIO_* chains in its namespace, on either back
 * end and family, as `iptables-nft -t nat ISTIO_OUTPUT`. A back end whose save fails holds none.
 */
export async function ownChainsPresent(exec: Exec): Promise<string[]> {
  const found: string[] = [];
  for (const base of ['iptables', 'ip6tables']) {
    for (const kind of ['legacy', 'nft']) {
      const r = await exec(`${base}-${kind}-save`, []);
      if (r.code !== 0) continue;
      for (const [table, t] of parseSave(r.stdout)) {
        for (const chain of t.chains.keys()) if (chain.startsWith(OWN_CHAIN_PREFIX)) found.push(`${base}-${kind} -t ${table} ${chain}`);
      }
    }
  }
  return found;
}
