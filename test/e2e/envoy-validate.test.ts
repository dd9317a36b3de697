/**
 * Every committed scenario's output, as meshpilot would send it to the pinned upstream Envoy, is
 * accepted by that Envoy: each proxy's whole config (listeners with their routes, clusters,
 * endpoints, gateway secrets) is loaded by `envoy --mode validate`, which builds every resource
 * through Envoy's own factories and validation. The proxies declare what upstream Envoy declares
 * (its Node.extensions and user agent, testdata/envoy/node-extensions-<version>.json), as a stock
 * Envoy sidecar or gateway does on connecting; the same proxy as istio-proxy is refused.
 */
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { MeshConfig } from '../../src/config/mesh/mesh-config.js';
import { registerEnvoyGenerators } from '../../src/networking/envoy-generators.js';
import { configCredentials } from '../../src/networking/gateway/config-credentials.js';
import { silentLogger } from '../../src/util/log.js';
import { GeneratorRegistry } from '../../src/xds/generator.js';
import { BOOKINFO_DIR, BOOKINFO_PROXIES } from '../scenarios/bookinfo-fixture.js';
import { DNS_LISTENERS_CONFIG_DIR, DNS_LISTENERS_PROXIES } from '../scenarios/dns-listeners-fixture.js';
import {
  EF_PROXIES,
  scenarioConfigDir as envoyFilterDir,
  scenarioNames as envoyFilterScenarios,
} from '../scenarios/envoyfilter/envoyfilter-fixture.js';
import { GATEWAY_PROXY, scenarioNames as gatewayApiScenarios, writeMeshpilotConfig } from '../scenarios/gateway-api-fixture.js';
import { TELEMETRY_PROXIES, TELEMETRY_SCENARIOS, scenarioConfigDir as telemetryDir, scenarioMesh } from '../scenarios/telemetry-fixture.js';
import { WASM_DIR, WASM_PROXIES, WASM_SCENARIOS } from '../scenarios/wasm-fixture.js';
import { envoySkipReason } from '../support/envoy.js';
import { envoyValidate, validationBootstrap } from '../support/envoy-validate.js';
import { generateFor, loadScenario, proxyFor, type GeneratedConfig, type NodeSpec } from '../support/scenario.js';
import { stockEnvoyNodeFields } from '../support/stock-envoy.js';

const skip = envoySkipReason();
const stock = stockEnvoyNodeFields();

interface Case {
  /** corpus/scenario */
  readonly name: string;
  /** Writes the scenario's config directory; returns it and how to clean it up. */
  readonly dir: () => { dir: string; cleanup: () => void };
  readonly proxies: Readonly<Record<string, NodeSpec>>;
  readonly mesh?: MeshConfig;
}

const temp = (prefix: string, fill: (dir: string) => void): { dir: string; cleanup: () => void } => {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  fill(dir);
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
};

const CASES: readonly Case[] = [
  { name: 'bookinfo', dir: () => ({ dir: join(BOOKINFO_DIR, 'config'), cleanup: () => {} }), proxies: BOOKINFO_PROXIES },
  // Listeners on allocated addresses, sniffed ports, a dual-stack sidecar's additional addresses.
  { name: 'dns-listeners', dir: () => ({ dir: DNS_LISTENERS_CONFIG_DIR, cleanup: () => {} }), proxies: DNS_LISTENERS_PROXIES },
  ...TELEMETRY_SCENARIOS.map((s): Case => ({
    name: `telemetry/${s}`,
    dir: () => {
      const dir = telemetryDir(s);
      return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
    },
    proxies: TELEMETRY_PROXIES,
    mesh: scenarioMesh(s),
  })),
  { name: 'envoyfilter/base', dir: () => envoyFilterDir(undefined), proxies: EF_PROXIES },
  ...envoyFilterScenarios().map((s): Case => ({ name: `envoyfilter/${s}`, dir: () => envoyFilterDir(s), proxies: EF_PROXIES })),
  ...gatewayApiScenarios().map((s): Case => ({
    name: `gateway-api/${s}`,
    dir: () => temp('gwapi-', (d) => writeMeshpilotConfig(s, d)),
    proxies: { gateway: GATEWAY_PROXY },
  })),
  ...WASM_SCENARIOS.map((s): Case => ({
    name: `wasm/${s}`,
    dir: () =>
      temp('wasm-', (d) => {
        cpSync(join(WASM_DIR, 'base'), d, { recursive: true });
        cpSync(join(WASM_DIR, 'plugins', `${s}.yaml`), join(d, `${s}.yaml`));
      }),
    proxies: WASM_PROXIES,
  })),
];

