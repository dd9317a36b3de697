/**
 * meshpilot's EnvoyFilter patches held to istiod's. For every scenario of
 * testdata/scenarios/envoyfilter (each applyTo and operation, order, proxy matching), and for the
 * `web` sidecar and the ingress gateway, what the EnvoyFilter changed against the base mesh on
 * meshpilot's side must equal what it changed on istiod's (captured by
 * `npx tsx scripts/istiod-golden-envoyfilter.ts`, committed; istiod does not run here).
 *
 * Compared: per section (listeners, routes, clusters), the names of resources removed, and for
 * every resource changed or added on either side the change set (json-changes.ts): each changed
 * path with its new value, named lists (filters, chains, vhosts, routes) keyed by name with their
 * order compared on the names both sides have, other lists by the elements added and removed.
 * Not compared: the unpatched parts (meshpilot's base output differs from istiod's where
 * test/scenarios/istiod-parity.test.ts says), endpoints, and values a patch merged into a field
 * whose base value differs (only the new value is compared).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { JsonObject } from '@bufbuild/protobuf';
import { ClusterSchema } from '../../../src/gen/envoy/config/cluster/v3/cluster_pb.js';
import { ListenerSchema } from '../../../src/gen/envoy/config/listener/v3/listener_pb.js';
import { RouteConfigurationSchema } from '../../../src/gen/envoy/config/route/v3/route_pb.js';
import { registerEnvoyGenerators } from '../../../src/networking/envoy-generators.js';
import { configCredentials } from '../../../src/networking/gateway/config-credentials.js';
import { createLogger } from '../../../src/util/log.js';
import { GeneratorRegistry } from '../../../src/xds/generator.js';
import { xdsJsonRegistry } from '../../../src/model/json-registry.js';
import { toOpaqueJson } from '../../support/opaque-json.js';
import { generateFor, loadScenario, proxyFor } from '../../support/scenario.js';
import {
  EF_BASE,
  EF_DIR,
  EF_PROXIES,
  scenarioConfigDir,
  scenarioNames,
  SECTIONS,
  type ProxyJson,
  type ResourceDelta,
  type Section,
} from './envoyfilter-fixture.js';
import { compareChanges, jsonChanges, type Changes } from './json-changes.js';

const registry = xdsJsonRegistry();
/** Any types outside meshpilot's registry keep only their `@type` on both sides (as in the golden files). */
const opaque = new Set<string>();
const nameOf = (r: JsonObject): string => String(r.name ?? '');

/** meshpilot's output for every proxy of one config directory, as proto3 JSON; warnings logged by the patcher. */
async function meshpilot(dir: string): Promise<{ configs: Map<string, ProxyJson>; warnings: string[] }> {
  const warnings: string[] = [];
  const logger = createLogger({ level: 'warn', sink: (line) => warnings.push(line) });
  const { push } = await loadScenario(dir);
  const generators = registerEnvoyGenerators(new GeneratorRegistry(), { logger, credentials: (p) => configCredentials(p.config, logger) });
  const configs = new Map<string, ProxyJson>();
  for (const [name, spec] of Object.entries(EF_PROXIES)) {
    // As the golden script's node: the proxy claims istiod's release line (proxyVersion matches).
    const g = generateFor(push, generators, proxyFor({ ...spec, metadata: { ISTIO_VERSION: '1.31.0' } }));
    configs.set(name, {
      listeners: g.listeners.map((l) => toOpaqueJson(ListenerSchema, l as never, registry, opaque) as JsonObject),
      routes: g.routes.map((r) => toOpaqueJson(RouteConfigurationSchema, r as never, registry, opaque) as JsonObject),
      clusters: g.clusters.map((c) => toOpaqueJson(ClusterSchema, c as never, registry, opaque) as JsonObject),
    });
  }
  return { configs, warnings };
}

