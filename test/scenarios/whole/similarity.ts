/**
 * Leaf similarity of meshpilot to istiod over the corpora: per case, per scenario and overall, and
 * which differences the deliberate list explains.
 */
import type { Case } from './corpora.js';
import { explains, type Deliberate } from './deliberate.js';
import { compareResources, pathShape, percent, type Comparison, type LeafDiff } from './leaves.js';

export interface CaseResult {
  readonly c: Case;
  readonly cmp: Comparison;
  /** Differences no deliberate entry explains. */
  readonly unexplained: LeafDiff[];
}

export function compareCase(c: Case, deliberate: readonly Deliberate[], used?: Set<Deliberate>): CaseResult {
  const cmp = compareResources(c.istiod, c.meshpilot);
  const unexplained = cmp.diffs.filter((d) => {
    const hit = deliberate.filter((k) => explains(k, c, d));
    for (const k of hit) used?.add(k);
    return hit.length === 0;
  });
  return { c, cmp, unexplained };
}

export interface Totals {
  leaves: number;
  equalLeaves: number;
  resources: number;
  equalResources: number;
  explainedLeaves: number;
}

const zero = (): Totals => ({ leaves: 0, equalLeaves: 0, resources: 0, equalResources: 0, explainedLeaves: 0 });

function add(t: Totals, r: CaseResult): void {
  t.leaves += r.cmp.leaves;
  t.equalLeaves += r.cmp.equalLeaves;
  t.resources += r.cmp.resources;
  t.equalResources += r.cmp.equalResources;
  const unexplained = new Set(r.unexplained);
  t.explainedLeaves += r.cmp.diffs.filter((d) => !unexplained.has(d)).reduce((n, d) => n + d.weight, 0);
}

/** Totals per `corpus/scenario` and overall. */
export function totals(results: readonly CaseResult[]): { perScenario: Map<string, Totals>; overall: Totals } {
  const perScenario = new Map<string, Totals>();
  const overall = zero();
  for (const r of results) {
    const k = `${r.c.corpus}/${r.c.scenario}`;
    const t = perScenario.get(k) ?? zero();
    perScenario.set(k, t);
    add(t, r);
    add(overall, r);
  }
  return { perScenario, overall };
}

export function formatTotals(label: string, t: Totals): string {
  return (
    `${label.padEnd(58)} ${percent(t.equalLeaves, t.leaves).padStart(5)} % leaves equal (${t.equalLeaves}/${t.leaves}), ` +
    `${percent(t.equalResources, t.resources).padStart(5)} % resources equal (${t.equalResources}/${t.resources}), ${t.explainedLeaves} leaves listed as deliberate`
  );
}

/** Difference shapes by leaf count, largest first: where to work next. */
export function topShapes(diffs: readonly LeafDiff[], n: number): string[] {
  const by = new Map<string, { weight: number; example: LeafDiff }>();
  for (const d of diffs) {
    const k = d.path === '' ? `${d.type} (whole resource, ${d.istiod ? 'istiod only' : 'meshpilot only'})` : pathShape(d);
    const e = by.get(k) ?? { weight: 0, example: d };
    e.weight += d.weight;
    by.set(k, e);
  }
  return [...by]
    .sort((a, b) => b[1].weight - a[1].weight)
    .slice(0, n)
    .map(
      ([k, e]) =>
        `${String(e.weight).padStart(6)}  ${k}\n          e.g. ${e.example.type} ${e.example.name} ${e.example.path}: istiod ${e.example.istiod ?? '(absent)'} / meshpilot ${e.example.meshpilot ?? '(absent)'}`,
    );
}

export function formatDiff(c: Case, d: LeafDiff): string {
  return `${c.corpus}/${c.scenario} ${c.proxy}: ${d.type} ${d.name} ${d.path || '(whole resource)'}\n    istiod:    ${d.istiod ?? '(absent)'}\n    meshpilot: ${d.meshpilot ?? '(absent)'}`;
}
