/**
 * Captures the real istiod's Envoy config for the EnvoyFilter corpus, the oracle that
 * test/scenarios/envoyfilter/envoyfilter-golden.test.ts holds meshpilot's patches to.
 *
 *   npx tsx scripts/istiod-golden-envoyfilter.ts [scenario …]
 *
 * For the base mesh and then each scenario (base + its EnvoyFilter, one directory as istiod's file
 * mode reads it), istiod (/work/shared/istiod/run, the build of scripts/istiod-capture.ts) is started
 * and the `web` sidecar and the ingress gateway subscribe as Envoy does (see istiod-capture.ts).
 * Output: testdata/scenarios/envoyfilter/base/istiod/<proxy>.json (listeners, routes, clusters in
 * full) and <scenario>/istiod/<proxy>.json with only what the scenario changed against base
 * (resources changed or added in full, names removed). Endpoints are not kept (no patch reaches EDS).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fromBinary, type JsonObject } from '@bufbuild/protobuf';
import { xdsJsonRegistry } from '../src/model/json-registry.js';
import {
  EF_BASE,
  EF_DIR,
  EF_PROXIES,
  resourceDelta,
  scenarioConfigDir,
  scenarioNames,
  type ProxyJson,
} from '../test/scenarios/envoyfilter/envoyfilter-fixture.js';
import { SCHEMA_BY_TYPE, TYPE } from '../test/support/xds-resources.js';
import {
  byName,
  capture,
  chosenScenarios,
  configObjects,
  ISTIOD_MODULE,
  PROXY_ISTIO_VERSION,
  startIstiod,
  toOpaqueJson,
} from './istiod-capture.js';

const base = xdsJsonRegistry();
const opaque = new Set<string>();

/** istiod's output for every proxy on one config directory. */
async function captureAll(dir: string): Promise<{ configs: Map<string, ProxyJson>; warnings: string[] }> {
  const istiod = await startIstiod(dir, configObjects(dir).istio);
  const configs = new Map<string, ProxyJson>();
  try {
    for (const [name, spec] of Object.entries(EF_PROXIES)) {
      const { byType } = await capture(istiod.grpcAddr, spec);
      const section = (t: typeof TYPE.LDS | typeof TYPE.RDS | typeof TYPE.CDS): JsonObject[] => {
        const schema = SCHEMA_BY_TYPE[t];
        return (byType.get(t)?.resources ?? [])
          .map((a) => toOpaqueJson(schema, fromBinary(schema, a.value) as never, base, opaque) as JsonObject)
          .sort(byName);
      };
      configs.set(name, { listeners: section(TYPE.LDS), routes: section(TYPE.RDS), clusters: section(TYPE.CDS) });
    }
  } finally {
    await istiod.stop();
  }
  return { configs, warnings: istiod.log.filter((l) => /\twarn\t|\terror\t/.test(l)) };
}

async function main(): Promise<void> {
  const started = Date.now();
  const source = { istiod: ISTIOD_MODULE, ISTIO_VERSION: PROXY_ISTIO_VERSION };
  const b = scenarioConfigDir(undefined);
  const baseOut = await captureAll(b.dir).finally(b.cleanup);
  mkdirSync(join(EF_BASE, 'istiod'), { recursive: true });
  for (const [proxy, json] of baseOut.configs) {
    writeFileSync(
      join(EF_BASE, 'istiod', `${proxy}.json`),
      `${JSON.stringify({ source: { ...source, node: EF_PROXIES[proxy]?.id }, ...json }, undefined, 2)}\n`,
    );
  }
  for (const scenario of chosenScenarios(scenarioNames())) {
    const s = scenarioConfigDir(scenario);
    const out = await captureAll(s.dir).finally(s.cleanup);
    mkdirSync(join(EF_DIR, scenario, 'istiod'), { recursive: true });
    const summary: string[] = [];
    for (const [proxy, json] of out.configs) {
      const delta = resourceDelta(baseOut.configs.get(proxy)!, json);
      const n = (x: Record<string, unknown[]>): number => Object.values(x).reduce((a, v) => a + v.length, 0);
      summary.push(`${proxy}: ${n(delta.changed)} changed/added, ${n(delta.removed)} removed`);
      const yaml = readFileSync(join(EF_DIR, scenario, 'config', 'envoyfilter.yaml'), 'utf8');
      writeFileSync(
        join(EF_DIR, scenario, 'istiod', `${proxy}.json`),
        `${JSON.stringify({ source: { ...source, node: EF_PROXIES[proxy]?.id, envoyFilterBytes: yaml.length }, ...delta }, undefined, 2)}\n`,
      );
    }
    console.log(`${scenario}: ${summary.join('; ')}`);
    for (const w of out.warnings.filter((l) => /envoyfilter|EnvoyFilter|patch/i.test(l))) console.log(`  istiod: ${w}`);
  }
  console.log(`opaque Any types (kept as {"@type"}): ${[...opaque].sort().join(', ') || 'none'}`);
  console.log(`capture took ${Date.now() - started} ms`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