async function meshpilotFor(scenario: string | undefined): Promise<{ configs: Map<string, ProxyJson>; warnings: string[] }> {
  const s = scenarioConfigDir(scenario);
  try {
    return await meshpilot(s.dir);
  } finally {
    s.cleanup();
  }
}

/** Change sets per resource (`<section> <name>`) of a scenario against base, and removed names. */
function changesOf(
  base: ProxyJson,
  changed: Record<Section, JsonObject[]>,
  removed: Record<Section, string[]>,
): { changes: Map<string, Changes>; removed: string[] } {
  const changes = new Map<string, Changes>();
  for (const s of SECTIONS) {
    const before = new Map(base[s].map((r) => [nameOf(r), r]));
    for (const r of changed[s]) changes.set(`${s} ${nameOf(r)}`, jsonChanges(before.get(nameOf(r)), r));
  }
  return { changes, removed: SECTIONS.flatMap((s) => removed[s].map((n) => `${s} ${n}`)).sort() };
}

/**
 * Changes that are not about the patch, with the reason; each must still match something.
 * Keyed `<proxy> <section> <resource> <path>`.
 */
const NOT_ABOUT_THE_PATCH: readonly { readonly path: RegExp; readonly reason: string }[] = [
  {
    path: /^web routes 80 \.virtualHosts\[reviews\.shop\.svc\.cluster\.local:80\]/,
    reason:
      "istiod's port-80 vhost for every VirtualService host (istiod-parity.test.ts DELIBERATE port-80-virtualservice-hosts): meshpilot has no such vhost for the patch to reach",
  },
];
const used = new Set<RegExp>();

/** Scenarios where istiod changes nothing: a selector that picks nobody; a listener-filter MERGE that istiod panics on. */
const UNCHANGED = new Set(['workload-selector-miss', 'listener-filter-merge']);
/** Scenarios meshpilot reports (istiod's panic, reported instead of silently dropping the listener's patches). */
const EXPECTED_REPORTS: ReadonlyMap<string, RegExp> = new Map([
  ['listener-filter-merge', /LISTENER_FILTER MERGE .* istiod merges into every listener filter and panics/],
]);

/**
 * Scenarios whose istiod result upstream Envoy refuses (the whole listener is NACKed): meshpilot
 * reports the patch and sends the resource unpatched, so it changes nothing where istiod does.
 */
const REFUSED: ReadonlyMap<string, RegExp> = new Map([
  ['http-filter-add', /envoy\.filters\.http\.fault follows the terminal filter envoy\.filters\.http\.router/],
]);

const readJson = <T>(path: string): T => JSON.parse(readFileSync(path, 'utf8')) as T;

