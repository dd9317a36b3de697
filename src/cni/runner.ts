import { MeshError } from '../util/errors.js';
import { detectBackend, type Backend, type BackendKind, type IpFamily } from './backend.js';
import { describeCommand, type Exec } from './exec.js';
import { parseSave, renderRestore, type SavedTable } from './iptables/restore.js';
import { jumpTarget, OWN_CHAIN_PREFIX, type Rule, type RuleSet, type Table } from './iptables/rules.js';
import { applyRoutes, removeRoutes } from './routes.js';

/**
 * Applies a rule set with iptables-restore --noflush, one input per family. Each input first
 * removes what an earlier run left (jumps into our chains, our chains, and any of this config's
 * rules in built-in chains) and then adds the new rules, so a re-run ends in the same state and
 * nothing but ISTIO_* chains and rules referring to them is touched. iptables-restore commits per
 * table, so a failure part-way is rolled back by restoring the tables' snapshot.
 */

export interface RunnerOptions {
  readonly exec: Exec;
  /** FORCE_IPTABLES_BINARY. */
  readonly force?: BackendKind;
}

export interface FamilyReport {
  readonly family: 'ipv4' | 'ipv6';
  readonly backend: BackendKind;
  readonly restore: string;
  readonly removedRules: number;
  /** `table/chain`. */
  readonly removedChains: readonly string[];
  readonly addedChains: readonly string[];
  readonly addedRules: number;
  /** The exact iptables-restore input that was applied. */
  readonly input: string;
}

export interface CaptureReport {
  readonly action: 'apply' | 'cleanup';
  readonly families: readonly FamilyReport[];
  /** `ip` commands run for TPROXY routing and the IPv6 passthrough address. */
  readonly routes: readonly string[];
}

interface Plan {
  readonly backend: Backend;
  /** iptables-save before, for rollback. */
  readonly snapshot: string;
  readonly input: string;
  readonly report: FamilyReport;
}

/** Our leftovers in `tables` plus this config's rules already present in built-in chains. */
async function removalPrelude(exec: Exec, b: Backend, tables: ReadonlyMap<string, SavedTable>, planned: readonly Rule[]) {
  const prelude = new Map<Table, string[]>();
  const removedChains: string[] = [];
  let removedRules = 0;
  for (const [name, t] of tables) {
    const table = name as Table;
    const deletes = new Set<string>();
    for (const r of t.rules) {
      if (r.chain.startsWith(OWN_CHAIN_PREFIX)) continue;
      if (jumpTarget(r.tokens)?.startsWith(OWN_CHAIN_PREFIX)) deletes.add(`-D${r.text.slice(2)}`);
    }
    // Non-jump rules we add to built-in chains (-c/-k RETURNs, TPROXY marks) carry no ISTIO_
    // name; iptables -C (a semantic match, immune to save's re-spelling) finds them.
    for (const r of planned) {
      if (r.table !== table || r.chain.startsWith(OWN_CHAIN_PREFIX) || jumpTarget(r.spec)?.startsWith(OWN_CHAIN_PREFIX)) continue;
      if (!t.rules.some((s) => s.chain === r.chain)) continue;
      const check = await exec(b.iptables, [...b.waitArgs, '-t', table, '-C', r.chain, ...r.spec]);
      if (check.code === 0) deletes.add(['-D', r.chain, ...r.spec].join(' '));
    }
    const chains = [...t.chains.keys()].filter((c) => c.startsWith(OWN_CHAIN_PREFIX));
    const lines = [...deletes, ...chains.map((c) => `-F ${c}`), ...chains.map((c) => `-X ${c}`)];
    if (lines.length > 0) prelude.set(table, lines);
    removedRules += deletes.size;
    removedChains.push(...chains.map((c) => `${table}/${c}`));
  }
  return { prelude, removedChains, removedRules };
}

async function plan(exec: Exec, family: IpFamily, rules: readonly Rule[], opts: RunnerOptions, cleanupOnly: boolean): Promise<Plan> {
  const b = await detectBackend(exec, family, opts.force);
  const saved = await exec(b.save, []);
  if (saved.code !== 0) throw new MeshError('UNAVAILABLE', `${b.save} failed: ${saved.stderr.trim()}`);
  const tables = parseSave(saved.stdout);
  const { prelude, removedChains, removedRules } = await removalPrelude(exec, b, tables, rules);
  const body = cleanupOnly ? [] : rules;
  const input = renderRestore(body, prelude);
  const addedChains: string[] = [];
  let table = '';
  for (const line of input.split('\n')) {
    if (line.startsWith('* ')) table = line.slice(2);
    else if (line.startsWith('-N ')) addedChains.push(`${table}/${line.slice(3)}`);
  }
  return {
    backend: b,
    snapshot: saved.stdout,
    input,
    report: {
      family: family === 4 ? 'ipv4' : 'ipv6',
      backend: b.kind,
      restore: b.restore,
      removedRules,
      removedChains,
      addedChains,
      addedRules: body.length,
      input,
    },
  };
}

