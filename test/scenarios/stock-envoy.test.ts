/**
 * Stock Envoy gets no Istio-proxy extension: a node carrying upstream Envoy 1.40's extension list
 * (testdata/envoy) receives no `istio.*` filter (metadata exchange, ALPN override, Telemetry's
 * istio.stats) in any listener, route, cluster or endpoint, while a node that lists no extensions
 * (istio-proxy, as istiod assumes) gets them — from the same PushContext, in either order, so the
 * shared caches cannot hand one's config to the other.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { create } from '@bufbuild/protobuf';
import { NodeSchema } from '../../src/gen/envoy/config/core/v3/base_pb.js';
import { parseProxy, type Proxy } from '../../src/model/proxy.js';
import type { PushContext } from '../../src/model/push-context.js';
import { registerEnvoyGenerators } from '../../src/networking/envoy-generators.js';
import { configCredentials } from '../../src/networking/gateway/config-credentials.js';
import { silentLogger } from '../../src/util/log.js';
import { GeneratorRegistry } from '../../src/xds/generator.js';
import { nodeFor } from '../../scripts/istiod-capture.js';
import { generateFor, loadScenario, type NodeSpec } from '../support/scenario.js';
import { stockEnvoyNodeFields } from '../support/stock-envoy.js';
import { BOOKINFO_DIR, BOOKINFO_PROXIES } from './bookinfo-fixture.js';
import { generatedToJson } from './istiod-compare.js';
import { scenarioConfigDir, scenarioMesh, TELEMETRY_PROXIES } from './telemetry-fixture.js';

const generators = registerEnvoyGenerators(new GeneratorRegistry(), {
  logger: silentLogger,
  credentials: (p) => configCredentials(p.config, silentLogger),
});

function proxy(spec: NodeSpec, stock: boolean): Proxy {
  const node = nodeFor(spec);
  if (stock) {
    const envoy = create(NodeSchema, stockEnvoyNodeFields());
    node.userAgentName = envoy.userAgentName;
    node.userAgentVersionType = envoy.userAgentVersionType;
    node.extensions = envoy.extensions;
  }
  const p = parseProxy(node);
  if (!p.ok) throw p.errors[0];
  return p.value;
}

const configText = (push: PushContext, p: Proxy): string => JSON.stringify(generatedToJson(generateFor(push, generators, p)));

/** Every `istio.*` extension name and Istio-proxy config type in a proxy's whole config. */
function istioExtensions(text: string): string[] {
  const found = new Set<string>();
  for (const m of text.matchAll(/"name":"(istio\.[^"]+)"/g)) found.add(m[1]!);
  for (const m of text.matchAll(/"@type":"type\.googleapis\.com\/(udpa\.type\.v1\.TypedStruct|stats\.PluginConfig|istio\.[^"]+)"/g))
    found.add(m[1]!);
  return [...found].sort();
}

/**
 * Each proxy as stock Envoy and as istio-proxy: alone (a fresh PushContext each), then both from
 * one PushContext in turn (stock, istio-proxy, stock): equal to alone, or a shared cache leaked.
 */
async function check(load: () => Promise<PushContext>, specs: Readonly<Record<string, NodeSpec>>, want: readonly string[]): Promise<void> {
  const seen = new Set<string>();
  const shared = await load();
  for (const [name, spec] of Object.entries(specs)) {
    const stockAlone = configText(await load(), proxy(spec, true));
    const istioAlone = configText(await load(), proxy(spec, false));
    assert.deepEqual(istioExtensions(stockAlone), [], `${name} (stock Envoy) got Istio-proxy extensions`);
    const istio = istioExtensions(istioAlone);
    assert.ok(istio.includes('istio.metadata_exchange'), `${name} (istio-proxy) got no metadata exchange: ${istio.join(', ')}`);
    for (const x of istio) seen.add(x);
    assert.ok(
      configText(shared, proxy(spec, true)) === stockAlone,
      `${name}: stock Envoy's config from a shared PushContext differs from its own`,
    );
    assert.ok(
      configText(shared, proxy(spec, false)) === istioAlone,
      `${name}: istio-proxy's config after stock Envoy's differs from its own (a cache key misses the extensions)`,
    );
    assert.ok(
      configText(shared, proxy(spec, true)) === stockAlone,
      `${name}: stock Envoy's config after istio-proxy's differs from its own (a cache key misses the extensions)`,
    );
  }
  for (const x of want) assert.ok(seen.has(x), `no istio-proxy node got ${x}: ${[...seen].join(', ')}`);
}

describe('stock Envoy gets no Istio-proxy extension; istio-proxy gets them', () => {
  test('bookinfo: every sidecar and the ingress gateway', async () => {
    await check(async () => (await loadScenario(join(BOOKINFO_DIR, 'config'))).push, BOOKINFO_PROXIES, [
      'istio.alpn',
      'istio.metadata_exchange',
      'udpa.type.v1.TypedStruct',
    ]);
  });

  test('telemetry: Prometheus metrics (istio.stats) on every proxy', async () => {
    const dir = scenarioConfigDir('default-providers');
    try {
      await check(async () => (await loadScenario(dir, scenarioMesh('default-providers'))).push, TELEMETRY_PROXIES, [
        'istio.stats',
        'stats.PluginConfig',
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