/** Each proxy of the case as stock Envoy (`declares` its extensions), or as istio-proxy (declares nothing). */
async function generate(c: Case, asStockEnvoy = true): Promise<Map<string, GeneratedConfig>> {
  const { dir, cleanup } = c.dir();
  try {
    const { push } = await loadScenario(dir, ...(c.mesh ? [c.mesh] : []));
    const generators = registerEnvoyGenerators(new GeneratorRegistry(), {
      logger: silentLogger,
      credentials: (p) => configCredentials(p.config, silentLogger),
    });
    return new Map(
      Object.entries(c.proxies).map(([name, spec]) => [
        name,
        generateFor(push, generators, proxyFor({ ...spec, ...(asStockEnvoy ? { declares: stock } : {}) })),
      ]),
    );
  } finally {
    cleanup();
  }
}

describe('upstream Envoy accepts every scenario meshpilot generates for it', { skip }, () => {
  it('fails on a resource Envoy cannot load, naming it (the check can fail)', async () => {
    const bad: GeneratedConfig = { listeners: [], routes: [], clusters: [], endpoints: [], secrets: [], resources: new Map() };
    const bootstrap = validationBootstrap('sidecar~10.0.0.1~a.ns~ns.svc.cluster.local', bad);
    const listeners = [
      {
        name: 'planted',
        address: { socketAddress: { address: '0.0.0.0', portValue: 1 } },
        filterChains: [
          { filters: [{ name: 'istio.metadata_exchange', typedConfig: { '@type': 'type.googleapis.com/google.protobuf.Empty' } }] },
        ],
      },
    ];
    const r = await envoyValidate('planted', bad, {
      ...bootstrap,
      staticResources: { ...(bootstrap.staticResources as object), listeners },
    });
    assert.equal(r.ok, false, r.output);
    assert.match(r.output, /istio\.metadata_exchange|google\.protobuf\.Empty/);
  });

  it("the same bookinfo sidecar generated as istio-proxy is refused: stock Envoy cannot load Istio's filters", async () => {
    const configs = await generate(CASES[0]!, false);
    const r = await envoyValidate(BOOKINFO_PROXIES.productpage!.id, configs.get('productpage')!);
    assert.equal(r.ok, false, 'stock Envoy accepted the istio-proxy config: the checks below would prove nothing');
    assert.match(r.output, /istio\.|udpa\.type\.v1\.TypedStruct|io\.istio/);
  });

  for (const c of CASES) {
    describe(c.name, () => {
      let configs: Map<string, GeneratedConfig>;
      before(async () => (configs = await generate(c)));
      after(() => configs?.clear());
      for (const [proxy, spec] of Object.entries(c.proxies)) {
        it(`${proxy} (${spec.id.split('~')[0]})`, async () => {
          const config = configs.get(proxy)!;
          assert.ok(config.listeners.length + config.clusters.length > 0, 'the proxy got a config');
          const r = await envoyValidate(spec.id, config);
          assert.ok(r.ok, `upstream Envoy rejects ${c.name} for ${proxy}:\n${r.output.slice(0, 3000)}`);
        });
      }
    });
  }
});
