import { MeshError } from '../util/errors.js';
import { describeCommand, type Exec } from './exec.js';
import type { RuleSet } from './iptables/rules.js';

/**
 * The non-iptables half of istio-iptables (tools/common/tproxy): TPROXY's policy routing
 * (`fwmark MARK → table TABLE`, whose only route delivers everything locally via lo) and, with
 * IPv6, the ::6 address on lo that Envoy's inbound passthrough binds from (IPv4 has 127.0.0.6
 * through 127/8 already). Done with `ip` (iproute2), idempotently.
 */

async function ip(exec: Exec, args: readonly string[], ran: string[], tolerate?: RegExp): Promise<boolean> {
  const r = await exec('ip', args);
  ran.push(describeCommand('ip', args));
  if (r.code === 0) return true;
  if (tolerate?.test(r.stderr)) return false;
  throw new MeshError('INTERNAL', `${describeCommand('ip', args)} failed (exit ${r.code}): ${r.stderr.trim()}`);
}

function families(rs: RuleSet): Array<'-4' | '-6'> {
  return rs.enableIPv6 ? ['-4', '-6'] : ['-4'];
}

async function hasRule(exec: Exec, fam: '-4' | '-6', mark: number, table: number): Promise<boolean> {
  const r = await exec('ip', [fam, 'rule', 'show']);
  const hex = `0x${mark.toString(16)}`;
  return r.code === 0 && r.stdout.split('\n').some((l) => new RegExp(`fwmark ${hex}(/0xffffffff)? lookup ${table}\\b`).test(l));
}

/** Adds what is missing; returns the commands run. */
export async function applyRoutes(exec: Exec, rs: RuleSet): Promise<string[]> {
  const ran: string[] = [];
  if (rs.enableIPv6) await ip(exec, ['-6', 'addr', 'replace', '::6/128', 'dev', 'lo'], ran);
  const route = rs.tproxyRoute;
  if (!route) return ran;
  for (const fam of families(rs)) {
    if (!(await hasRule(exec, fam, route.mark, route.table))) {
      await ip(exec, [fam, 'rule', 'add', 'fwmark', String(route.mark), 'lookup', String(route.table)], ran);
    }
    await ip(exec, [fam, 'route', 'replace', 'local', 'default', 'dev', 'lo', 'table', String(route.table)], ran);
  }
  return ran;
}

/** Removes the TPROXY routing of `rs` (every copy of the rule); the ::6 address stays, as in Istio. */
export async function removeRoutes(exec: Exec, rs: RuleSet): Promise<string[]> {
  const ran: string[] = [];
  const route = rs.tproxyRoute;
  if (!route) return ran;
  for (const fam of families(rs)) {
    for (let i = 0; i < 16 && (await hasRule(exec, fam, route.mark, route.table)); i++) {
      await ip(exec, [fam, 'rule', 'del', 'fwmark', String(route.mark), 'lookup', String(route.table)], ran);
    }
    await ip(exec, [fam, 'route', 'flush', 'table', String(route.table)], ran, /./);
  }
  return ran;
}
