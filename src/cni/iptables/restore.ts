import { BUILT_IN, finalJumpTarget, type Rule, type Table } from './rules.js';

/** `-A chain spec` / `-I chain N spec`, the text both iptables-restore and Istio's goldens use. */
export function ruleLine(r: Rule): string {
  const head = r.insertAt === undefined ? ['-A', r.chain] : ['-I', r.chain, String(r.insertAt)];
  return [...head, ...r.spec].join(' ');
}

/**
 * Renders one family's rules as iptables-restore input exactly as istio-iptables does: per table
 * (sorted by name, tables without lines left out) `* table`, a `-N` for every non-built-in chain
 * in order of first use and then for every chain only jumped to, the rules, `COMMIT`.
 *
 * `prelude` lines (the runner's removal of an earlier run: -D/-F/-X) go first in their table, so
 * removal and re-creation land in the same per-table commit.
 */
export function renderRestore(rules: readonly Rule[], prelude: ReadonlyMap<Table, readonly string[]> = new Map()): string {
  const lines = new Map<Table, string[]>();
  const at = (t: Table): string[] => {
    let l = lines.get(t);
    if (!l) lines.set(t, (l = []));
    return l;
  };
  for (const [t, pre] of prelude) if (pre.length > 0) at(t).push(...pre);
  const declared = new Set<string>();
  const declare = (table: Table, chain: string): void => {
    const key = `${chain}:${table}`;
    if (declared.has(key) || BUILT_IN.has(chain)) return;
    declared.add(key);
    at(table).push(`-N ${chain}`);
  };
  for (const r of rules) declare(r.table, r.chain);
  for (const r of rules) {
    const target = finalJumpTarget(r.spec);
    if (target !== undefined) declare(r.table, target);
  }
  for (const r of rules) at(r.table).push(ruleLine(r));
  let out = '';
  for (const t of [...lines.keys()].sort()) {
    out += `* ${t}\n${(lines.get(t) ?? []).join('\n')}\nCOMMIT\n`;
  }
  return out;
}

export interface SavedRule {
  readonly chain: string;
  /** The save line as printed, `-A CHAIN ...` (quoting preserved, so `-D` can reuse it). */
  readonly text: string;
  readonly tokens: readonly string[];
}

export interface SavedTable {
  /** Chain name → policy (`-` for user chains). */
  readonly chains: ReadonlyMap<string, string>;
  readonly rules: readonly SavedRule[];
}

/** Splits a save line into tokens, honouring the double quotes iptables-save puts around strings. */
export function tokenize(line: string): string[] {
  const out: string[] = [];
  let cur = '';
  let inQuote = false;
  let has = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (inQuote) {
      if (c === '\\' && i + 1 < line.length) {
        cur += line[++i];
      } else if (c === '"') {
        inQuote = false;
      } else {
        cur += c;
      }
    } else if (c === '"') {
      inQuote = true;
      has = true;
    } else if (c === ' ' || c === '\t') {
      if (has) out.push(cur);
      cur = '';
      has = false;
    } else {
      cur += c;
      has = true;
    }
  }
  if (has) out.push(cur);
  return out;
}

/** Parses iptables-save output into tables (comments, counters and warnings ignored). */
export function parseSave(text: string): Map<string, SavedTable> {
  const tables = new Map<string, { chains: Map<string, string>; rules: SavedRule[] }>();
  let cur: { chains: Map<string, string>; rules: SavedRule[] } | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    if (line.startsWith('*')) {
      const name = line.slice(1).trim();
      cur = tables.get(name) ?? { chains: new Map(), rules: [] };
      tables.set(name, cur);
    } else if (line === 'COMMIT') {
      cur = undefined;
    } else if (cur && line.startsWith(':')) {
      const [name, policy] = line.slice(1).split(/\s+/);
      if (name) cur.chains.set(name, policy ?? '-');
    } else if (cur && line.startsWith('-A ')) {
      const tokens = tokenize(line);
      cur.rules.push({ chain: tokens[1] ?? '', text: line, tokens });
    }
  }
  return tables;
}

/** iptables-save text without what changes between runs (comments, counters), for comparisons. */
export function normalizeSave(text: string): string {
  return text
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.startsWith('#'))
    .map((l) => l.replace(/\s\[\d+:\d+\]$/, ''))
    .join('\n');
}

/** Both families' restore inputs (and TPROXY's routing) as one text: dry-run output and goldens. */
export function renderRuleSet(rs: {
  ipv4: readonly Rule[];
  ipv6: readonly Rule[];
  enableIPv6: boolean;
  tproxyRoute?: { mark: number; table: number };
}): string {
  let out = `# IPv4: iptables-restore --noflush\n${renderRestore(rs.ipv4)}`;
  if (rs.enableIPv6) out += `# IPv6: ip6tables-restore --noflush\n${renderRestore(rs.ipv6)}`;
  if (rs.tproxyRoute) {
    const { mark, table } = rs.tproxyRoute;
    out += `# TPROXY routing: ip rule add fwmark ${mark} lookup ${table}; ip route add local default dev lo table ${table}\n`;
  }
  return out;
}
