/**
 * meshpilot's Envoy output held to istiod's WHOLE: every committed istiod corpus (bookinfo, every
 * proxy; EnvoyFilter, base and each scenario; Gateway API; Telemetry; WasmPlugin), each resource
 * flattened to leaves and matched by type and name (test/scenarios/whole). Any leaf that differs
 * fails unless test/scenarios/whole/deliberate.ts lists it with its reason; each listed entry must
 * still match something. Prints the share of equal leaves and resources per scenario and overall
 * (also: `npx tsx scripts/istiod-similarity.ts`).
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import type { JsonValue } from '@bufbuild/protobuf';
import { CORPORA, loadCases, type Case } from './whole/corpora.js';
import { DELIBERATE, type Deliberate } from './whole/deliberate.js';
import { percent } from './whole/leaves.js';
import { compareCase, formatDiff, formatTotals, totals, type CaseResult } from './whole/similarity.js';

/** Floors the comparison must stay above (share of equal leaves, %). */
const MIN_OVERALL = 95;
const MIN_SCENARIO = 85;

let cases: Case[] = [];
let results: CaseResult[] = [];
const used = new Set<Deliberate>();

before(async () => {
  cases = await loadCases();
  results = cases.map((c) => compareCase(c, DELIBERATE, used));
});

describe('meshpilot equals istiod, resource by resource', () => {
  test('every corpus is compared, with istiod resources of every kind it captured', () => {
    const corpora = new Set(cases.map((c) => c.corpus));
    assert.deepEqual([...corpora].sort(), Object.keys(CORPORA).sort());
    const types = new Set(cases.flatMap((c) => c.istiod.map((r) => r.type)));
    for (const t of ['listener', 'route', 'cluster', 'endpoint', 'ecds', 'hcm']) assert.ok(types.has(t), `no istiod ${t} compared`);
    assert.ok(
      cases.some((c) => c.corpus === 'bookinfo' && c.proxy === 'ingress-gateway'),
      'the bookinfo gateway is compared',
    );
  });

  test('no difference but the deliberate ones; similarity per scenario and overall', (t) => {
    const { perScenario, overall } = totals(results);
    for (const [k, s] of perScenario) t.diagnostic(formatTotals(k, s));
    t.diagnostic(formatTotals('OVERALL', overall));
    const unexplained = results.flatMap((r) => r.unexplained.map((d) => formatDiff(r.c, d)));
    assert.equal(
      unexplained.length,
      0,
      `${unexplained.length} differences from istiod not listed in whole/deliberate.ts:\n${unexplained.slice(0, 40).join('\n')}`,
    );
    assert.ok(
      (100 * overall.equalLeaves) / overall.leaves >= MIN_OVERALL,
      `overall ${percent(overall.equalLeaves, overall.leaves)} % of leaves equal, under ${MIN_OVERALL} %`,
    );
    for (const [k, s] of perScenario) {
      assert.ok(
        (100 * s.equalLeaves) / s.leaves >= MIN_SCENARIO,
        `${k}: ${percent(s.equalLeaves, s.leaves)} % of leaves equal, under ${MIN_SCENARIO} %`,
      );
    }
  });

  test('every deliberate difference still occurs', () => {
    const stale = DELIBERATE.filter((k) => !used.has(k)).map((k) => k.id);
    assert.deepEqual(stale, [], 'these deliberate differences no longer occur: remove them from whole/deliberate.ts');
  });

  test('the comparison sees a changed value, a missing leaf, a reordered list and a missing resource', () => {
    const c = cases.find((x) => x.corpus === 'bookinfo' && x.proxy === 'productpage')!;
    const swap = (j: JsonValue): JsonValue =>
      JSON.parse(
        JSON.stringify(j).replace('"lbPolicy":"LEAST_REQUEST"', '"lbPolicy":"RANDOM"').replace('"normalizePath":true,', ''),
      ) as JsonValue;
    const mutated: Case = {
      ...c,
      istiod: c.istiod
        .filter((r) => r.name !== 'BlackHoleCluster')
        .map((r) => {
          if (r.type === 'listener' && r.name === 'virtualInbound') {
            const l = swap(r.json) as { filterChains: JsonValue[] };
            return { ...r, json: { ...l, filterChains: [...l.filterChains].reverse() } };
          }
          return { ...r, json: swap(r.json) };
        }),
    };
    const paths = compareCase(mutated, DELIBERATE).unexplained.map((d) => `${d.type} ${d.name} ${d.path}`);
    for (const want of [
      /^cluster \S+ lbPolicy$/,
      /normalizePath$/,
      /^listener virtualInbound filterChains\.@order$/,
      /^cluster BlackHoleCluster $/,
    ]) {
      assert.ok(
        paths.some((p) => want.test(p)),
        `no unexplained difference matching ${want} among ${paths.length}:\n${paths.slice(0, 20).join('\n')}`,
      );
    }
  });
});
