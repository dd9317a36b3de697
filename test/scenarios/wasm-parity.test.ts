/**
 * WasmPlugin parity with istiod: for each scenario (phases, priority, selector, match, config), every
 * proxy's HCM filter lists (Wasm ECDS filters placed among jwt_authn, RBAC, fault, CORS, router) and
 * the ECDS resources those filters name must equal what the real istiod sent. istiod's output is
 * committed (testdata/scenarios/wasm/istiod, captured by `npx tsx scripts/istiod-wasm-golden.ts`
 * against a real kube-apiserver), so this runs without istiod or Kubernetes.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { JsonValue } from '@bufbuild/protobuf';
import { WASM_RESOURCE_PREFIX } from '../../src/networking/extension/wasm-plugins.js';
import { generateWasmScenario, wasmScenarioDigest, WASM_DIR, WASM_PROXIES, WASM_SCENARIOS, type WasmView } from './wasm-fixture.js';

/** The filters compared besides the Wasm ones (istio.stats is telemetry's, compared there). */
const COMPARED = new Set([
  'istio.metadata_exchange',
  'istio.alpn',
  'envoy.filters.http.grpc_stats',
  'envoy.filters.http.jwt_authn',
  'envoy.filters.http.rbac',
  'envoy.filters.http.fault',
  'envoy.filters.http.cors',
  'envoy.filters.http.router',
]);
/** Differs by source: a Kubernetes resourceVersion in istiod, a content hash in meshpilot's file mode. */
const RESOURCE_VERSION_ENV = 'ISTIO_META_WASM_PLUGIN_RESOURCE_VERSION';

const isWasm = (f: JsonValue): boolean =>
  typeof f === 'object' && f !== null && !Array.isArray(f) && typeof f.name === 'string' && f.name.startsWith(WASM_RESOURCE_PREFIX);

function normalise(v: WasmView): WasmView {
  const hcms = Object.fromEntries(
    Object.entries(v.hcms).map(([k, fs]) => [k, fs.filter((f) => isWasm(f) || (typeof f === 'string' && COMPARED.has(f)))]),
  );
  const ecds = JSON.parse(
    JSON.stringify(v.ecds, (k, x: unknown) => (k === RESOURCE_VERSION_ENV ? '<resourceVersion>' : x)),
  ) as WasmView['ecds'];
  return { hcms, ecds };
}

interface Golden {
  readonly source: { readonly configSha256: string };
  readonly proxies: Record<string, WasmView>;
}

describe('WasmPlugin: meshpilot equals istiod', () => {
  test('there are at least 4 scenarios, each placing Wasm filters on some proxy', () => {
    assert.ok(WASM_SCENARIOS.length >= 4, `${WASM_SCENARIOS.length} scenarios`);
  });
  for (const scenario of WASM_SCENARIOS) {
    test(scenario, async () => {
      const golden = JSON.parse(readFileSync(join(WASM_DIR, 'istiod', `${scenario}.json`), 'utf8')) as Golden;
      assert.equal(
        golden.source.configSha256,
        wasmScenarioDigest(scenario),
        `istiod golden for ${scenario} is stale: run npx tsx scripts/istiod-wasm-golden.ts ${scenario}`,
      );
      const ours = await generateWasmScenario(scenario);
      let wasmFilters = 0;
      for (const proxy of Object.keys(WASM_PROXIES)) {
        const want = normalise(golden.proxies[proxy]!);
        const got = normalise(ours.get(proxy)!);
        wasmFilters += Object.values(want.hcms).flat().filter(isWasm).length;
        assert.deepEqual(got.hcms, want.hcms, `${scenario}/${proxy}: HCM filters`);
        assert.deepEqual(got.ecds, want.ecds, `${scenario}/${proxy}: ECDS`);
      }
      assert.ok(wasmFilters > 0, `${scenario}: istiod placed no Wasm filter (the scenario tests nothing)`);
    });
  }
});