describe("EnvoyFilter patches equal istiod's (testdata/scenarios/envoyfilter)", async () => {
  const scenarios = scenarioNames();
  const mpBase = await meshpilotFor(undefined);
  const istiodBase = new Map(Object.keys(EF_PROXIES).map((p) => [p, readJson<ProxyJson>(join(EF_BASE, 'istiod', `${p}.json`))]));

  test('the corpus covers every applyTo meshpilot generates and every operation (at least 20 scenarios)', () => {
    assert.ok(scenarios.length >= 20, `${scenarios.length} scenarios`);
    const yaml = scenarios.map((s) => readFileSync(join(EF_DIR, s, 'config', 'envoyfilter.yaml'), 'utf8')).join('\n');
    for (const a of [
      'LISTENER',
      'FILTER_CHAIN',
      'NETWORK_FILTER',
      'HTTP_FILTER',
      'ROUTE_CONFIGURATION',
      'VIRTUAL_HOST',
      'HTTP_ROUTE',
      'CLUSTER',
      'LISTENER_FILTER',
    ]) {
      assert.match(yaml, new RegExp(`applyTo: ${a}\\n`), a);
    }
    for (const op of ['MERGE', 'ADD', 'REMOVE', 'INSERT_BEFORE', 'INSERT_AFTER', 'INSERT_FIRST', 'REPLACE'])
      assert.match(yaml, new RegExp(`operation: ${op}\\b`), op);
  });

  for (const scenario of scenarios) {
    test(scenario, async () => {
      const mp = await meshpilotFor(scenario);
      const refused = REFUSED.get(scenario);
      if (refused) {
        assert.ok(mp.warnings.length > 0 && mp.warnings.every((w) => refused.test(w)), mp.warnings.join('\n'));
        for (const proxy of Object.keys(EF_PROXIES)) {
          const d = deltaOf(mpBase.configs.get(proxy)!, mp.configs.get(proxy)!);
          assert.deepEqual(
            SECTIONS.flatMap((sec) => [...d.changed[sec].map(nameOf), ...d.removed[sec]]),
            [],
            `${proxy}: nothing patched`,
          );
        }
        const istiodChanged = Object.keys(EF_PROXIES).some((proxy) =>
          SECTIONS.some((sec) => readJson<ResourceDelta>(join(EF_DIR, scenario, 'istiod', `${proxy}.json`)).changed[sec].length > 0),
        );
        assert.ok(istiodChanged, 'istiod did patch (the refusal is a real difference)');
        return;
      }
      const expected = EXPECTED_REPORTS.get(scenario);
      if (expected) assert.ok(mp.warnings.length > 0 && mp.warnings.every((w) => expected.test(w)), mp.warnings.join('\n'));
      else assert.deepEqual(mp.warnings, [], 'no patch was reported invalid');
      let total = 0;
      for (const proxy of Object.keys(EF_PROXIES)) {
        const golden = readJson<ResourceDelta>(join(EF_DIR, scenario, 'istiod', `${proxy}.json`));
        const want = changesOf(istiodBase.get(proxy)!, golden.changed, golden.removed);
        const mpDelta = deltaOf(mpBase.configs.get(proxy)!, mp.configs.get(proxy)!);
        const got = changesOf(mpBase.configs.get(proxy)!, mpDelta.changed, mpDelta.removed);
        assert.deepEqual(got.removed, want.removed, `${proxy}: removed resources`);
        const problems: string[] = [];
        for (const r of new Set([...want.changes.keys(), ...got.changes.keys()])) {
          const diffs = compareChanges(want.changes.get(r) ?? new Map(), got.changes.get(r) ?? new Map());
          for (const d of diffs.map((x) => `${proxy} ${r} ${x}`)) {
            const ignored = NOT_ABOUT_THE_PATCH.find((n) => n.path.test(d));
            if (ignored) used.add(ignored.path);
            else problems.push(d);
          }
        }
        assert.deepEqual(problems, [], `${scenario}: patched parts differ from istiod's`);
        total += want.changes.size + want.removed.length;
      }
      // A scenario that selects nobody (or a version that does not match) changes nothing on either side.
      if (!UNCHANGED.has(scenario)) assert.ok(total > 0, 'the scenario changes something in istiod');
      else assert.equal(total, 0);
    });
  }

  test('every NOT_ABOUT_THE_PATCH entry still matches a difference', () => {
    assert.deepEqual(
      NOT_ABOUT_THE_PATCH.filter((n) => !used.has(n.path)).map((n) => n.reason),
      [],
    );
  });
});

function deltaOf(base: ProxyJson, after: ProxyJson): { changed: Record<Section, JsonObject[]>; removed: Record<Section, string[]> } {
  const changed = { listeners: [], routes: [], clusters: [] } as Record<Section, JsonObject[]>;
  const removed = { listeners: [], routes: [], clusters: [] } as Record<Section, string[]>;
  for (const s of SECTIONS) {
    const before = new Map(base[s].map((r) => [nameOf(r), JSON.stringify(r)]));
    const now = new Set(after[s].map(nameOf));
    for (const r of after[s]) if (before.get(nameOf(r)) !== JSON.stringify(r)) changed[s].push(r);
    for (const n of before.keys()) if (!now.has(n)) removed[s].push(n);
  }
  return { changed, removed };
}
