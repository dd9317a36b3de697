/**
 * Telemetry held to istiod: for every scenario of testdata/scenarios/telemetry and every proxy
 * (two sidecars in `app`, one in `other`, an ingress gateway), the telemetry parts of each filter
 * chain meshpilot generates (HCM access_log, tracing, request_id_extension and istio.stats HTTP
 * filters; TCP istio.stats network filters and tcp_proxy access_log; each listener's own access_log
 * — see telemetry-compare.ts)
 * must equal the real istiod's (captured by `npx tsx scripts/istiod-telemetry-golden.ts`).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { JsonValue } from '@bufbuild/protobuf';
import { generatedToJson } from './istiod-compare.js';
import { diffTelemetry, telemetryFacets } from './telemetry-compare.js';
import { generateTelemetryScenario, TELEMETRY_DIR, TELEMETRY_PROXIES, TELEMETRY_SCENARIOS } from './telemetry-fixture.js';

/** Chains istiod builds that meshpilot does not (not telemetry's business: the parity test's). */
const NOT_BUILT: ReadonlyMap<RegExp, string> = new Map();

const istiodListeners = (scenario: string, proxy: string): JsonValue[] =>
  (JSON.parse(readFileSync(join(TELEMETRY_DIR, scenario, 'istiod', `${proxy}.json`), 'utf8')) as { listeners: JsonValue[] }).listeners;

describe('Telemetry: meshpilot equals istiod', () => {
  test('the corpus has at least 10 scenarios and istiod sends every compared part somewhere', () => {
    assert.ok(TELEMETRY_SCENARIOS.length >= 10, TELEMETRY_SCENARIOS.join(', '));
    const nonEmpty = new Set<string>();
    for (const scenario of TELEMETRY_SCENARIOS) {
      for (const proxy of Object.keys(TELEMETRY_PROXIES)) {
        for (const [path, value] of telemetryFacets(istiodListeners(scenario, proxy)))
          if (value !== '[]' && value !== 'none') nonEmpty.add(path.slice(path.lastIndexOf(' | ') + 3));
      }
    }
    assert.deepEqual([...nonEmpty].sort(), [
      'hcm access_log',
      'hcm request_id_extension',
      'hcm stats',
      'hcm tracing',
      'listener access_log',
      'tcp access_log',
      'tcp stats',
    ]);
  });

  test('the comparison sees a difference (istiod default vs meshpilot with zipkin tracing)', async () => {
    const mine = generatedToJson((await generateTelemetryScenario('tracing-zipkin')).get('httpbin')!);
    const d = diffTelemetry(telemetryFacets(istiodListeners('default', 'httpbin')), telemetryFacets(mine.listeners));
    assert.ok(
      d.differ.some((x) => x.path.endsWith('| hcm tracing')),
      'tracing difference not seen',
    );
  });

  for (const scenario of TELEMETRY_SCENARIOS) {
    test(scenario, async () => {
      const generated = await generateTelemetryScenario(scenario);
      const problems: string[] = [];
      let compared = 0;
      for (const proxy of Object.keys(TELEMETRY_PROXIES)) {
        const mine = generatedToJson(generated.get(proxy)!);
        const d = diffTelemetry(telemetryFacets(istiodListeners(scenario, proxy)), telemetryFacets(mine.listeners));
        compared += d.compared;
        for (const m of d.missing)
          if (![...NOT_BUILT.keys()].some((re) => re.test(m))) problems.push(`${proxy}: chain only istiod builds: ${m}`);
        for (const x of d.differ)
          problems.push(`${proxy}: ${x.path}\n    istiod:    ${x.istiod ?? 'absent'}\n    meshpilot: ${x.meshpilot ?? 'absent'}`);
      }
      assert.ok(compared > 0, 'nothing compared');
      assert.deepEqual(problems, [], `${problems.length} differences in ${scenario}:\n${problems.join('\n')}`);
    });
  }
});
