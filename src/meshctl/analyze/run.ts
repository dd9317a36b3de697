/** Runs analyzers over a snapshot and applies istioctl's namespace filter, suppressions and ordering. */
import type { Analyzer, Message, Snapshot } from './model.js';

export interface Suppression {
  readonly code: string;
  /** Glob over the resource name, `Kind ns/name` (also matched against the older `Kind name.ns`). */
  readonly resource: RegExp;
}

/** Parses `IST0102=Namespace default`; returns a one-line error for anything else. */
export function parseSuppression(s: string): Suppression | string {
  const i = s.indexOf('=');
  const code = s.slice(0, i).trim();
  const res = s.slice(i + 1).trim();
  if (i < 0 || !/^IST\d{4}$/.test(code) || res === '') {
    return `invalid --suppress "${s}": expected <code>=<resource>, e.g. --suppress "IST0102=Namespace default"`;
  }
  const re = new RegExp(
    `^${res
      .split('*')
      .map((p) => p.replace(/[.+?^${}()|[\]\\/]/g, '\\$&'))
      .join('.*')}$`,
  );
  return { code, resource: re };
}

export function isSuppressed(m: Message, sups: readonly Suppression[]): boolean {
  const r = m.resource;
  const names =
    r.namespace === ''
      ? [`${r.kind} ${r.name}`]
      : [`${r.kind} ${r.namespace}/${r.name}`, `${r.kind} ${r.name}.${r.namespace}`, `${r.kind} ${r.name}`];
  return sups.some((s) => s.code === m.type.code && names.some((n) => s.resource.test(n)));
}

export interface RunOptions {
  /** Only messages about resources in this namespace (undefined: all namespaces). */
  readonly namespace: string | undefined;
  readonly suppress: readonly Suppression[];
  /**
   * Called when an analyzer throws (an object that failed validation may break what an analyzer
   * assumes); the other analyzers still run. Without it the error propagates.
   */
  readonly onAnalyzerError?: (analyzer: string, err: unknown) => void;
}

export function runAnalyzers(analyzers: readonly Analyzer[], s: Snapshot, opts: RunOptions): Message[] {
  const out: Message[] = [];
  for (const a of analyzers) {
    try {
      a.analyze(s, (m) => out.push(m));
    } catch (err) {
      if (!opts.onAnalyzerError) throw err;
      opts.onAnalyzerError(a.name, err);
    }
  }
  const seen = new Set<string>();
  return (
    out
      // A Namespace (cluster-scoped) belongs to the analysis of the namespace it is.
      .filter(
        (m) =>
          opts.namespace === undefined ||
          (m.resource.kind === 'Namespace' && m.resource.namespace === '' ? m.resource.name : m.resource.namespace) === opts.namespace,
      )
      .filter((m) => !isSuppressed(m, opts.suppress))
      .filter((m) => {
        // One analyzer may find the same problem twice (e.g. a host in two routes); istioctl prints it once.
        const k = `${m.type.code}|${m.resource.kind}|${m.resource.namespace}|${m.resource.name}|${m.line ?? ''}|${JSON.stringify(m.args)}`;
        if (seen.has(k)) return false;
        seen.add(k);
        return true;
      })
      .sort(compareMessages)
  );
}

/** istioctl sorts by level (errors first), then code, then resource, then text. */
function compareMessages(a: Message, b: Message): number {
  const rank = { Error: 0, Warning: 1, Info: 2 } as const;
  return (
    rank[a.type.level] - rank[b.type.level] ||
    a.type.code.localeCompare(b.type.code) ||
    `${a.resource.kind} ${a.resource.namespace}/${a.resource.name}`.localeCompare(
      `${b.resource.kind} ${b.resource.namespace}/${b.resource.name}`,
    ) ||
    (a.line ?? 0) - (b.line ?? 0)
  );
}
