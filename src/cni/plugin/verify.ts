import { detectBackend } from '../backend.js';
import type { Exec } from '../exec.js';
import type { Rule, RuleSet } from '../iptables/rules.js';

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
