/**
 * Prints how much of meshpilot's Envoy output equals istiod's, resource by resource, over every
 * committed istiod corpus (test/scenarios/whole): per scenario and overall, the share of equal
 * leaves and resources, then the largest groups of differences not listed as deliberate.
 *
 *   npx tsx scripts/istiod-similarity.ts [--top N] [--all] [--diff <corpus/scenario>] [corpus ...]
 *
 * `--all` counts deliberate differences in the top groups too; `--diff` prints every unexplained
 * difference of scenarios whose `corpus/scenario` contains the given text.
 */
import { CORPORA, loadCases, type CorpusName } from '../test/scenarios/whole/corpora.js';
import { DELIBERATE } from '../test/scenarios/whole/deliberate.js';
import { compareCase, formatDiff, formatTotals, topShapes, totals } from '../test/scenarios/whole/similarity.js';

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const opt = (name: string): string | undefined => {
    const i = args.indexOf(name);
    return i < 0 ? undefined : args.splice(i, 2)[1];
  };
  const top = Number(opt('--top') ?? 25);
  const diff = opt('--diff');
  const all = args.includes('--all');
  const corpora = args.filter((a) => !a.startsWith('--'));
  const unknown = corpora.filter((c) => !(c in CORPORA));
  if (unknown.length > 0) throw new Error(`unknown corpus ${unknown.join(', ')}; known: ${Object.keys(CORPORA).join(', ')}`);
  const results = (await loadCases(corpora.length > 0 ? (corpora as CorpusName[]) : undefined)).map((c) => compareCase(c, DELIBERATE));
  const { perScenario, overall } = totals(results);
  for (const [k, t] of perScenario) console.log(formatTotals(k, t));
  console.log(formatTotals('OVERALL', overall));
  const pool = results.flatMap((r) => (all ? r.cmp.diffs : r.unexplained));
  console.log(`\nlargest difference groups (${all ? 'all' : 'not listed as deliberate'}; leaves):`);
  for (const l of topShapes(pool, top)) console.log(l);
  if (diff !== undefined) {
    for (const r of results.filter((x) => `${x.c.corpus}/${x.c.scenario}`.includes(diff)))
      for (const d of r.unexplained) console.log(formatDiff(r.c, d));
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