async function restore(exec: Exec, b: Backend, input: string, args: readonly string[]): Promise<void> {
  const argv = [...b.waitArgs, ...args];
  const r = await exec(b.restore, argv, input);
  if (r.code !== 0) {
    throw new MeshError('INTERNAL', `${describeCommand(b.restore, argv)} failed (exit ${r.code}): ${r.stderr.trim()}\ninput:\n${input}`);
  }
}

/** Puts back the snapshot of every table the plan touched (a table absent before is emptied). */
async function rollback(exec: Exec, p: Plan): Promise<void> {
  const touched = new Set([...p.input.matchAll(/^\* (\w+)$/gm)].map((m) => m[1] ?? ''));
  let text = '';
  for (const t of touched) {
    const section = new RegExp(`^\\*${t}\\n[\\s\\S]*?^COMMIT$`, 'm').exec(p.snapshot);
    text += section ? `${section[0]}\n` : `*${t}\nCOMMIT\n`;
  }
  if (text !== '') await restore(exec, p.backend, text, []);
}

async function run(rs: RuleSet | undefined, opts: RunnerOptions, cleanupOnly: boolean): Promise<CaptureReport> {
  const plans = [await plan(opts.exec, 4, rs?.ipv4 ?? [], opts, cleanupOnly)];
  // IPv6 is programmed only when enabled; leftovers of an earlier IPv6 run are removed anyway.
  const want6 = !cleanupOnly && rs?.enableIPv6 === true;
  const six = want6
    ? await plan(opts.exec, 6, rs.ipv6, opts, false)
    : await plan(opts.exec, 6, rs?.ipv6 ?? [], opts, true).catch(() => undefined); // no ip6tables: nothing of ours there
  if (six && (want6 || six.report.removedChains.length > 0 || six.report.removedRules > 0)) plans.push(six);

  const touched: Plan[] = [];
  const undo = async (): Promise<void> => {
    for (const p of touched.reverse()) await rollback(opts.exec, p).catch(() => undefined);
  };
  const routes: string[] = [];
  try {
    for (const p of plans) {
      if (p.input === '') continue;
      await restore(opts.exec, p.backend, p.input, ['--noflush', '--test']);
      touched.push(p); // from here a failure may have committed some tables
      await restore(opts.exec, p.backend, p.input, ['--noflush']);
    }
    if (rs) routes.push(...(cleanupOnly ? await removeRoutes(opts.exec, rs) : await applyRoutes(opts.exec, rs)));
  } catch (err) {
    if (!cleanupOnly) await undo();
    throw err;
  }
  return { action: cleanupOnly ? 'cleanup' : 'apply', families: plans.map((p) => p.report), routes };
}

/** Programs the rule set (replacing whatever an earlier run left). */
export function applyCapture(rs: RuleSet, opts: RunnerOptions): Promise<CaptureReport> {
  return run(rs, opts, false);
}

/**
 * Removes every ISTIO_* chain and every rule jumping into one, in both families. With the rule
 * set of the config that was applied, also that config's non-jump rules in built-in chains and
 * its TPROXY routing.
 */
export function removeCapture(rs: RuleSet | undefined, opts: RunnerOptions): Promise<CaptureReport> {
  return run(rs, opts, true);
}

/** A few lines for a person (the init container's log). */
export function formatReport(r: CaptureReport): string {
  const lines = r.families.map((f) => {
    const removed = `removed ${f.removedChains.length} chains, ${f.removedRules} jump/built-in rules`;
    return r.action === 'cleanup'
      ? `${f.family} (${f.backend}, ${f.restore}): ${removed}`
      : `${f.family} (${f.backend}, ${f.restore}): ${removed}; added ${f.addedChains.length} chains, ${f.addedRules} rules`;
  });
  if (lines.length === 0) lines.push('nothing to do');
  return [...lines, ...r.routes.map((c) => `ran: ${c}`)].join('\n');
}
